import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  type Client,
} from '@temporalio/client';
import type { Mode } from '../domain/types';
import { workflowIds } from '../workflows/ids';
import {
  reconExceptionInput,
  reconExceptionResolved,
  reconExceptionWake,
  type ReconExceptionInput,
  type ReconRunInput,
} from '../workflows/recon-shared';

/**
 * Starts the workflow of a provider reconciliation run, `recon-run-<runId>` (on the maintenance
 * queue); one already started, running or closed, is left alone.
 */
export async function startReconciliationRun(
  client: Client,
  taskQueue: string,
  runId: string,
): Promise<void> {
  const input: ReconRunInput = { runId };
  await startOnce(() =>
    client.workflow.start('reconciliationRunWorkflow', {
      workflowId: workflowIds.reconRun(runId),
      taskQueue,
      args: [input],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    }),
  );
}

/** What an exception's stale timer is started from. */
export type ReconExceptionTimer = { id: string; mode: Mode; createdAt: string };

/** The options every start of `recon-exception-<id>` shares (a start, a signal-with-start). */
function timerOptions(taskQueue: string, exception: ReconExceptionTimer) {
  return {
    workflowId: workflowIds.reconException(exception.id),
    taskQueue,
    args: [reconExceptionInput(exception)] as [ReconExceptionInput],
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
  };
}

/**
 * Starts the stale timer of a newly opened exception, `recon-exception-<id>`, once: delayed
 * until its due time, so that it holds no worker until then (it is dispatched early only by a
 * signal-with-start: `wakeReconExceptionTimer`).
 */
export async function startReconExceptionTimer(
  client: Client,
  taskQueue: string,
  exception: ReconExceptionTimer,
): Promise<void> {
  const options = timerOptions(taskQueue, exception);
  const delayMs = Date.parse(options.args[0].dueAt!) - Date.now();
  await startOnce(() =>
    client.workflow.start('reconExceptionWorkflow', {
      ...options,
      ...(delayMs > 0 ? { startDelay: delayMs } : {}),
    }),
  );
}

/**
 * Dispatches an exception's timer now, delayed or not (started now if it was not yet), with
 * `signal`; answers false when the timer has ended already (it is never started again).
 */
export async function wakeReconExceptionTimer(
  client: Client,
  taskQueue: string,
  exception: ReconExceptionTimer,
  signal: typeof reconExceptionResolved | typeof reconExceptionWake,
): Promise<boolean> {
  try {
    await client.workflow.signalWithStart('reconExceptionWorkflow', {
      ...timerOptions(taskQueue, exception),
      signal,
    });
    return true;
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw error;
  }
}

/** Tells an exception's timer that it was resolved, so that it ends now; one ended is fine. */
export async function signalReconExceptionResolved(
  client: Client,
  taskQueue: string,
  exception: ReconExceptionTimer,
): Promise<void> {
  await wakeReconExceptionTimer(client, taskQueue, exception, reconExceptionResolved);
}

async function startOnce(start: () => Promise<unknown>): Promise<void> {
  try {
    await start();
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}
