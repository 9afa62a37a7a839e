import {
  ApplicationFailure,
  ActivityFailure,
  continueAsNew,
  executeChild,
  patched,
  proxyActivities,
  setHandler,
  uuid4,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { Activities } from './activities-types';
import { paymentClock } from './clock';
import { workflowIds } from './ids';
import {
  RECON_EXCEPTION_DUE_PATCH,
  RECON_EXCEPTION_STALE_MS,
  reconExceptionResolved,
  reconExceptionWake,
  type ReconExceptionInput,
  type ReconRunInput,
} from './recon-shared';
import type { Mode } from '../domain/types';
import { RECON_CHUNKS_PER_HISTORY } from '../domain/recon';
import { activityPresets } from './retry';

/** Loading a chunk asks the provider; matching is one long transaction: both heartbeat. */
const books = proxyActivities<Activities>(activityPresets.reconBooks);
const steps = proxyActivities<Activities>(activityPresets.reconSteps);
const quick = proxyActivities<Activities>(activityPresets.ledger);

/** How many of the schedule's runs go at once. */
const DAILY_RUNS_AT_ONCE = 4;

/**
 * One provider reconciliation run (docs/operations.md, Reconcile with a provider): loads the
 * provider's records of the window chunk by chunk (continuing as new to keep its history small),
 * then matches them and ends the run; a refusal no retry changes ends it `failed`.
 */
export async function reconciliationRunWorkflow(input: ReconRunInput): Promise<void> {
  let cursor = input.cursor ?? null;
  let loaded = input.loaded ?? 0;
  try {
    for (let chunk = 0; ; chunk++) {
      if (chunk === RECON_CHUNKS_PER_HISTORY) {
        await continueAsNew<typeof reconciliationRunWorkflow>({
          runId: input.runId,
          cursor,
          loaded,
        });
      }
      const next = await books.loadReconRecords({ runId: input.runId, cursor, loaded });
      cursor = next.cursor;
      loaded = next.loaded;
      if (cursor === null) break;
    }
  } catch (error) {
    const failure = permanentFailure(error);
    if (failure === null) throw error;
    await quick.failReconRun({ runId: input.runId, failure });
    return;
  }
  await steps.matchReconRun({ runId: input.runId });
  for (let after: string | null = null; ;) {
    ({ after } = await steps.startReconExceptionTimers({ runId: input.runId, after }));
    if (after === null) break;
  }
}

/** The message of an activity's non-retryable failure (the run's `failure`), else null. */
function permanentFailure(error: unknown): string | null {
  if (!(error instanceof ActivityFailure)) return null;
  const cause = error.cause;
  if (cause instanceof ApplicationFailure && cause.nonRetryable) return cause.message;
  return null;
}

/**
 * An exception's stale timer: 72 hours after it opened, still open, it sends
 * `reconciliation.exception.stale` once; resolving it ends the timer. A Test Mode exception's
 * timer is a payment clock's, so the test clock's update moves it (docs/operations.md).
 */
export async function reconExceptionWorkflow(input: ReconExceptionInput): Promise<boolean> {
  if (input.mode && input.dueAt && patched(RECON_EXCEPTION_DUE_PATCH)) {
    return staleWhenDue(input.exceptionId, input.mode, Date.parse(input.dueAt));
  }
  const state = await quick.findReconExceptionState({ exceptionId: input.exceptionId });
  if (!state?.open) return false;
  let resolved = false;
  setHandler(reconExceptionResolved, () => {
    resolved = true;
  });
  const clock = paymentClock(state.mode);
  if (await clock.wait(() => resolved, RECON_EXCEPTION_STALE_MS)) return false;
  return quick.markReconExceptionStale({ exceptionId: input.exceptionId, eventId: uuid4() });
}

/**
 * The timer started delayed until `due`, which runs no task before it unless woken (by the test
 * clock's advance or a resolution): then it waits out what is left on the payment clock.
 */
async function staleWhenDue(exceptionId: string, mode: Mode, due: number): Promise<boolean> {
  let resolved = false;
  setHandler(reconExceptionResolved, () => {
    resolved = true;
  });
  setHandler(reconExceptionWake, () => undefined);
  if (resolved) return false;
  if (Date.now() < due) {
    const clock = paymentClock(mode, { waitsFromStart: true });
    // An advance in this first task may have passed the due time already: a moment is left.
    if (await clock.wait(() => resolved, Math.max(due - clock.now(), 1))) return false;
  }
  return quick.markReconExceptionStale({ exceptionId, eventId: uuid4() });
}

/**
 * The daily schedule's workflow: the previous UTC day's run of each application, mode and
 * provider, written once, each then run as a child workflow, a few at a time.
 */
export async function dailyReconciliationWorkflow(): Promise<void> {
  const runIds = await quick.scheduleDailyReconRuns({ firedAt: new Date().toISOString() });
  let next = 0;
  async function lane(): Promise<void> {
    while (next < runIds.length) {
      const runId = runIds[next++]!;
      try {
        await executeChild(reconciliationRunWorkflow, {
          workflowId: workflowIds.reconRun(runId),
          args: [{ runId }],
        });
      } catch (error) {
        // Started already (by an earlier attempt of this day): it runs on its own.
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(DAILY_RUNS_AT_ONCE, runIds.length) }, lane));
}
