import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import { workflowIds } from '../workflows/ids';
import {
  reconExceptionResolved,
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

/** Starts the stale timer of a newly opened exception, `recon-exception-<id>`, once. */
export async function startReconExceptionTimer(
  client: Client,
  taskQueue: string,
  exceptionId: string,
): Promise<void> {
  const input: ReconExceptionInput = { exceptionId };
  await startOnce(() =>
    client.workflow.start('reconExceptionWorkflow', {
      workflowId: workflowIds.reconException(exceptionId),
      taskQueue,
      args: [input],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    }),
  );
}

/** Tells an exception's timer that it was resolved; a timer already ended is fine. */
export async function signalReconExceptionResolved(
  client: Client,
  exceptionId: string,
): Promise<void> {
  try {
    await client.workflow
      .getHandle(workflowIds.reconException(exceptionId))
      .signal(reconExceptionResolved);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
}

async function startOnce(start: () => Promise<unknown>): Promise<void> {
  try {
    await start();
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}
