import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { workflowIds } from '../../workflows/ids';
import { RECON_EXCEPTION_STALE_MS, reconExceptionResolved } from '../../workflows/recon-shared';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';

// Real servers on a shared machine: jest's 5-second default is too tight under load.
jest.setTimeout(60_000);

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

/** An open Test Mode exception's timer steps; `stale` answers whether it was still open. */
function timerSteps(open: () => boolean) {
  return mocked({
    findReconExceptionState: () => Promise.resolve({ mode: 'test' as const, open: true }),
    markReconExceptionStale: () => Promise.resolve(open()),
  });
}

describe('reconExceptionWorkflow', () => {
  it('sends the stale event once the exception has been open 72 hours, not before', async () => {
    const activities = timerSteps(() => true);
    const exceptionId = randomUUID();
    const sent = await withWorker(env, activities, async (taskQueue) => {
      const handle = await env.client.workflow.start('reconExceptionWorkflow', {
        workflowId: workflowIds.reconException(exceptionId),
        taskQueue,
        args: [{ exceptionId }],
      });
      await env.sleep(RECON_EXCEPTION_STALE_MS - 60_000);
      expect(activities.markReconExceptionStale).not.toHaveBeenCalled();
      return handle.result();
    });
    expect(sent).toBe(true);
    expect(activities.markReconExceptionStale).toHaveBeenCalledTimes(1);
    expect(activities.markReconExceptionStale).toHaveBeenCalledWith({
      exceptionId,
      eventId: expect.any(String),
    });
  });

  it('ends without the event when it is resolved first', async () => {
    const activities = timerSteps(() => true);
    const exceptionId = randomUUID();
    const sent = await withWorker(env, activities, async (taskQueue) => {
      const handle = await env.client.workflow.start('reconExceptionWorkflow', {
        workflowId: workflowIds.reconException(exceptionId),
        taskQueue,
        args: [{ exceptionId }],
      });
      await env.sleep(60 * 60 * 1000);
      await handle.signal(reconExceptionResolved);
      return handle.result();
    });
    expect(sent).toBe(false);
    expect(activities.markReconExceptionStale).not.toHaveBeenCalled();
  });

  it('does not wait for an exception already resolved', async () => {
    const activities = mocked({
      findReconExceptionState: () => Promise.resolve({ mode: 'test' as const, open: false }),
      markReconExceptionStale: () => Promise.resolve(true),
    });
    const exceptionId = randomUUID();
    const sent = await withWorker(env, activities, (taskQueue) =>
      env.client.workflow.execute('reconExceptionWorkflow', {
        workflowId: workflowIds.reconException(exceptionId),
        taskQueue,
        args: [{ exceptionId }],
      }),
    );
    expect(sent).toBe(false);
    expect(activities.markReconExceptionStale).not.toHaveBeenCalled();
  });
});
