import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import { refundCompleted, refundFailedLater } from './scenarios';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

describe('cardRefundWorkflow (the money-out saga, kind refund)', () => {
  it('reserves, is refunded at once and settles once', async () => {
    const activities = mocked(refundCompleted.activities(env));
    const { input, opened, result } = await withWorker(env, activities, (taskQueue) =>
      refundCompleted.play(env, taskQueue),
    );
    expect(opened).toEqual({
      status: 'opened',
      transactionId: input.transactionId,
      outcome: 'completed',
    });
    expect(result).toBe('completed');
    expect(activities.reserveMoneyOut).toHaveBeenCalledWith({ ...input, kind: 'refund' });
    expect(activities.sendMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('accepted, then failed at the next look: the amount is given back once', async () => {
    const activities = mocked(refundFailedLater.activities(env));
    const { opened, result } = await withWorker(env, activities, (taskQueue) =>
      refundFailedLater.play(env, taskQueue),
    );
    expect(opened).toMatchObject({ status: 'opened', outcome: 'pending' });
    expect(result).toBe('failed');
    expect(activities.checkMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).not.toHaveBeenCalled();
  });
});
