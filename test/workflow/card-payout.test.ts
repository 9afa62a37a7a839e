import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import {
  createTimeSkippingEnv,
  killedAndRestarted,
  mocked,
  withWorker,
} from '../support/time-skipping';
import {
  notifyCashout,
  openPayout,
  payoutActivities,
  payoutFailedLater,
  payoutInput,
  payoutPaidAtOnce,
  payoutRefusedAtOnce,
  payoutReversed,
  PAYOUT_LATE_FAILURE_MS,
  SANDBOX_PAYOUT_CHECK_MS,
} from './scenarios';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

type Options = Parameters<typeof payoutActivities>[0];
const mocks = (options: Options = {}) => mocked(payoutActivities(options));

describe('cardPayoutWorkflow (the money-out saga, kind payout)', () => {
  it('reserves, is paid at once and settles once; Test Mode has no late-failure window', async () => {
    const activities = mocked(payoutPaidAtOnce.activities(env));
    const { input, opened, result } = await withWorker(env, activities, (taskQueue) =>
      payoutPaidAtOnce.play(env, taskQueue),
    );
    expect(opened).toEqual({
      status: 'opened',
      transactionId: input.transactionId,
      outcome: 'completed',
    });
    expect(result).toBe('completed');
    expect(activities.reserveMoneyOut).toHaveBeenCalledWith({ ...input, kind: 'payout' });
    expect(activities.sendMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
    expect(activities.reverseMoneyOut).not.toHaveBeenCalled();
  });

  it('accepted, then settled when the provider reports it paid', async () => {
    const activities = mocks({ sent: 'pending', checked: 'completed' });
    const answers = await withWorker(env, activities, async (q) => {
      const { opened, handle } = await openPayout(env, q, payoutInput(randomUUID()));
      const paid = await notifyCashout(handle, 'completed');
      return { opened, paid, result: await handle.result() };
    });
    expect(answers.opened).toMatchObject({ status: 'opened', outcome: 'pending' });
    expect(answers).toMatchObject({ paid: 'completed', result: 'completed' });
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('gives everything back and declines when the provider refuses at once', async () => {
    const activities = mocked(payoutRefusedAtOnce.activities(env));
    const { input, opened, result } = await withWorker(env, activities, (taskQueue) =>
      payoutRefusedAtOnce.play(env, taskQueue),
    );
    expect(opened).toEqual({
      status: 'declined',
      code: 'provider_refused',
      detail: 'Provider refused the payout',
    });
    expect(result).toBe('failed');
    expect(activities.giveBackMoneyOut).toHaveBeenCalledWith({
      transactionId: input.transactionId,
    });
    expect(activities.giveBackMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).not.toHaveBeenCalled();
  });

  it('accepted, then failed at the next look (the sandbox’s 40.40): everything given back', async () => {
    const activities = mocked(payoutFailedLater.activities(env));
    const started = await env.currentTimeMs();
    const { opened, result } = await withWorker(env, activities, (taskQueue) =>
      payoutFailedLater.play(env, taskQueue),
    );
    expect(opened).toMatchObject({ status: 'opened', outcome: 'pending' });
    expect(result).toBe('failed');
    const waited = (await env.currentTimeMs()) - started;
    expect(waited).toBeGreaterThanOrEqual(SANDBOX_PAYOUT_CHECK_MS);
    expect(activities.checkMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.settleMoneyOut).not.toHaveBeenCalled();
  });

  it('Live Mode: paid, then reported failed within the window: the settlement is reversed', async () => {
    const activities = mocked(payoutReversed.activities(env));
    const { opened, answered, result } = await withWorker(env, activities, (taskQueue) =>
      payoutReversed.play(env, taskQueue),
    );
    expect(opened).toMatchObject({ status: 'opened', outcome: 'completed' });
    expect(answered).toBe('failed');
    expect(result).toBe('failed');
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.reverseMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).not.toHaveBeenCalled();
  });

  it('Live Mode: a payout.failed after paid gives nothing back while the provider says paid', async () => {
    const activities = mocks({
      sent: 'completed',
      checked: 'completed',
      lateFailureMs: PAYOUT_LATE_FAILURE_MS,
    });
    const answers = await withWorker(env, activities, async (q) => {
      const { opened, handle } = await openPayout(env, q, payoutInput(randomUUID(), 'live'));
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

  it('Live Mode: ends completed when the late-failure window passes quietly', async () => {
    const activities = mocks({ sent: 'completed', lateFailureMs: PAYOUT_LATE_FAILURE_MS });
    const started = await env.currentTimeMs();
    const result = await withWorker(env, activities, async (q) =>
      (await openPayout(env, q, payoutInput(randomUUID(), 'live'))).handle.result(),
    );
    expect(result).toBe('completed');
    expect((await env.currentTimeMs()) - started).toBeGreaterThanOrEqual(PAYOUT_LATE_FAILURE_MS);
    expect(activities.reverseMoneyOut).not.toHaveBeenCalled();
  });

  it('retries a provider timeout with the same request, then settles', async () => {
    const activities = mocks({ sent: 'completed' });
    activities.sendMoneyOut
      .mockImplementationOnce(() => Promise.reject(new Error('Stripe POST /v1/payouts timed out')))
      .mockImplementationOnce(() => Promise.reject(new Error('Stripe answered HTTP 503')));
    const input = payoutInput(randomUUID());
    const result = await withWorker(env, activities, async (q) => {
      const { opened, handle } = await openPayout(env, q, input);
      expect(opened).toMatchObject({ status: 'opened', outcome: 'completed' });
      return handle.result();
    });
    expect(result).toBe('completed');
    expect(activities.sendMoneyOut).toHaveBeenCalledTimes(3);
    for (const call of activities.sendMoneyOut.mock.calls) {
      expect(call).toEqual([{ transactionId: input.transactionId }]);
    }
    expect(activities.settleMoneyOut).toHaveBeenCalledTimes(1);
  });

  it('finishes the saga exactly once on another worker after the first dies between steps', async () => {
    const activities = mocks({ sent: 'completed' });
    const input = payoutInput(randomUUID());
    const result = await killedAndRestarted(env, {
      real: activities,
      open: (taskQueue) => openPayout(env, taskQueue, input),
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
});
