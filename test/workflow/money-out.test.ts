import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createEngineWorker } from '../../src/worker/engine-worker';
import { randomUUID } from 'node:crypto';
import {
  moneyOutUpdates,
  type MoneyOutInput,
  type MoneyOutProviderStatus,
} from '../../src/workflows/money-out-shared';
import {
  createTimeSkippingEnv,
  killedAndRestarted,
  mocked,
  testDataConverter,
  withWorker,
  workflowBundle,
} from '../support/time-skipping';
import {
  cashoutActivities,
  cashoutAskedAtTtl,
  cashoutInput,
  cashoutRefusedAtOnce,
  notifyCashout,
  openCashout,
  openPayout,
  insufficientFunds,
  payoutActivities,
  payoutFailedLater,
  payoutInput,
  payoutRefusedAtOnce,
  PAYOUT_LATE_FAILURE_MS,
  SANDBOX_PAYOUT_CHECK_MS,
  SEVEN_DAYS,
  THIRTY_MINUTES,
} from './scenarios';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

type Options = Parameters<typeof cashoutActivities>[0];
/** What the provider answers when the saga asks about the payout. */
const says = (status: MoneyOutProviderStatus) => Promise.resolve({ id: 'po_fixture', status });

/**
 * The money-out saga's kinds tested here, each with its workflow, its provider's fixtures and
 * its recorded scenarios of a refusal at once and of a failure found at the pending TTL.
 */
const KINDS = [
  {
    kind: 'cashout',
    workflow: 'mobileMoneyCashoutWorkflow',
    input: cashoutInput,
    activities: (options: Options = {}) => cashoutActivities(options),
    open: openCashout,
    refusal: 'Provider refused the cashout',
    refusedAtOnce: cashoutRefusedAtOnce,
    failedAtTtl: cashoutAskedAtTtl,
    pendingTtlMs: THIRTY_MINUTES,
    timeouts: ['Monime POST /v1/payouts timed out', 'Monime answered HTTP 503'],
  },
  {
    kind: 'payout',
    workflow: 'cardPayoutWorkflow',
    input: (transactionId: string) => payoutInput(transactionId),
    activities: (options: Options = {}) => payoutActivities(options),
    open: openPayout,
    refusal: 'Provider refused the payout',
    refusedAtOnce: payoutRefusedAtOnce,
    // The sandbox's 40.40: accepted, failed at the next look.
    failedAtTtl: payoutFailedLater,
    pendingTtlMs: SANDBOX_PAYOUT_CHECK_MS,
    timeouts: ['Stripe POST /v1/payouts timed out', 'Stripe answered HTTP 503'],
  },
] as const;

describe.each(KINDS)('$workflow (the money-out saga, kind $kind)', (saga) => {
  const mocks = (options: Options = {}) => mocked(saga.activities(options));
  const live = (transactionId: string): MoneyOutInput => ({
    ...saga.input(transactionId),
    mode: 'live',
  });

  it('reserves, answers pending once the provider accepts, then settles once when it pays', async () => {
    const activities = mocks({ sent: 'pending', checked: 'completed' });
    const input = saga.input(randomUUID());
    const { opened, answered, result } = await withWorker(env, activities, async (q) => {
      const { opened, handle } = await saga.open(env, q, input);
      const answered = await notifyCashout(handle, 'completed');
      return { opened, answered, result: await handle.result() };
    });
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

  it('settles at once when the provider answers paid; without a late-failure window it is final', async () => {
    const activities = mocks({ sent: 'completed' });
    const input = saga.input(randomUUID());
    const { opened, result } = await withWorker(env, activities, async (q) => {
      const started = await saga.open(env, q, input);
      return { opened: started.opened, result: await started.handle.result() };
    });
    expect(opened).toEqual({
      status: 'opened',
      transactionId: input.transactionId,
      outcome: 'completed',
    });
    expect(result).toBe('completed');
    expect(activities.reserveMoneyOut).toHaveBeenCalledWith({ ...input, kind: saga.kind });
    expect(activities.sendMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
    expect(activities.reverseMoneyOut).not.toHaveBeenCalled();
  });

  it('gives everything back and declines when the provider refuses at once', async () => {
    const activities = mocked(saga.refusedAtOnce.activities(env));
    const { input, opened, result } = await withWorker(env, activities, (taskQueue) =>
      saga.refusedAtOnce.play(env, taskQueue),
    );
    expect(opened).toEqual({
      status: 'declined',
      code: 'provider_refused',
      detail: saga.refusal,
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
    const activities = mocks({ sent: 'pending', checked: 'failed' });
    const { answered, result } = await withWorker(env, activities, async (q) => {
      const { handle } = await saga.open(env, q, saga.input(randomUUID()));
      const answered = await notifyCashout(handle, 'failed');
      return { answered, result: await handle.result() };
    });
    expect(answered).toBe('failed');
    expect(result).toBe('failed');
    expect(activities.giveBackMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).not.toHaveBeenCalled();
  });

  it('asks the provider when the pending TTL passes and gives back when it says failed', async () => {
    const activities = mocked(saga.failedAtTtl.activities(env));
    const started = await env.currentTimeMs();
    const { opened, result } = await withWorker(env, activities, (taskQueue) =>
      saga.failedAtTtl.play(env, taskQueue),
    );
    expect(opened).toMatchObject({ status: 'opened', outcome: 'pending' });
    expect(result).toBe('failed');
    expect((await env.currentTimeMs()) - started).toBeGreaterThanOrEqual(saga.pendingTtlMs);
    expect(activities.checkMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).not.toHaveBeenCalled();
  });

  it('reverses a settlement when a kind with a late-failure window hears the payout failed later', async () => {
    const activities = mocks({ lateFailureMs: SEVEN_DAYS, checked: 'completed' });
    const answers = await withWorker(env, activities, async (q) => {
      const { handle } = await saga.open(env, q, saga.input(randomUUID()));
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

  it('Live Mode: paid at once, then reported failed within the window: the settlement is reversed', async () => {
    const activities = mocks({
      sent: 'completed',
      checked: 'failed',
      lateFailureMs: PAYOUT_LATE_FAILURE_MS,
    });
    const { opened, answered, result } = await withWorker(env, activities, async (q) => {
      const { opened, handle } = await saga.open(env, q, live(randomUUID()));
      const answered = await notifyCashout(handle, 'failed');
      return { opened, answered, result: await handle.result() };
    });
    expect(opened).toMatchObject({ status: 'opened', outcome: 'completed' });
    expect(answered).toBe('failed');
    expect(result).toBe('failed');
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.reverseMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('gives nothing back on a late failure the provider does not confirm', async () => {
    const activities = mocks({ lateFailureMs: SEVEN_DAYS, checked: 'completed' });
    const answers = await withWorker(env, activities, async (q) => {
      const { handle } = await saga.open(env, q, saga.input(randomUUID()));
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

  it('Live Mode: a failure reported after paid at once gives nothing back while the provider says paid', async () => {
    const activities = mocks({
      sent: 'completed',
      checked: 'completed',
      lateFailureMs: PAYOUT_LATE_FAILURE_MS,
    });
    const answers = await withWorker(env, activities, async (q) => {
      const { opened, handle } = await saga.open(env, q, live(randomUUID()));
      const forged = await notifyCashout(handle, 'failed');
      return { opened, forged, result: await handle.result() };
    });
    expect(answers.opened).toMatchObject({ status: 'opened', outcome: 'completed' });
    expect(answers).toMatchObject({ forged: 'completed', result: 'completed' });
    expect(activities.checkMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.reverseMoneyOut).not.toHaveBeenCalled();
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('settles nothing on a notification that says paid while the provider says pending', async () => {
    const activities = mocks({ checked: 'pending' });
    const answers = await withWorker(env, activities, async (q) => {
      const { handle } = await saga.open(env, q, saga.input(randomUUID()));
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
      const { handle } = await saga.open(env, q, saga.input(randomUUID()));
      await notifyCashout(handle, 'completed');
      return handle.result();
    });
    expect(result).toBe('completed');
    expect(activities.reverseMoneyOut).not.toHaveBeenCalled();
  });

  it('Live Mode: ends completed when the late-failure window passes quietly', async () => {
    const activities = mocks({ sent: 'completed', lateFailureMs: PAYOUT_LATE_FAILURE_MS });
    const started = await env.currentTimeMs();
    const result = await withWorker(env, activities, async (q) =>
      (await saga.open(env, q, live(randomUUID()))).handle.result(),
    );
    expect(result).toBe('completed');
    expect((await env.currentTimeMs()) - started).toBeGreaterThanOrEqual(PAYOUT_LATE_FAILURE_MS);
    expect(activities.reverseMoneyOut).not.toHaveBeenCalled();
  });

  it('moves nothing and never calls the provider when the reserve is declined', async () => {
    const activities = mocks();
    activities.reserveMoneyOut.mockImplementation(() => Promise.reject(insufficientFunds()));
    const { opened, result } = await withWorker(env, activities, async (q) => {
      const started = await saga.open(env, q, saga.input(randomUUID()));
      return { opened: started.opened, result: await started.handle.result() };
    });
    expect(opened).toMatchObject({ status: 'declined', code: 'insufficient_funds' });
    expect(result).toBe('failed');
    expect(activities.sendMoneyOut).not.toHaveBeenCalled();
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
    expect(activities.settleMoneyOut).not.toHaveBeenCalled();
  });

  it.each(['pending', 'completed'] as const)(
    'retries a provider timeout with the same request, then goes on (the payout %s)',
    async (sent) => {
      const activities = mocks({ sent, checked: 'completed' });
      activities.sendMoneyOut
        .mockImplementationOnce(() => Promise.reject(new Error(saga.timeouts[0])))
        .mockImplementationOnce(() => Promise.reject(new Error(saga.timeouts[1])));
      const input = saga.input(randomUUID());
      const result = await withWorker(env, activities, async (q) => {
        const { opened, handle } = await saga.open(env, q, input);
        expect(opened).toMatchObject({ status: 'opened', outcome: sent });
        if (sent === 'pending') await notifyCashout(handle, 'completed');
        return handle.result();
      });
      expect(result).toBe('completed');
      expect(activities.sendMoneyOut).toHaveBeenCalledTimes(3);
      for (const call of activities.sendMoneyOut.mock.calls) {
        expect(call).toEqual([{ transactionId: input.transactionId }]);
      }
      expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    },
  );

  it('keeps waiting while the provider says pending at the TTL, and settles when it says paid', async () => {
    const activities = mocks();
    activities.checkMoneyOut
      .mockImplementationOnce(() => says('pending'))
      .mockImplementationOnce(() => says('completed'));
    const started = await env.currentTimeMs();
    const result = await withWorker(env, activities, async (q) =>
      (await saga.open(env, q, saga.input(randomUUID()))).handle.result(),
    );
    expect(result).toBe('completed');
    expect((await env.currentTimeMs()) - started).toBeGreaterThanOrEqual(2 * saga.pendingTtlMs);
    expect(activities.checkMoneyOut).toHaveBeenCalledTimes(2);
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('settles at once on a sync that finds the payout paid', async () => {
    const activities = mocks({ checked: 'completed' });
    const answers = await withWorker(env, activities, async (q) => {
      const { handle } = await saga.open(env, q, saga.input(randomUUID()));
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
      const { handle } = await saga.open(env, q, saga.input(randomUUID()));
      await expect(
        handle.executeUpdate(moneyOutUpdates.notify, {
          args: [{ status: 'paid' as never }],
        }),
      ).rejects.toThrow();
      await notifyCashout(handle, 'failed');
      expect(await handle.result()).toBe('failed');
    });
  });

  it('finishes the saga exactly once on another worker after the first dies at the provider', async () => {
    const activities = mocks({ sent: 'completed' });
    const input = saga.input(randomUUID());
    const result = await killedAndRestarted(env, {
      real: activities,
      open: (taskQueue) => saga.open(env, taskQueue, input),
      // The first worker dies after the reserve, as it reaches the provider.
      crash: (_real, kill) => ({ sendMoneyOut: () => Promise.reject(kill()) }),
    });
    expect(result).toBe('completed');
    expect(activities.reserveMoneyOut).toHaveBeenCalledTimes(1);
    // Only the second worker reached the provider, once.
    expect(activities.sendMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('finishes the saga exactly once on another worker after the first dies between steps', async () => {
    const taskQueue = `wf-test-${randomUUID()}`;
    const input = saga.input(randomUUID());
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
    const opening = saga.open(env, taskQueue, input);
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
      await expect(saga.open(env, q, saga.input(randomUUID()))).rejects.toThrow();
    });
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });
});
