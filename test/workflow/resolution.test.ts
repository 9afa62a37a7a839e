import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  RESOLUTION_REFUSED,
  RESOLUTION_UNREACHABLE,
  resolveUpdate,
  type Resolution,
} from '../../src/workflows/resolution';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import {
  cashoutActivities,
  cashoutInput,
  cashoutResolvedFailed,
  depositResolved,
  fixtureId,
  openCashout,
  PAYOUT_LATE_FAILURE_MS,
  resolutionOf,
} from './scenarios';

/**
 * The `resolve` update of the payment workflows (src/workflows/resolution.ts): an accepted one
 * settles through the provider's own path, once; its validator refuses, before anything is
 * written, a malformed resolution and a payment that no longer waits on its provider.
 */
let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

/** The reason a refused update gives, as the API shows it; throws if it was not refused. */
async function refusal(update: Promise<unknown>, type = RESOLUTION_REFUSED): Promise<string> {
  const error: unknown = await update.then(
    () => new Error('the update was accepted'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
  const cause = (error as WorkflowUpdateFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  expect((cause as ApplicationFailure).type).toBe(type);
  return (cause as ApplicationFailure).message;
}

describe('an operator’s resolution', () => {
  it('completes a pending deposit as a provider’s answer would: the wallet credited once', async () => {
    const activities = mocked(depositResolved.activities(env));
    const { answered, result, input } = await withWorker(env, activities, (taskQueue) =>
      depositResolved.play(env, taskQueue),
    );
    expect(answered).toBe('completed');
    expect(result).toBe('completed');
    expect(activities.completeDeposit).toHaveBeenCalledTimes(1);
    expect(activities.completeDeposit).toHaveBeenCalledWith({ transactionId: input.transactionId });
    expect(activities.closeDeposit).not.toHaveBeenCalled();
  });

  it('fails an accepted cashout: the saga gives everything back, settles nothing', async () => {
    const activities = mocked(cashoutResolvedFailed.activities(env));
    const { answered, result, input } = await withWorker(env, activities, (taskQueue) =>
      cashoutResolvedFailed.play(env, taskQueue),
    );
    expect(answered).toBe('failed');
    expect(result).toBe('failed');
    expect(activities.giveBackMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).toHaveBeenCalledWith({
      transactionId: input.transactionId,
    });
    expect(activities.settleMoneyOut).not.toHaveBeenCalled();
  });

  it('refuses a malformed resolution, and one of a payment already settled, moving nothing', async () => {
    // Paid at once, then open for the late-failure window: settled, yet still running.
    const activities = mocked(
      cashoutActivities({ sent: 'pending', lateFailureMs: PAYOUT_LATE_FAILURE_MS }),
    );
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await openCashout(env, taskQueue, cashoutInput(fixtureId(112)));
      const resolve = (resolution: Resolution) =>
        handle.executeUpdate(resolveUpdate, { args: [resolution] });
      const good = resolutionOf('completed');
      expect(await refusal(resolve({ ...good, outcome: 'expired' as never }))).toBe(
        'The outcome must be completed or failed',
      );
      expect(await refusal(resolve({ ...good, operator: ' ' }))).toBe(
        'The operator must be 1 to 200 characters',
      );
      expect(await refusal(resolve({ ...good, reason: 'x'.repeat(1001) }))).toBe(
        'The reason must be 1 to 1000 characters',
      );
      expect(activities.settleMoneyOut).not.toHaveBeenCalled();
      expect(await resolve(good)).toBe('completed');
      expect(await refusal(resolve(resolutionOf('failed')))).toBe(
        'The payment is already completed',
      );
      expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
      expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
      await handle.terminate('test over');
    });
  });

  it('asks the provider first: one that paid refuses a resolution failed, nothing given back', async () => {
    const activities = mocked(cashoutActivities({ sent: 'pending', atProvider: 'completed' }));
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await openCashout(env, taskQueue, cashoutInput(fixtureId(113)));
      const resolve = (resolution: Resolution) =>
        handle.executeUpdate(resolveUpdate, { args: [resolution] });
      expect(await refusal(resolve({ ...resolutionOf('failed'), force: true }))).toBe(
        'The provider says the payment is completed: it cannot be resolved failed',
      );
      expect(activities.askMoneyOutForResolution).toHaveBeenCalledWith({
        transactionId: cashoutInput(fixtureId(113)).transactionId,
        outcome: 'failed',
      });
      expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
      expect(activities.settleMoneyOut).not.toHaveBeenCalled();
      await handle.terminate('test over');
    });
  });

  it('a provider that cannot be reached refuses the resolution unless it is forced', async () => {
    const activities = mocked(cashoutActivities({ sent: 'pending', atProvider: 'unreachable' }));
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await openCashout(env, taskQueue, cashoutInput(fixtureId(114)));
      const resolve = (resolution: Resolution) =>
        handle.executeUpdate(resolveUpdate, { args: [resolution] });
      expect(await refusal(resolve(resolutionOf('failed')), RESOLUTION_UNREACHABLE)).toMatch(
        /^The provider cannot be reached/,
      );
      expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
      expect(await resolve({ ...resolutionOf('failed'), force: true })).toBe('failed');
      expect(activities.giveBackMoneyOut).toHaveBeenCalledTimes(1);
      expect(activities.settleMoneyOut).not.toHaveBeenCalled();
      expect(await handle.result()).toBe('failed');
    });
  });
});
