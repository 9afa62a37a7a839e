import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import type { Activities } from '../../src/workflows/activities-types';
import { mobileMoneyDepositWorkflow } from '../../src/workflows/deposit';
import { depositUpdates, type DepositInput, type DepositOutcome } from '../../src/workflows/shared';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import {
  depositActivities,
  depositExpired,
  depositInput,
  depositPaidNotify,
  depositSync,
  openDeposit,
  openedFor,
  THIRTY_MINUTES,
} from './scenarios';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

const inputFor = () => depositInput(randomUUID());

/**
 * Typed mocks of the deposit's activities; the payment code expires 30 minutes after opening and
 * the provider answers `checked` when asked.
 */
function mocks(
  overrides: Partial<Record<keyof Activities, jest.Mock>> = {},
  checked: DepositOutcome = 'pending',
) {
  return { ...mocked(depositActivities(env, checked)), ...overrides };
}

const open = (taskQueue: string, input: DepositInput) => openDeposit(env, taskQueue, input);

describe('mobileMoneyDepositWorkflow', () => {
  it('answers with the payment code, then completes once when the payment succeeds', async () => {
    const activities = mocked(depositPaidNotify.activities(env));
    const { input, opened, answered, result } = await withWorker(env, activities, (taskQueue) =>
      depositPaidNotify.play(env, taskQueue),
    );
    expect(opened).toMatchObject({ status: 'opened', transactionId: input.transactionId });
    expect(answered).toBe('completed');
    expect(result).toBe('completed');
    expect(activities.completeDeposit).toHaveBeenCalledTimes(1);
    expect(activities.completeDeposit).toHaveBeenCalledWith({ transactionId: input.transactionId });
    expect(activities.closeDeposit).not.toHaveBeenCalled();
  });

  it('fails without moving money when the payment fails', async () => {
    const activities = mocks({}, 'failed');
    const input = inputFor();
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, input);
      expect(
        await handle.executeUpdate(depositUpdates.notify, { args: [{ status: 'failed' }] }),
      ).toBe('failed');
      expect(await handle.result()).toBe('failed');
    });
    expect(activities.closeDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
      status: 'failed',
    });
    expect(activities.completeDeposit).not.toHaveBeenCalled();
  });

  it('credits nothing on a notification that says completed while the provider says pending', async () => {
    const activities = mocks({}, 'pending');
    const input = inputFor();
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, input);
      expect(
        await handle.executeUpdate(depositUpdates.notify, { args: [{ status: 'completed' }] }),
      ).toBe('pending');
      expect(activities.checkPaymentCode).toHaveBeenCalledWith({
        mode: input.mode,
        paymentCodeId: `pmc_${input.transactionId}`,
      });
      expect(activities.completeDeposit).not.toHaveBeenCalled();
      // Unpaid to the end: the code expires as any unpaid one does.
      expect(await handle.result()).toBe('expired');
    });
    expect(activities.completeDeposit).not.toHaveBeenCalled();
    expect(activities.closeDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
      status: 'expired',
    });
  });

  it('settles on what the provider says, not on what the notification claims', async () => {
    const activities = mocks({}, 'completed');
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, inputFor());
      expect(
        await handle.executeUpdate(depositUpdates.notify, { args: [{ status: 'failed' }] }),
      ).toBe('completed');
    });
    expect(activities.completeDeposit).toHaveBeenCalledTimes(1);
    expect(activities.closeDeposit).not.toHaveBeenCalled();
  });

  it('expires an unpaid deposit when its payment code expires after 30 minutes', async () => {
    const activities = mocked(depositExpired.activities(env));
    const started = await env.currentTimeMs();
    const { input, result: outcome } = await withWorker(env, activities, (taskQueue) =>
      depositExpired.play(env, taskQueue),
    );
    expect(outcome).toBe('expired');
    expect((await env.currentTimeMs()) - started).toBeGreaterThanOrEqual(THIRTY_MINUTES);
    expect(activities.checkPaymentCode).toHaveBeenCalledTimes(1);
    expect(activities.closeDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
      status: 'expired',
    });
    expect(activities.completeDeposit).not.toHaveBeenCalled();
  });

  it('completes at expiry when the provider says the code was paid but no notification came', async () => {
    const activities = mocks({ checkPaymentCode: jest.fn(() => Promise.resolve('completed')) });
    const outcome = await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, inputFor());
      return handle.result();
    });
    expect(outcome).toBe('completed');
    expect(activities.completeDeposit).toHaveBeenCalledTimes(1);
  });

  it('completes at once when a sync finds the code paid', async () => {
    const activities = mocked(depositSync.activities(env));
    const { input, answered, result } = await withWorker(env, activities, (taskQueue) =>
      depositSync.play(env, taskQueue),
    );
    expect(answered).toBe('completed');
    expect(result).toBe('completed');
    expect(activities.checkPaymentCode).toHaveBeenCalledTimes(1);
    expect(activities.completeDeposit).toHaveBeenCalledWith({ transactionId: input.transactionId });
    expect(activities.closeDeposit).not.toHaveBeenCalled();
  });

  it('retries a provider error, then answers with the one payment code', async () => {
    let calls = 0;
    const activities = mocks(
      {
        openDeposit: jest.fn(async (input: DepositInput) => {
          calls += 1;
          if (calls < 3) throw new Error('provider answered 503');
          return openedFor(
            input,
            new Date((await env.currentTimeMs()) + THIRTY_MINUTES).toISOString(),
          );
        }),
      },
      'completed',
    );
    const input = inputFor();
    await withWorker(env, activities, async (taskQueue) => {
      const { opened, handle } = await open(taskQueue, input);
      expect(opened).toMatchObject({ status: 'opened' });
      await handle.executeUpdate(depositUpdates.notify, { args: [{ status: 'completed' }] });
    });
    expect(activities.openDeposit).toHaveBeenCalledTimes(3);
  });

  it('answers a provider refusal as a decline and ends failed', async () => {
    const activities = mocks({
      openDeposit: jest.fn(() =>
        Promise.reject(
          ApplicationFailure.nonRetryable(
            'Provider failed to create the payment code',
            'provider_refused',
          ),
        ),
      ),
    });
    await withWorker(env, activities, async (taskQueue) => {
      const { opened, handle } = await open(taskQueue, inputFor());
      expect(opened).toEqual({
        status: 'declined',
        code: 'provider_refused',
        detail: 'Provider failed to create the payment code',
      });
      expect(await handle.result()).toBe('failed');
    });
    expect(activities.openDeposit).toHaveBeenCalledTimes(1);
    expect(activities.completeDeposit).not.toHaveBeenCalled();
  });

  it('credits once when the same notification arrives twice', async () => {
    const activities = mocks({}, 'completed');
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, inputFor());
      const both = await Promise.all([
        handle.executeUpdate(depositUpdates.notify, { args: [{ status: 'completed' }] }),
        handle.executeUpdate(depositUpdates.notify, { args: [{ status: 'completed' }] }),
      ]);
      expect(both).toEqual(['completed', 'completed']);
      expect(await handle.result()).toBe('completed');
    });
    expect(activities.completeDeposit).toHaveBeenCalledTimes(1);
  });

  it('credits once when a sync races the notification', async () => {
    const activities = mocks({ checkPaymentCode: jest.fn(() => Promise.resolve('completed')) });
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, inputFor());
      const results = await Promise.all([
        handle.executeUpdate(depositUpdates.sync),
        handle.executeUpdate(depositUpdates.notify, { args: [{ status: 'completed' }] }),
        handle.executeUpdate(depositUpdates.sync),
      ]);
      expect(results).toEqual(['completed', 'completed', 'completed']);
      expect(await handle.result()).toBe('completed');
    });
    expect(activities.completeDeposit).toHaveBeenCalledTimes(1);
    expect(activities.closeDeposit).not.toHaveBeenCalled();
  });

  it('answers a sync that finds nothing new during a settlement with that settlement', async () => {
    let release: () => void = () => undefined;
    const slowLedger = new Promise<void>((resolve) => (release = resolve));
    const activities = mocks({
      // The notification's look finds the code paid; the sync's finds nothing new.
      checkPaymentCode: jest
        .fn()
        .mockResolvedValueOnce('completed')
        .mockImplementation(() => Promise.resolve('pending')),
      completeDeposit: jest.fn(() => slowLedger),
    });
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, inputFor());
      const notified = handle.executeUpdate(depositUpdates.notify, {
        args: [{ status: 'completed' }],
      });
      while (activities.completeDeposit.mock.calls.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const synced = handle.executeUpdate(depositUpdates.sync);
      while (activities.checkPaymentCode.mock.calls.length < 2) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      release();
      expect(await Promise.all([notified, synced])).toEqual(['completed', 'completed']);
    });
    expect(activities.completeDeposit).toHaveBeenCalledTimes(1);
  });
});

describe('mobileMoneyDepositWorkflow when the provider cannot tell', () => {
  const refused = () =>
    Promise.reject(ApplicationFailure.nonRetryable('No payment code', 'provider_refused'));

  it('answers a sync and a notification with the outcome as it stands when the provider refuses the check', async () => {
    const activities = mocks({ checkPaymentCode: jest.fn(refused) });
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, inputFor());
      expect(await handle.executeUpdate(depositUpdates.sync)).toBe('pending');
      expect(
        await handle.executeUpdate(depositUpdates.notify, { args: [{ status: 'completed' }] }),
      ).toBe('pending');
      // The reconciliation and the expiry still cover it: the last look cannot tell either.
      expect(await handle.result()).toBe('expired');
    });
    expect(activities.checkPaymentCode).toHaveBeenCalledTimes(3);
    expect(activities.completeDeposit).not.toHaveBeenCalled();
  });

  it('expires the deposit after the grace when the provider refuses the last check', async () => {
    const activities = mocks({ checkPaymentCode: jest.fn(refused) });
    const input = inputFor();
    const outcome = await withWorker(env, activities, async (taskQueue) =>
      (await open(taskQueue, input)).handle.result(),
    );
    expect(outcome).toBe('expired');
    expect(activities.checkPaymentCode).toHaveBeenCalledTimes(1);
    expect(activities.closeDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
      status: 'expired',
    });
    expect(activities.completeDeposit).not.toHaveBeenCalled();
  });

  it('stops retrying a provider that keeps failing, and expires the deposit', async () => {
    const activities = mocks({
      checkPaymentCode: jest.fn(() => Promise.reject(new Error('provider answered 502'))),
    });
    const outcome = await withWorker(env, activities, async (taskQueue) =>
      (await open(taskQueue, inputFor())).handle.result(),
    );
    expect(outcome).toBe('expired');
    expect(activities.checkPaymentCode).toHaveBeenCalledTimes(8);
    expect(activities.completeDeposit).not.toHaveBeenCalled();
  });

  it('refuses the deposit when the provider stays unreachable through every attempt', async () => {
    const activities = mocks({
      openDeposit: jest.fn(() => Promise.reject(new Error('connect ECONNREFUSED'))),
    });
    const input = inputFor();
    // Started without the open update, so that the test server skips the retries' backoff.
    const outcome = await withWorker(env, activities, (taskQueue) =>
      env.client.workflow.execute(mobileMoneyDepositWorkflow, {
        workflowId: `deposit-${input.transactionId}`,
        taskQueue,
        args: [input],
      }),
    );
    expect(outcome).toBe('failed');
    expect(activities.openDeposit).toHaveBeenCalledTimes(8);
    expect(activities.completeDeposit).not.toHaveBeenCalled();
    expect(activities.closeDeposit).not.toHaveBeenCalled();
  });
});
