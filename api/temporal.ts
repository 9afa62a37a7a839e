import {
  WithStartWorkflowOperation,
  isGrpcServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { SearchAttributePair, UpdateDefinition, Workflow } from '@temporalio/common';
import type { Config } from '../config';
import type { Caller, Mode, TransactionType } from '../domain/types';
import { workflowIds } from '../workflows/ids';
import { SearchAttributes, type DepositOutcome } from '../workflows/shared';
import { AppError } from './errors';

/**
 * Runs a payment workflow and waits for its result, at most `timeoutMs`. The workflow id is the
 * payment's identity: a second caller with the same id (a retried request) attaches to the
 * running workflow, or reads the result of the finished one, instead of starting another.
 */
export async function runPaymentWorkflow<W extends Workflow>(
  client: Client,
  workflow: W,
  options: WorkflowStartOptions<W> & { timeoutMs: number },
): Promise<Awaited<ReturnType<W>>> {
  const { timeoutMs, ...start } = options;
  const run = async (): Promise<Awaited<ReturnType<W>>> => {
    try {
      const handle = await client.workflow.start(workflow, {
        ...start,
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      } as WorkflowStartOptions<W>);
      return (await handle.result()) as Awaited<ReturnType<W>>;
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) {
        return (await client.workflow.getHandle(start.workflowId).result()) as Awaited<
          ReturnType<W>
        >;
      }
      throw error;
    }
  };
  return withDeadline(run(), timeoutMs);
}

/** Bounds a wait on Temporal by the request deadline: 504, and the payment goes on. */
export async function withDeadline<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AppError('timeout')), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The search attributes every payment workflow starts with; the workflow moves PaymentStatus. */
export function paymentSearchAttributes(
  caller: Caller,
  type: TransactionType,
  walletIds: string[],
): SearchAttributePair[] {
  return [
    { key: SearchAttributes.ApplicationId, value: caller.applicationId },
    { key: SearchAttributes.PaymentMode, value: caller.mode },
    { key: SearchAttributes.WalletId, value: walletIds },
    { key: SearchAttributes.PaymentType, value: type },
    { key: SearchAttributes.PaymentStatus, value: 'pending' },
  ];
}

/** The deposit workflows a provider's notification or a sync can reach. */
export type DepositKind = 'deposit' | 'cardDeposit';

/**
 * Starts a payment workflow and sends it its first update in one call (update-with-start,
 * `USE_EXISTING`: a retried request attaches to the running workflow), with the payment search
 * attributes; answers what the update answered, waiting at most the request deadline.
 */
export async function startPaymentWithUpdate<W extends Workflow, R>(
  deps: { temporal: Client; config: Config },
  workflow: W,
  options: {
    workflowId: string;
    args: Parameters<W>;
    caller: Caller;
    type: TransactionType;
    walletIds: string[];
    update: UpdateDefinition<R, [], string>;
  },
): Promise<R> {
  const start = new WithStartWorkflowOperation(workflow, {
    workflowId: options.workflowId,
    taskQueue: deps.config.temporal.taskQueue,
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: options.args,
    typedSearchAttributes: paymentSearchAttributes(options.caller, options.type, options.walletIds),
    // The generic args type is a conditional tuple that TypeScript cannot match to Parameters<W>.
  } as unknown as ConstructorParameters<typeof WithStartWorkflowOperation<W>>[1]);
  return withDeadline(
    deps.temporal.workflow.executeUpdateWithStart(options.update, {
      startWorkflowOperation: start,
    }),
    deps.config.api.requestTimeoutMs,
  );
}

/** The mode of a deposit known only to Temporal (its record was never written), or null. */
export async function depositMode(
  temporal: Client,
  transactionId: string,
  kind: DepositKind = 'deposit',
): Promise<Mode | null> {
  try {
    const described = await temporal.workflow
      .getHandle(workflowIds[kind](transactionId))
      .describe();
    const mode = described.typedSearchAttributes.get(SearchAttributes.PaymentMode);
    return mode === 'test' || mode === 'live' ? mode : null;
  } catch {
    return null;
  }
}

export type DepositHandle = ReturnType<Client['workflow']['getHandle']>;

/** Runs an update on a deposit's workflow; null when that workflow is not running any more. */
export async function updateDeposit(
  temporal: Client,
  transactionId: string,
  timeoutMs: number,
  run: (handle: DepositHandle) => Promise<DepositOutcome>,
  kind: DepositKind = 'deposit',
): Promise<DepositOutcome | null> {
  const handle = temporal.workflow.getHandle(workflowIds[kind](transactionId));
  try {
    return await withDeadline(run(handle), timeoutMs);
  } catch (error) {
    // An update on a workflow that has completed is refused; the record tells its outcome.
    if (isNotFound(error)) return null;
    throw error;
  }
}

/** gRPC NOT_FOUND: some calls (a history fetch, an update) are not wrapped by the SDK. */
const GRPC_NOT_FOUND = 5;

/** Whether Temporal answered that the workflow (or the running workflow) does not exist. */
export function isNotFound(error: unknown): boolean {
  if (error instanceof WorkflowNotFoundError) return true;
  if (isGrpcServiceError(error)) return Number(error.code) === GRPC_NOT_FOUND;
  const cause = (error as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== error && isNotFound(cause);
}
