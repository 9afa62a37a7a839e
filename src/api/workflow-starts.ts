import {
  WithStartWorkflowOperation,
  isGrpcServiceError,
  WorkflowExecutionAlreadyStartedError,
  type Client,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { UpdateDefinition, Workflow } from '@temporalio/common';
import type { Config } from '../config';
import type { Caller, TransactionType } from '../domain/types';
import { SearchAttributes, paymentSearchAttributes } from '../workflows/shared';

export { paymentSearchAttributes };
import { AppError } from './errors';
import {
  eagerFallbacks,
  eagerStarts,
  paymentsStarted,
  settledLocally,
} from '../observability/metrics';
import { GRPC_UNAVAILABLE, NEVER_SENT } from '../temporal/connection';
import { LOCAL_SETTLEMENT_MS, listenForSettlement } from '../temporal/settlements';

/**
 * Runs a payment workflow and waits at most `timeoutMs` for its result. The workflow id is the
 * payment's identity: a retried request attaches to the running workflow, or reads the finished
 * one's result, instead of starting another. With an in-process worker the start is eager.
 */
export async function runPaymentWorkflow<W extends Workflow>(
  deps: { temporal: Client; eagerTemporal?: () => Client | null },
  workflow: W,
  options: WorkflowStartOptions<W> & {
    timeoutMs: number;
    /**
     * Which results this process's worker may report at once (src/temporal/settlements.ts): only
     * those that a rerun of the workflow's task would give again (a committed, idempotent step).
     */
    answerLocally?: (result: Awaited<ReturnType<W>>) => boolean;
  },
): Promise<Awaited<ReturnType<W>>> {
  const { timeoutMs, answerLocally, ...start } = options;
  const client = deps.temporal;
  const type = paymentType(start.typedSearchAttributes);
  paymentsStarted.inc({ type });
  const run = async (): Promise<Awaited<ReturnType<W>>> => {
    const startOptions = {
      ...start,
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    } as WorkflowStartOptions<W>;
    // Without a run id (the payment finished already: its id is not reused), the latest run.
    let runId: string | undefined;
    try {
      const eager = await startAndListen(deps, workflow, startOptions, type, answerLocally);
      if (eager?.answered) return eager.answered.result;
      runId =
        eager?.runId ?? (await client.workflow.start(workflow, startOptions)).firstExecutionRunId;
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    return (await startedResult(
      client.workflow.getHandle(start.workflowId, runId).result(),
    )) as Awaited<ReturnType<W>>;
  };
  return withDeadline(run(), timeoutMs);
}

/**
 * Starts the payment eagerly on this process's worker and, when `answerLocally` says so, answers
 * with the settlement that worker reports (src/temporal/settlements.ts), `answered` set, instead of
 * asking the server. Null without such a worker or if the start failed; else the run to wait on.
 */
async function startAndListen<W extends Workflow, R>(
  deps: { eagerTemporal?: () => Client | null },
  workflow: W,
  options: WorkflowStartOptions<W>,
  type: string,
  answerLocally: ((result: R) => boolean) | undefined,
): Promise<{ runId: string; answered?: { result: R } } | null> {
  const eagerClient = deps.eagerTemporal?.() ?? null;
  // Listening before the start, so that a settlement that comes first is not missed.
  const settlement = eagerClient && answerLocally ? listenForSettlement(options.workflowId) : null;
  try {
    const eager = await eagerStart(eagerClient, workflow, options);
    if (!eagerClient) return eager;
    if (!eager?.eagerlyStarted) {
      eagerFallbacks.inc({ type, reason: eager ? 'no_slot' : 'start_failed' });
      return eager;
    }
    eagerStarts.inc({ type });
    // This process's worker runs the workflow's first task: it says how the payment settled.
    const local = (await settlement?.within(LOCAL_SETTLEMENT_MS)) as R | undefined;
    if (local === undefined || !answerLocally?.(local)) {
      if (answerLocally) {
        eagerFallbacks.inc({ type, reason: local === undefined ? 'settlement_wait' : 'not_local' });
      }
      return eager;
    }
    settledLocally.inc({ type });
    return { ...eager, answered: { result: local } };
  } finally {
    settlement?.stop();
  }
}

/** How long an eager start may take before the regular client tries (Temporal may be down). */
const EAGER_START_DEADLINE_MS = 1_000;

/**
 * Starts a workflow with `requestEagerStart` on the in-process worker's connection: the server
 * hands its first task straight to that worker (docs/architecture.md, The transfer path). Null
 * without it, or on failure or timeout: the caller's regular start then attaches by workflow id.
 */
async function eagerStart<W extends Workflow>(
  eager: Client | null,
  workflow: W,
  options: WorkflowStartOptions<W>,
): Promise<{ runId: string; eagerlyStarted: boolean } | null> {
  if (!eager) return null;
  try {
    const handle = await eager.connection.withDeadline(Date.now() + EAGER_START_DEADLINE_MS, () =>
      eager.workflow.start(workflow, { ...options, requestEagerStart: true }),
    );
    return { runId: handle.firstExecutionRunId, eagerlyStarted: handle.eagerlyStarted };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) throw error;
    return null;
  }
}

/** The payment type among a workflow's start search attributes (paymentSearchAttributes). */
function paymentType(attributes: WorkflowStartOptions['typedSearchAttributes']): string {
  const pairs = Array.isArray(attributes) ? attributes : [];
  const pair = pairs.find((p) => p.key.name === SearchAttributes.PaymentType.name);
  return typeof pair?.value === 'string' ? pair.value : 'unknown';
}

/** The result of a workflow that has started: Temporal lost on the way is a 504, it goes on. */
async function startedResult<T>(result: Promise<T>): Promise<T> {
  try {
    return await result;
  } catch (error) {
    if (isTemporalUnreachable(error)) throw new AppError('timeout', null, { cause: error });
    throw error;
  }
}

/**
 * Bounds a wait on Temporal by the request deadline: 504, and the payment goes on. A Temporal
 * that could not be reached at all (the call never left this process) is a 503: nothing
 * started. Lost on the way (the server died during the call) is a 504: it may have started.
 */
export async function withDeadline<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AppError('timeout')), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } catch (error) {
    if (isTemporalUnreachable(error)) {
      const code = neverSent(error) ? 'unavailable' : 'timeout';
      throw new AppError(code, null, { cause: error });
    }
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

const GRPC_DEADLINE_EXCEEDED = 4;

function* causes(error: unknown): Generator<{ code?: unknown; details?: unknown }> {
  const seen = new Set<unknown>();
  for (let e = error; e && typeof e === 'object' && !seen.has(e);) {
    seen.add(e);
    yield e;
    e = (e as { cause?: unknown }).cause;
  }
}

/** Whether Temporal did not answer: gRPC UNAVAILABLE or DEADLINE_EXCEEDED in the causes. */
export function isTemporalUnreachable(error: unknown): boolean {
  for (const e of causes(error)) {
    if (!isGrpcServiceError(e)) continue;
    const code = Number(e.code);
    if (code === GRPC_UNAVAILABLE || code === GRPC_DEADLINE_EXCEEDED) return true;
  }
  return false;
}

/** gRPC refused the call before sending it: no connection to the server could be made. */
function neverSent(error: unknown): boolean {
  for (const e of causes(error)) {
    if (!isGrpcServiceError(e)) continue;
    return Number(e.code) === GRPC_UNAVAILABLE && NEVER_SENT.test(e.details);
  }
  return false;
}

/**
 * Starts a payment workflow and sends it its first update in one call (update-with-start,
 * `USE_EXISTING`: a retried request attaches to the running workflow), with the payment search
 * attributes; answers what the update answered, waiting at most the request deadline.
 */
export async function startPaymentWithUpdate<W extends Workflow, R>(
  deps: { temporal: Client; config: Config; eagerTemporal?: () => Client | null },
  workflow: W,
  options: {
    workflowId: string;
    args: Parameters<W>;
    caller: Caller;
    type: TransactionType;
    walletIds: string[];
    update: UpdateDefinition<R, [], string>;
    /**
     * Which answers of the update this process's worker may report at once, the workflow
     * started eagerly on it without the update (see `runPaymentWorkflow`): only those that a
     * rerun of the workflow's task would give again. Any other goes the update's way.
     */
    answerLocally?: (result: R) => boolean;
  },
): Promise<R> {
  const startOptions = {
    workflowId: options.workflowId,
    taskQueue: deps.config.temporal.taskQueue,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: options.args,
    typedSearchAttributes: paymentSearchAttributes(options.caller, options.type, options.walletIds),
    // The generic args type is a conditional tuple that TypeScript cannot match to Parameters<W>.
  } as unknown as WorkflowStartOptions<W>;
  paymentsStarted.inc({ type: options.type });
  const run = async (): Promise<R> => {
    if (options.answerLocally) {
      const eager = await startAndListen(
        deps,
        workflow,
        startOptions,
        options.type,
        options.answerLocally,
      ).catch((error: unknown) => {
        // Attached to a workflow that exists: the update below reaches it.
        if (error instanceof WorkflowExecutionAlreadyStartedError) return null;
        throw error;
      });
      if (eager?.answered) return eager.answered.result;
    }
    // Update-with-start attaches to the workflow started above, if it was.
    const start = new WithStartWorkflowOperation(
      workflow,
      startOptions as ConstructorParameters<typeof WithStartWorkflowOperation<W>>[1],
    );
    return deps.temporal.workflow.executeUpdateWithStart(options.update, {
      startWorkflowOperation: start,
    });
  };
  return withDeadline(run(), deps.config.api.requestTimeoutMs);
}
