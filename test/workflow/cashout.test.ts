import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createEngineWorker } from '../../worker/engine-worker';
import { randomUUID } from 'node:crypto';
import { moneyOutUpdates, type MoneyOutProviderStatus } from '../../workflows/money-out-shared';
import {
  createTimeSkippingEnv,
  mocked,
  testDataConverter,
  withWorker,
  workflowBundle,
} from '../support/time-skipping';
import {
  cashoutActivities,
  cashoutAskedAtTtl,
  cashoutFailedLater,
  cashoutInput,
  cashoutRefusedAtOnce,
  cashoutSettled,
  notifyCashout,
  openCashout,
  insufficientFunds,
  THIRTY_MINUTES,
} from './scenarios';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

type Options = Parameters<typeof cashoutActivities>[0];
const mocks = (options: Options = {}) => mocked(cashoutActivities(options));
/** What the provider answers when the saga asks about the payout. */
const says = (status: MoneyOutProviderStatus) => Promise.resolve({ id: 'po_fixture', status });

describe('mobileMoneyCashoutWorkflow (the money-out saga)', () => {
  it('reserves, answers pending once the provider accepts, then settles once when it pays', async () => {
    const activities = mocked(cashoutSettled.activities(env));
    const { input, opened, answered, result } = await withWorker(env, activities, (taskQueue) =>
      cashoutSettled.play(env, taskQueue),
    );
    expect(opened).toEqual({
      status: 'opened',
      transactionId: input.transactionId,
      outcome: 'pending',
    });
    expect(answered).toBe('completed');
    expect(result).toBe('completed');
    const id = { transactionId: input.transactionId };
    expect(activities.reserveMoneyOut).toHaveBeenCalledWith(input);
    expect(activities.sendMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.sendMoneyOut).toHaveBeenCalledWith(id);
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).toHaveBeenCalledWith(id);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('settles at once when the provider answers paid', async () => {
    const activities = mocks({ sent: 'completed' });
    const { opened, result } = await withWorker(env, activities, async (q) => {
      const started = await openCashout(env, q, cashoutInput(randomUUID()));
      return { opened: started.opened, result: await started.handle.result() };
    });
    expect(opened).toMatchObject({ status: 'opened', outcome: 'completed' });
    expect(result).toBe('completed');
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('gives everything back and declines when the provider refuses at once', async () => {
    const activities = mocked(cashoutRefusedAtOnce.activities(env));
    const { input, opened, result } = await withWorker(env, activities, (taskQueue) =>
      cashoutRefusedAtOnce.play(env, taskQueue),
    );
    expect(opened).toEqual({
      status: 'declined',
      code: 'provider_refused',
      detail: 'Provider refused the cashout',
    });
    expect(result).toBe('failed');
    expect(activities.sendMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).toHaveBeenCalledWith({
      transactionId: input.transactionId,
    });
    expect(activities.giveBackMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).not.toHaveBeenCalled();
  });

  it('gives everything back when the provider accepted and later reports the payout failed', async () => {
    const activities = mocked(cashoutFailedLater.activities(env));
    const { answered, result } = await withWorker(env, activities, (taskQueue) =>
      cashoutFailedLater.play(env, taskQueue),
    );
    expect(answered).toBe('failed');
    expect(result).toBe('failed');
    expect(activities.giveBackMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).not.toHaveBeenCalled();
  });

  it('reverses a settlement when a kind with a late-failure window hears the payout failed later', async () => {
    const SEVEN_DAYS = 7 * 24 * 60 * 60 * 1000;
    const activities = mocks({ lateFailureMs: SEVEN_DAYS, checked: 'completed' });
    const answers = await withWorker(env, activities, async (q) => {
      const { handle } = await openCashout(env, q, cashoutInput(randomUUID()));
      const paid = await notifyCashout(handle, 'completed');
      // The provider now says so too (a returned payout).
      activities.checkMoneyOut.mockImplementation(() => says('failed'));
      const failedLater = await notifyCashout(handle, 'failed');
      return { paid, failedLater, result: await handle.result() };
    });
    expect(answers).toEqual({ paid: 'completed', failedLater: 'failed', result: 'failed' });
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.reverseMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('gives nothing back on a late failure the provider does not confirm', async () => {
    const SEVEN_DAYS = 7 * 24 * 60 * 60 * 1000;
    const activities = mocks({ lateFailureMs: SEVEN_DAYS, checked: 'completed' });
    const answers = await withWorker(env, activities, async (q) => {
      const { handle } = await openCashout(env, q, cashoutInput(randomUUID()));
      const paid = await notifyCashout(handle, 'completed');
      const forged = await notifyCashout(handle, 'failed');
      return { paid, forged, result: await handle.result() };
    });
    expect(answers).toEqual({ paid: 'completed', forged: 'completed', result: 'completed' });
    expect(activities.checkMoneyOut).toHaveBeenCalledTimes(2);
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.reverseMoneyOut).not.toHaveBeenCalled();
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('settles nothing on a notification that says paid while the provider says pending', async () => {
    const activities = mocks({ checked: 'pending' });
    const answers = await withWorker(env, activities, async (q) => {
      const { handle } = await openCashout(env, q, cashoutInput(randomUUID()));
      const notified = await notifyCashout(handle, 'completed');
      expect(activities.settleMoneyOut).not.toHaveBeenCalled();
      // The provider pays later: the saga's own look at the TTL settles it.
      activities.checkMoneyOut.mockImplementation(() => says('completed'));
      return { notified, result: await handle.result() };
    });
    expect(answers).toEqual({ notified: 'pending', result: 'completed' });
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('ends completed when the late-failure window passes without a failure', async () => {
    const activities = mocks({ lateFailureMs: 60_000, checked: 'completed' });
    const result = await withWorker(env, activities, async (q) => {
      const { handle } = await openCashout(env, q, cashoutInput(randomUUID()));
      await notifyCashout(handle, 'completed');
      return handle.result();
    });
    expect(result).toBe('completed');
    expect(activities.reverseMoneyOut).not.toHaveBeenCalled();
  });

  it('treats a payout reported paid as final when the kind has no late-failure window', async () => {
    const activities = mocks({ sent: 'completed' });
    await withWorker(env, activities, async (q) => {
      const { handle } = await openCashout(env, q, cashoutInput(randomUUID()));
      expect(await handle.result()).toBe('completed');
    });
    expect(activities.reverseMoneyOut).not.toHaveBeenCalled();
  });

  it('moves nothing and never calls the provider when the reserve is declined', async () => {
    const activities = mocks();
    activities.reserveMoneyOut.mockImplementation(() => Promise.reject(insufficientFunds()));
    const { opened, result } = await withWorker(env, activities, async (q) => {
      const started = await openCashout(env, q, cashoutInput(randomUUID()));
      return { opened: started.opened, result: await started.handle.result() };
    });
    expect(opened).toMatchObject({ status: 'declined', code: 'insufficient_funds' });
    expect(result).toBe('failed');
    expect(activities.sendMoneyOut).not.toHaveBeenCalled();
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
    expect(activities.settleMoneyOut).not.toHaveBeenCalled();
  });

  it('retries a provider timeout with the same request, then goes on', async () => {
    const activities = mocks({ checked: 'completed' });
    activities.sendMoneyOut
      .mockImplementationOnce(() => Promise.reject(new Error('Monime POST /v1/payouts timed out')))
      .mockImplementationOnce(() => Promise.reject(new Error('Monime answered HTTP 503')));
    const input = cashoutInput(randomUUID());
    const result = await withWorker(env, activities, async (q) => {
      const { opened, handle } = await openCashout(env, q, input);
      expect(opened).toMatchObject({ status: 'opened', outcome: 'pending' });
      await notifyCashout(handle, 'completed');
      return handle.result();
    });
    expect(result).toBe('completed');
    expect(activities.sendMoneyOut).toHaveBeenCalledTimes(3);
    for (const call of activities.sendMoneyOut.mock.calls) {
      expect(call).toEqual([{ transactionId: input.transactionId }]);
    }
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
  });

  it('asks the provider when the pending TTL passes and gives back when it says failed', async () => {
    const activities = mocked(cashoutAskedAtTtl.activities(env));
    const started = await env.currentTimeMs();
    const { result } = await withWorker(env, activities, (taskQueue) =>
      cashoutAskedAtTtl.play(env, taskQueue),
    );
    expect(result).toBe('failed');
    expect((await env.currentTimeMs()) - started).toBeGreaterThanOrEqual(THIRTY_MINUTES);
    expect(activities.checkMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).toHaveBeenCalledTimes(1);
  });

  it('keeps waiting while the provider says pending at the TTL, and settles when it says paid', async () => {
    const activities = mocks();
    activities.checkMoneyOut
      .mockImplementationOnce(() => Promise.resolve({ id: 'po_fixture', status: 'pending' }))
      .mockImplementationOnce(() => Promise.resolve({ id: 'po_fixture', status: 'completed' }));
    const started = await env.currentTimeMs();
    const result = await withWorker(env, activities, async (q) =>
      (await openCashout(env, q, cashoutInput(randomUUID()))).handle.result(),
    );
    expect(result).toBe('completed');
    expect((await env.currentTimeMs()) - started).toBeGreaterThanOrEqual(2 * THIRTY_MINUTES);
    expect(activities.checkMoneyOut).toHaveBeenCalledTimes(2);
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('settles at once on a sync that finds the payout paid', async () => {
    const activities = mocks({ checked: 'completed' });
    const answers = await withWorker(env, activities, async (q) => {
      const { handle } = await openCashout(env, q, cashoutInput(randomUUID()));
      const synced = await handle.executeUpdate(moneyOutUpdates.sync);
      return { synced, result: await handle.result() };
    });
    expect(answers).toEqual({ synced: 'completed', result: 'completed' });
    expect(activities.checkMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('refuses a notification with an unknown status', async () => {
    const activities = mocks({ checked: 'failed' });
    await withWorker(env, activities, async (q) => {
      const { handle } = await openCashout(env, q, cashoutInput(randomUUID()));
      await expect(
        handle.executeUpdate(moneyOutUpdates.notify, {
          args: [{ status: 'paid' as never }],
        }),
      ).rejects.toThrow();
      await notifyCashout(handle, 'failed');
      expect(await handle.result()).toBe('failed');
    });
  });

  it('finishes the saga exactly once on another worker after the first dies between steps', async () => {
    const taskQueue = `wf-test-${randomUUID()}`;
    const input = cashoutInput(randomUUID());
    const first = mocks();
    let reserved!: () => void;
    const reserveDone = new Promise<void>((resolve) => (reserved = resolve));
    const realReserve = first.reserveMoneyOut.getMockImplementation()!;
    first.reserveMoneyOut.mockImplementation(async (arg) => {
      const answer = await realReserve(arg);
      reserved();
      return answer;
    });
    // The first worker dies before it reaches the provider: its attempt, if any, fails.
    first.sendMoneyOut.mockImplementation(() => Promise.reject(new Error('worker died')));
    const bundle = await workflowBundle();
    const worker1 = await createEngineWorker({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      dataConverter: testDataConverter(),
      activities: first,
      // No sticky cache: the workflow's next task goes to the shared queue, as after a crash.
      maxCachedWorkflows: 0,
    });
    // Started as the API starts it; the open update is answered only after the provider step.
    const opening = openCashout(env, taskQueue, input);
    await worker1.runUntil(reserveDone);
    // The first worker is gone; another takes over the same task queue.
    const second = mocks({ checked: 'completed' });
    const worker2 = await createEngineWorker({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      dataConverter: testDataConverter(),
      activities: second,
    });
    const result = await worker2.runUntil(async () => {
      const { opened, handle } = await opening;
      expect(opened).toMatchObject({ status: 'opened', outcome: 'pending' });
      await notifyCashout(handle, 'completed');
      return handle.result();
    });
    expect(result).toBe('completed');
    expect(first.reserveMoneyOut).toHaveBeenCalledTimes(1);
    expect(second.reserveMoneyOut).not.toHaveBeenCalled();
    expect(second.sendMoneyOut.mock.calls.length).toBeGreaterThanOrEqual(1);
    expect(first.settleMoneyOut.mock.calls.length + second.settleMoneyOut.mock.calls.length).toBe(
      1,
    );
    expect(first.giveBackMoneyOut).not.toHaveBeenCalled();
    expect(second.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('treats a non-retryable failure that is not a decline as a fault, not a refusal', async () => {
    const activities = mocks();
    activities.sendMoneyOut.mockImplementation(() =>
      Promise.reject(ApplicationFailure.nonRetryable('bug', 'TypeError')),
    );
    await withWorker(env, activities, async (q) => {
      // The saga fails loudly (the workflow fails) instead of giving back on a bug.
      await expect(openCashout(env, q, cashoutInput(randomUUID()))).rejects.toThrow();
    });
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });
});
