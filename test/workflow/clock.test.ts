/**
 * The payment clock (src/workflows/clock.ts) on the time-skipping test server: every wait of a
 * payment workflow honours the advances of its Test Mode clock. The recorded scenarios here are
 * the `*-by-advance` replay fixtures.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { LIVE_MODE_CLOCK, NOT_WAITING_ON_A_TIMER } from '../../src/workflows/clock-shared';
import { depositStateQuery, escrowStateQuery } from '../../src/workflows/shared';
import { moneyOutStateQuery } from '../../src/workflows/money-out-shared';
import type { History } from '../support/history-json';
import {
  createTimeSkippingEnv,
  mocked,
  testDataConverter,
  withWorker,
  workflowBundle,
} from '../support/time-skipping';
import { createEngineWorker } from '../../src/worker/engine-worker';
import { paymentSinks } from '../../src/temporal/settlements';
import {
  advanceTime,
  cardDepositExpiredByAdvance,
  cashoutActivities,
  cashoutAskedAtAdvance,
  cashoutInput,
  depositActivities,
  depositInput,
  disputeExpiredByAdvance,
  escrowExpiredByAdvance,
  fakeEscrow,
  holdInput,
  openCashout,
  openDeposit,
  openHold,
  release,
  RECIPIENT,
  SEVEN_DAYS,
} from './scenarios';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

const DAY = 24 * 60 * 60;

/** A seven-day hold made now on a mocked escrow ledger. */
async function sevenDayHold(mode: 'test' | 'live' = 'test') {
  const input = {
    ...holdInput(randomUUID(), {
      expiresAt: new Date((await env.currentTimeMs()) + SEVEN_DAYS).toISOString(),
    }),
    mode,
  };
  const { ledger, activities } = fakeEscrow();
  return { input, ledger, activities: mocked(activities) };
}

/**
 * The timers of a history, to whole minutes (a timer restarted after an advance lasts what
 * remained, give or take the seconds the test took), and how each ended.
 */
function timers(history: History) {
  const events = history.events ?? [];
  const ended = (id: string) =>
    events.some((e) => e.timerFiredEventAttributes?.timerId === id)
      ? 'fired'
      : events.some((e) => e.timerCanceledEventAttributes?.timerId === id)
        ? 'canceled'
        : 'running';
  return events.flatMap((e) => {
    const started = e.timerStartedEventAttributes;
    if (!started) return [];
    const timeout = started.startToFireTimeout;
    const minutes = Math.round(Number(timeout?.seconds ?? 0) / 60);
    return [{ minutes, fate: ended(started.timerId ?? '') }];
  });
}

/** The update's refusal, as the API reads it: the validator's message. */
const refusedWith = (message: string) =>
  expect.objectContaining({
    constructor: WorkflowUpdateFailedError,
    cause: expect.objectContaining({ message }),
  });

describe('payment clock', () => {
  it('fires a hold’s expiry at once when advances pass it, and answers after the refund', async () => {
    const activities = mocked(escrowExpiredByAdvance.activities(env));
    const { answered, result, handle } = await withWorker(env, activities, (taskQueue) =>
      escrowExpiredByAdvance.play(env, taskQueue),
    );
    // Offsets accumulate: 3 days, then 7 days and a second.
    expect(answered).toEqual([{ offsetMs: 3 * DAY * 1000 }, { offsetMs: (7 * DAY + 1) * 1000 }]);
    expect(result).toEqual({ held: '0' });
    expect(activities.refundFunds).toHaveBeenCalledTimes(1);
    expect(activities.refundFunds).toHaveBeenCalledWith(
      expect.objectContaining({ reason: 'expired' }),
    );
    // The advances expired it, not a timer: the week's timer and the four days' one canceled.
    expect(timers(await handle.fetchHistory())).toEqual([
      { minutes: (7 * DAY) / 60, fate: 'canceled' },
      { minutes: (4 * DAY) / 60, fate: 'canceled' },
    ]);
  });

  it('keeps the remaining time when an advance falls short, and acts on nothing meanwhile', async () => {
    const { input, ledger, activities } = await sevenDayHold();
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await openHold(env, taskQueue, input);
      expect(await advanceTime(handle, 3 * DAY)).toEqual({ offsetMs: 3 * DAY * 1000 });
      expect(await handle.query(escrowStateQuery)).toEqual({ held: '1000', status: 'held' });
      expect(activities.refundFunds).not.toHaveBeenCalled();
      // Left alone, it expires when the four days that remain have passed, not seven.
      expect(await handle.result()).toEqual({ held: '0' });
      expect(timers(await handle.fetchHistory())).toEqual([
        { minutes: (7 * DAY) / 60, fate: 'canceled' },
        { minutes: (4 * DAY) / 60, fate: 'fired' },
      ]);
    });
    expect(ledger.refunded).toEqual([
      { refundId: expect.any(String), reason: 'expired', amount: 1000n },
    ]);
  });

  it('keeps its offset across a worker restart: rebuilt from the history, nothing stored', async () => {
    const { input, ledger, activities } = await sevenDayHold();
    const taskQueue = `wf-test-${randomUUID()}`;
    const worker = async () =>
      createEngineWorker({
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: await workflowBundle(),
        dataConverter: testDataConverter(),
        activities,
        sinks: paymentSinks,
        // Nothing cached: each workflow task rebuilds the workflow from its history.
        maxCachedWorkflows: 0,
      });
    const { handle } = await (
      await worker()
    ).runUntil(async () => {
      const opened = await openHold(env, taskQueue, input);
      expect(await advanceTime(opened.handle, 5 * DAY)).toEqual({ offsetMs: 5 * DAY * 1000 });
      return opened;
    });
    // Another worker: it replays the history, the first advance included.
    await (
      await worker()
    ).runUntil(async () => {
      expect(await advanceTime(handle, 2 * DAY + 1)).toEqual({
        offsetMs: (7 * DAY + 1) * 1000,
      });
      expect(await handle.result()).toEqual({ held: '0' });
    });
    expect(ledger.refunded).toEqual([
      { refundId: expect.any(String), reason: 'expired', amount: 1000n },
    ]);
  });

  it('accumulates advances on a payment code: short of the expiry and its grace, then past it', async () => {
    const activities = mocked(depositActivities(env, 'pending'));
    const input = depositInput(randomUUID());
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await openDeposit(env, taskQueue, input);
      expect(await advanceTime(handle, 900)).toEqual({ offsetMs: 900_000 });
      // The code's 30 minutes have passed, not the five seconds of grace after them.
      expect(await advanceTime(handle, 900)).toEqual({ offsetMs: 1_800_000 });
      expect(await handle.query(depositStateQuery)).toBe('pending');
      expect(activities.checkPaymentCode).not.toHaveBeenCalled();
      expect(await advanceTime(handle, 5)).toEqual({ offsetMs: 1_805_000 });
      // Answered after the payment acted: the provider asked, the deposit closed expired.
      expect(activities.checkPaymentCode).toHaveBeenCalledTimes(1);
      expect(activities.closeDeposit).toHaveBeenCalledWith({
        transactionId: input.transactionId,
        status: 'expired',
      });
      expect(await handle.query(depositStateQuery)).toBe('expired');
      expect(await handle.result()).toBe('expired');
    });
    expect(activities.completeDeposit).not.toHaveBeenCalled();
  });

  it('lapses a 3-D Secure wait: the payment canceled at the provider, the deposit expired', async () => {
    const activities = mocked(cardDepositExpiredByAdvance.activities(env));
    const { input, answered, result } = await withWorker(env, activities, (taskQueue) =>
      cardDepositExpiredByAdvance.play(env, taskQueue),
    );
    expect(answered).toEqual({ offsetMs: 2 * 60 * 60 * 1000 });
    expect(result).toBe('expired');
    expect(activities.cancelCardPayment).toHaveBeenCalledTimes(1);
    expect(activities.closeCardDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
      status: 'expired',
    });
    expect(activities.completeCardDeposit).not.toHaveBeenCalled();
  });

  it('loses a Test Mode dispute whose evidence deadline an advance passes', async () => {
    const activities = mocked(disputeExpiredByAdvance.activities(env));
    const { input, result } = await withWorker(env, activities, (taskQueue) =>
      disputeExpiredByAdvance.play(env, taskQueue),
    );
    expect(result).toBe('lost');
    expect(activities.closeDispute).toHaveBeenCalledWith({
      disputeId: input.disputeId,
      status: 'lost',
    });
  });

  it('asks the provider of a pending cashout when an advance passes its TTL, not before', async () => {
    const activities = mocked(cashoutAskedAtAdvance.activities(env));
    const { input, answered, result } = await withWorker(env, activities, (taskQueue) =>
      cashoutAskedAtAdvance.play(env, taskQueue),
    );
    expect(answered).toEqual({ offsetMs: 30 * 60 * 1000 });
    expect(result).toBe('failed');
    expect(activities.checkMoneyOut).toHaveBeenCalledTimes(1);
    expect(activities.giveBackMoneyOut).toHaveBeenCalledWith({
      transactionId: input.transactionId,
    });

    const still = mocked(cashoutActivities({ sent: 'pending', checked: 'pending' }));
    await withWorker(env, still, async (taskQueue) => {
      const { handle } = await openCashout(env, taskQueue, cashoutInput(randomUUID()));
      await advanceTime(handle, 10 * 60);
      expect(still.checkMoneyOut).not.toHaveBeenCalled();
      // Past the TTL: asked, still pending, so it waits another TTL (and answers meanwhile).
      await advanceTime(handle, 20 * 60);
      expect(still.checkMoneyOut).toHaveBeenCalledTimes(1);
      expect(await handle.query(moneyOutStateQuery)).toBe('pending');
      await handle.terminate();
    });
  });

  it('refuses, writing nothing, a Live Mode payment, one that waits on no timer and bad seconds', async () => {
    const live = await sevenDayHold('live');
    await withWorker(env, live.activities, async (taskQueue) => {
      const { handle } = await openHold(env, taskQueue, live.input);
      await expect(advanceTime(handle, 60)).rejects.toEqual(refusedWith(LIVE_MODE_CLOCK));
      await handle.terminate();
    });

    const { input, activities } = await sevenDayHold();
    const noExpiry = { ...input, expiresAt: null };
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await openHold(env, taskQueue, noExpiry);
      await expect(advanceTime(handle, 60)).rejects.toEqual(refusedWith(NOT_WAITING_ON_A_TIMER));
      for (const seconds of [0, 1.5, 31_536_001]) {
        await expect(advanceTime(handle, seconds)).rejects.toBeInstanceOf(
          WorkflowUpdateFailedError,
        );
      }
      await release(handle, {
        releaseId: randomUUID(),
        recipientWalletId: RECIPIENT,
        amount: null,
      });
      expect(await handle.result()).toEqual({ held: '0' });
      // A rejected update leaves no trace in the history.
      const history = await handle.fetchHistory();
      const updates = (history.events ?? []).filter(
        (e) =>
          e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name ===
          'advanceTime',
      );
      expect(updates).toEqual([]);
      // An ended payment: the server has nothing to update (the API answers 400).
      await expect(advanceTime(handle, 60)).rejects.toBeInstanceOf(WorkflowNotFoundError);
    });
  });
});
