import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import { randomUUID } from 'node:crypto';
import type { MoneyOutInput } from '../../src/workflows/money-out-shared';
import {
  cashoutActivities,
  cashoutInput,
  historyShape,
  openCashout,
  openRefund,
  refundActivities,
  refundCompleted,
  refundFailedLater,
  refundInput,
} from './scenarios';

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

  it('runs its steps as local activities in one workflow task; other kinds keep theirs', async () => {
    // Started as the API starts it (`localSteps`): reserve, refund and settle are markers of the
    // first workflow task. A refund started without it asks `patched`; a cashout, whose start
    // does not say it, keeps its activity tasks and asks nothing.
    const refundShape = async (input: MoneyOutInput) => {
      const activities = mocked(refundActivities({ sent: 'completed' }));
      const handle = await withWorker(env, activities, async (taskQueue) => {
        const opened = await openRefund(env, taskQueue, input);
        expect(await opened.handle.result()).toBe('completed');
        return opened.handle;
      });
      expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
      return historyShape((await handle.fetchHistory()).events);
    };
    const local = ['core_local_activity', 'core_local_activity', 'core_local_activity'];
    expect(await refundShape(refundInput(randomUUID()))).toEqual({
      workflowTasks: 1,
      activities: [],
      markers: local,
      localSteps: ['reserveMoneyOut', 'sendMoneyOut', 'settleMoneyOut'],
      upserted: ['PaymentStatus'],
    });
    const { localSteps: _, ...before } = refundInput(randomUUID());
    expect(await refundShape(before)).toEqual({
      workflowTasks: 1,
      activities: [],
      markers: ['core_patch', ...local],
      localSteps: ['reserveMoneyOut', 'sendMoneyOut', 'settleMoneyOut'],
      upserted: ['TemporalChangeVersion', 'PaymentStatus'],
    });

    const activities = mocked(cashoutActivities({ sent: 'completed' }));
    const cashout = await withWorker(env, activities, async (taskQueue) => {
      const opened = await openCashout(env, taskQueue, cashoutInput(randomUUID()));
      expect(await opened.handle.result()).toBe('completed');
      return opened.handle;
    });
    expect(historyShape((await cashout.fetchHistory()).events)).toMatchObject({
      activities: ['reserveMoneyOut', 'sendMoneyOut', 'settleMoneyOut'],
      markers: [],
    });
  });
});
