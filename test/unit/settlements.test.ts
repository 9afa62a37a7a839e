import type { WorkflowInfo } from '@temporalio/workflow';
import { listenForSettlement, paymentSinks } from '../../src/temporal/settlements';
import type { TransferResult } from '../../src/workflows/shared';

/** What the worker does when a workflow calls the `payments.settled` sink. */
const settle = (workflowId: string, result: TransferResult): void => {
  void paymentSinks.payments.settled.fn({ workflowId } as WorkflowInfo, result);
};

const completed: TransferResult = { status: 'completed', transactionId: 't-1' };

describe('settlements heard from the worker of this process', () => {
  it('answers a settlement heard before or while waiting, only for its own workflow id', async () => {
    const early = listenForSettlement('wf-a');
    const other = listenForSettlement('wf-b');
    settle('wf-a', completed);
    await expect(early.within(1_000)).resolves.toEqual(completed);
    const waiting = listenForSettlement('wf-c');
    const answer = waiting.within(5_000);
    setTimeout(() => settle('wf-c', completed), 10);
    await expect(answer).resolves.toEqual(completed);
    await expect(other.within(20)).resolves.toBeUndefined();
    for (const listener of [early, other, waiting]) listener.stop();
  });

  it('answers undefined when none came in time, and hears nothing once stopped', async () => {
    const listener = listenForSettlement('wf-d');
    const started = Date.now();
    await expect(listener.within(50)).resolves.toBeUndefined();
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    listener.stop();
    settle('wf-d', completed);
    await expect(listener.within(10)).resolves.toBeUndefined();
  });

  it('is never called while a workflow replays', () => {
    expect(paymentSinks.payments.settled.callDuringReplay).toBe(false);
  });
});
