import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal } from '@temporalio/proto';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import { workflowIds } from '../../src/workflows/ids';
import { batchCancel } from '../../src/workflows/batch-shared';
import { moneyOutStateQuery } from '../../src/workflows/money-out-shared';
import {
  batchActivities,
  batchAtomic,
  batchCanceled,
  batchCashouts,
  batchInput,
  batchTransferItems,
  batchTransfersContinued,
  fixtureId,
  runBatch,
} from './scenarios';

// Real servers on a shared machine: jest's 5-second default is too tight under load.
jest.setTimeout(120_000);

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

const EventType = temporal.api.enums.v1.EventType;

/** The event types of one run of a workflow. */
async function eventsOfRun(workflowId: string, runId?: string) {
  const history = await env.client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (history.events ?? []).map((e) => e.eventType);
}

describe('batchWorkflow', () => {
  it('runs at most `window` items at once, each as its own transfer workflow, and records every end once', async () => {
    const items = batchTransferItems(200, 12);
    const batch = batchActivities(items, { declined: [fixtureId(203), fixtureId(207)] });
    const activities = mocked(batch.activities);
    let running = 0;
    let most = 0;
    const transfer = activities.transferFunds.getMockImplementation()!;
    activities.transferFunds.mockImplementation(async (input) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 30));
      running -= 1;
      return transfer(input);
    });
    const input = batchInput(fixtureId(250), { total: 12, window: 3 });
    const { result } = await withWorker(env, activities, (taskQueue) =>
      runBatch(env, taskQueue, input),
    );
    expect(result).toEqual({ status: 'partially_failed' });
    expect(most).toBe(3);
    expect(activities.transferFunds).toHaveBeenCalledTimes(12);
    expect([...batch.recorded.keys()].sort((a, b) => a - b)).toEqual([...Array(12).keys()]);
    expect(batch.recorded.get(3)).toEqual({
      index: 3,
      status: 'failed',
      code: 'insufficient_funds',
      detail: 'Insufficient funds',
    });
    expect(batch.counts()).toEqual({ succeeded: 10, failed: 2, canceled: 0 });
    // Ends are written a page at a time, not one write per item.
    expect(activities.recordBatchItems.mock.calls.length).toBeLessThan(12);
    expect(activities.endBatch).toHaveBeenCalledTimes(1);
    // Each item is the transfer workflow the single endpoint starts, under its derived id.
    const child = await env.client.workflow
      .getHandle(workflowIds.transfer(fixtureId(200)))
      .describe();
    expect(child.type).toBe('transferWorkflow');
  });

  it('continues as new every `itemsPerRun` items, draining its window first, and carries where it is', async () => {
    const batch = batchActivities(batchTransferItems(300, 7));
    const activities = mocked(batch.activities);
    const input = batchInput(fixtureId(350), { total: 7, itemsPerRun: 3, window: 2 });
    const { handle, result } = await withWorker(env, activities, (taskQueue) =>
      runBatch(env, taskQueue, input),
    );
    expect(result).toEqual({ status: 'completed' });
    expect(batch.counts()).toEqual({ succeeded: 7, failed: 0, canceled: 0 });
    expect(activities.loadBatchItems.mock.calls.map(([call]) => call.from)).toEqual([0, 3, 6]);
    expect(activities.transferFunds).toHaveBeenCalledTimes(7);
    expect(activities.endBatch).toHaveBeenCalledTimes(1);
    const firstRun = await eventsOfRun(handle.workflowId, handle.firstExecutionRunId);
    expect(firstRun.at(-1)).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
    // Every page of the first run ended before it continued as new: its 3 items, 2 at once.
    const started = firstRun.filter(
      (t) => t === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    ).length;
    const ended = firstRun.filter((t) => t === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED).length;
    expect([started, ended]).toEqual([3, 3]);
    expect(activities.runBatchTransfers.mock.calls.map(([page]) => page.items.length)).toEqual([
      1, 1, 1, 1, 1, 1, 1,
    ]);
    const lastRun = await eventsOfRun(handle.workflowId);
    expect(lastRun.at(-1)).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  });

  it('records a continued batch as its first run did (the recorded scenario)', async () => {
    const activities = mocked(batchTransfersContinued.activities(env));
    await withWorker(env, activities, (taskQueue) => batchTransfersContinued.play(env, taskQueue));
    const ends = activities.recordBatchItems.mock.calls.flatMap(([c]) => c.results);
    // Two run at once: they end in either order.
    expect(ends.sort((a, b) => a.index - b.index)).toEqual([
      { index: 0, status: 'succeeded', code: null, detail: null },
      { index: 1, status: 'failed', code: 'insufficient_funds', detail: 'Insufficient funds' },
      { index: 2, status: 'succeeded', code: null, detail: null },
    ]);
  });

  it('waits for room in the rate limit instead of failing, then a cancel cancels what has not started', async () => {
    const activities = mocked(batchCanceled.activities(env));
    const { result } = await withWorker(env, activities, (taskQueue) =>
      batchCanceled.play(env, taskQueue),
    );
    expect(result).toEqual({ status: 'canceled' });
    expect(activities.transferFunds).toHaveBeenCalledTimes(1);
    expect(activities.takeBatchItemSlots.mock.calls.length).toBeGreaterThanOrEqual(2);
    expect(activities.cancelBatchItems).toHaveBeenCalledWith({
      batchId: fixtureId(120),
      from: 1,
    });
    expect(activities.endBatch).toHaveBeenCalledTimes(1);
  });

  it('refuses a cancel once the batch has ended, canceling nothing', async () => {
    const batch = batchActivities(batchTransferItems(400, 2));
    const activities = mocked(batch.activities);
    const input = batchInput(fixtureId(450), { total: 2 });
    const result = await withWorker(env, activities, async (taskQueue) => {
      const { result: done } = await runBatch(env, taskQueue, input);
      return done;
    });
    expect(result).toEqual({ status: 'completed' });
    await expect(
      env.client.workflow.getHandle(workflowIds.batch(fixtureId(450))).executeUpdate(batchCancel),
    ).rejects.toThrow();
    expect(batch.canceled.size).toBe(0);
  });

  it('ends a money-out item on its saga’s answer, while the saga waits for its provider', async () => {
    const activities = mocked(batchCashouts.activities(env));
    const { result, handle } = await withWorker(env, activities, async (taskQueue) => {
      const played = await batchCashouts.play(env, taskQueue);
      // The accepted payout's saga outlives the batch: pending at its provider.
      const saga = env.client.workflow.getHandle(workflowIds.cashout(fixtureId(111)));
      expect(await saga.query(moneyOutStateQuery)).toBe('pending');
      return played;
    });
    expect(result).toEqual({ status: 'partially_failed' });
    expect(activities.recordBatchItems.mock.calls.flatMap(([c]) => c.results)).toEqual(
      expect.arrayContaining([
        { index: 0, status: 'succeeded', code: null, detail: null },
        {
          index: 1,
          status: 'failed',
          code: 'provider_refused',
          detail: 'Provider refused the cashout',
        },
      ]),
    );
    const events = await eventsOfRun(handle.workflowId);
    expect(
      events.filter((t) => t === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED),
    ).toHaveLength(2);
  });

  it('runs an atomic batch as its one step', async () => {
    const activities = mocked(batchAtomic.activities(env));
    const { result } = await withWorker(env, activities, (taskQueue) =>
      batchAtomic.play(env, taskQueue),
    );
    expect(result).toEqual({ status: 'completed' });
    expect(activities.runAtomicBatch).toHaveBeenCalledWith({ batchId: fixtureId(130) });
    expect(activities.loadBatchItems).not.toHaveBeenCalled();
  });
});
