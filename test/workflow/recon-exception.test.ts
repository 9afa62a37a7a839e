import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { workflowIds } from '../../src/workflows/ids';
import { clockUpdates } from '../../src/workflows/clock-shared';
import {
  RECON_EXCEPTION_STALE_MS,
  reconExceptionResolved,
  reconExceptionWake,
  type ReconExceptionInput,
} from '../../src/workflows/recon-shared';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import { reconExceptionDue } from './scenarios';

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

describe('reconExceptionWorkflow started delayed until its due time', () => {
  const stale = () => mocked({ markReconExceptionStale: () => Promise.resolve(true) });
  /** A Test Mode exception opened now, its timer's input and start options. */
  async function openedNow(taskQueue: string) {
    const exceptionId = randomUUID();
    const input: Required<ReconExceptionInput> = {
      exceptionId,
      mode: 'test',
      dueAt: new Date((await env.currentTimeMs()) + RECON_EXCEPTION_STALE_MS).toISOString(),
    };
    const options = {
      workflowId: workflowIds.reconException(exceptionId),
      taskQueue,
      args: [input],
    };
    return { exceptionId, options };
  }

  it('runs nothing until due, then sends the stale event (the recorded scenario)', async () => {
    const activities = stale();
    const { result } = await withWorker(env, activities, (taskQueue) =>
      reconExceptionDue.play(env, taskQueue),
    );
    expect(result).toBe(true);
    expect(activities.markReconExceptionStale).toHaveBeenCalledTimes(1);
  });

  it('sends the stale event at its due time, asking nothing before', async () => {
    const activities = stale();
    const sent = await withWorker(env, activities, async (taskQueue) => {
      const { options } = await openedNow(taskQueue);
      const handle = await env.client.workflow.start('reconExceptionWorkflow', {
        ...options,
        startDelay: RECON_EXCEPTION_STALE_MS,
      });
      await env.sleep(RECON_EXCEPTION_STALE_MS - 60_000);
      expect(activities.markReconExceptionStale).not.toHaveBeenCalled();
      return handle.result();
    });
    expect(sent).toBe(true);
    expect(activities.markReconExceptionStale).toHaveBeenCalledTimes(1);
  });

  it('woken by its resolution, ends without the event', async () => {
    const activities = stale();
    const sent = await withWorker(env, activities, async (taskQueue) => {
      const { options } = await openedNow(taskQueue);
      await env.client.workflow.start('reconExceptionWorkflow', {
        ...options,
        startDelay: RECON_EXCEPTION_STALE_MS,
      });
      const handle = await env.client.workflow.signalWithStart('reconExceptionWorkflow', {
        ...options,
        signal: reconExceptionResolved,
      });
      return handle.result();
    });
    expect(sent).toBe(false);
    expect(activities.markReconExceptionStale).not.toHaveBeenCalled();
  });

  it('takes an advance sent with the wake, in its first task, and keeps what is left', async () => {
    const activities = stale();
    // The wake and the advance both wait for the worker: its first task brings both.
    const taskQueue = `wf-test-${randomUUID()}`;
    const { options } = await openedNow(taskQueue);
    await env.client.workflow.start('reconExceptionWorkflow', {
      ...options,
      startDelay: RECON_EXCEPTION_STALE_MS,
    });
    const handle = await env.client.workflow.signalWithStart('reconExceptionWorkflow', {
      ...options,
      signal: reconExceptionWake,
    });
    const first = handle.executeUpdate(clockUpdates.advanceTime, {
      args: [{ seconds: 71 * 3600 }],
    });
    const sent = await withWorker(
      env,
      activities,
      async () => {
        expect(await first).toEqual({ offsetMs: 71 * 3600 * 1000 });
        expect(activities.markReconExceptionStale).not.toHaveBeenCalled();
        await handle.executeUpdate(clockUpdates.advanceTime, { args: [{ seconds: 3600 }] });
        return handle.result();
      },
      taskQueue,
    );
    expect(sent).toBe(true);
    expect(activities.markReconExceptionStale).toHaveBeenCalledTimes(1);
  });
});
