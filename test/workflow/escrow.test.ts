import { WorkflowNotFoundError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal } from '@temporalio/proto';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { escrowStateQuery, SearchAttributes, type HoldInput } from '../../src/workflows/shared';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import { within } from '../support/wait';
import {
  escrowExpired,
  escrowHoldDeclined,
  escrowPartialReleaseRefund,
  escrowReleaseToAnotherWallet,
  fakeEscrow,
  holdInput,
  OTHER_WALLET,
  openHold,
  RECIPIENT,
  refund as sendRefund,
  release as sendRelease,
  SEVEN_DAYS,
  type EscrowHandle,
} from './scenarios';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

const inputFor = (amount = '1000', expiresAt: string | null = null) =>
  holdInput(randomUUID(), { amount, expiresAt });

/** The in-memory escrow ledger of the scenarios, its activities as `jest.fn`s. */
function mockedEscrow(options: { stepMs?: number } = {}) {
  const { ledger, activities } = fakeEscrow(options);
  return { ledger, activities: mocked(activities) };
}

type EscrowMocks = ReturnType<typeof mockedEscrow>['activities'];

function run<R>(activities: EscrowMocks, fn: (taskQueue: string) => Promise<R>): Promise<R> {
  return withWorker(env, activities, fn);
}

const hold = (taskQueue: string, input: HoldInput) => openHold(env, taskQueue, input);

const release = (handle: EscrowHandle, amount: string | null, releaseId = randomUUID()) =>
  sendRelease(handle, { releaseId, recipientWalletId: RECIPIENT, amount });

const refund = (handle: EscrowHandle, refundId = randomUUID()) =>
  sendRefund(handle, { refundId, reason: 'requested' });

describe('escrowWorkflow', () => {
  it('releases in full and completes with nothing held', async () => {
    const { ledger, activities } = mockedEscrow();
    const input = inputFor('1000');
    await run(activities, async (taskQueue) => {
      const { held, handle } = await hold(taskQueue, input);
      expect(held).toEqual({ status: 'done', transactionId: input.holdId, remaining: '1000' });
      expect(await handle.query(escrowStateQuery)).toEqual({ held: '1000', status: 'held' });
      const releaseId = randomUUID();
      expect(await release(handle, null, releaseId)).toEqual({
        status: 'done',
        transactionId: releaseId,
        remaining: '0',
      });
      expect(await handle.result()).toEqual({ held: '0' });
    });
    expect(activities.holdFunds).toHaveBeenCalledTimes(1);
    expect(activities.holdFunds).toHaveBeenCalledWith(input);
    expect(activities.releaseFunds).toHaveBeenCalledTimes(1);
    expect(activities.refundFunds).not.toHaveBeenCalled();
    expect(ledger.released).toEqual([{ releaseId: expect.any(String), amount: 1000n }]);
    expect(ledger.held).toBe(0n);
  });

  it('ends at once a new run of a hold released before (a retried request), holding nothing', async () => {
    const { ledger, activities } = mockedEscrow();
    const input = inputFor('1000');
    await run(activities, async (taskQueue) => {
      const first = await hold(taskQueue, input);
      expect(await release(first.handle, null)).toMatchObject({ status: 'done', remaining: '0' });
      expect(await first.handle.result()).toEqual({ held: '0' });
      // The same hold id again: its workflow has ended, so update-with-start runs it anew.
      const again = await hold(taskQueue, input);
      expect(again.held).toEqual({ status: 'done', transactionId: input.holdId, remaining: '0' });
      const ended = await within(again.handle.result(), 10_000, 'still running');
      expect(ended).toEqual({ held: '0' });
      expect(again.handle.workflowId).toBe(first.handle.workflowId);
    });
    expect(activities.holdFunds).toHaveBeenCalledTimes(2);
    expect(ledger.released.map((r) => r.amount)).toEqual([1000n]);
    expect(ledger.held).toBe(0n);
    expect(activities.refundFunds).not.toHaveBeenCalled();
  });

  it('releases partially until nothing is held, and ends with the last release', async () => {
    const { ledger, activities } = mockedEscrow();
    await run(activities, async (taskQueue) => {
      const { handle } = await hold(taskQueue, inputFor('1000'));
      expect(await release(handle, '300')).toMatchObject({ status: 'done', remaining: '700' });
      expect(await release(handle, '300')).toMatchObject({ status: 'done', remaining: '400' });
      expect(await handle.query(escrowStateQuery)).toEqual({ held: '400', status: 'held' });
      expect((await handle.describe()).status.name).toBe('RUNNING');
      expect(await release(handle, '400')).toMatchObject({ status: 'done', remaining: '0' });
      expect(await handle.result()).toEqual({ held: '0' });
      expect((await handle.describe()).status.name).toBe('COMPLETED');
    });
    expect(ledger.released.map((r) => r.amount)).toEqual([300n, 300n, 400n]);
    expect(activities.refundFunds).not.toHaveBeenCalled();
  });

  it('releases all to a wallet the hold did not name, which the payment then lists', async () => {
    const { ledger, activities } = mockedEscrow();
    const { handle, answered, result } = await run(activities, (taskQueue) =>
      escrowReleaseToAnotherWallet.play(env, taskQueue),
    );
    expect(answered).toMatchObject({ status: 'done', remaining: '0' });
    expect(result).toEqual({ held: '0' });
    expect(ledger.released.map((r) => r.amount)).toEqual([1000n]);
    const { typedSearchAttributes } = await handle.describe();
    expect(typedSearchAttributes.get(SearchAttributes.WalletId)).toContain(OTHER_WALLET);
  });

  it('refunds what is left after a partial release', async () => {
    const { ledger, activities } = mockedEscrow();
    const { answered, result } = await run(activities, (taskQueue) =>
      escrowPartialReleaseRefund.play(env, taskQueue),
    );
    const [released, refunded] = answered;
    expect(released).toMatchObject({ status: 'done', remaining: '600' });
    expect(refunded).toEqual({
      status: 'done',
      transactionId: ledger.refunded[0]?.refundId,
      remaining: '0',
    });
    expect(result).toEqual({ held: '0' });
    expect(ledger.released.map((r) => r.amount)).toEqual([400n]);
    expect(ledger.refunded).toEqual([
      { refundId: expect.any(String), reason: 'requested', amount: 600n },
    ]);
    expect(ledger.paidOut()).toBe(1000n);
  });

  it('refunds automatically when the hold expires after 7 days, in milliseconds of real time', async () => {
    const { ledger, activities } = mockedEscrow();
    const startedAt = await env.currentTimeMs();
    const input = inputFor('1000', new Date(startedAt + SEVEN_DAYS).toISOString());
    const wallClock = Date.now();
    const result = await run(activities, async (taskQueue) => {
      const { handle } = await hold(taskQueue, input);
      return handle.result();
    });
    expect(result).toEqual({ held: '0' });
    expect((await env.currentTimeMs()) - startedAt).toBeGreaterThanOrEqual(SEVEN_DAYS);
    expect(Date.now() - wallClock).toBeLessThan(10_000);
    expect(activities.refundFunds).toHaveBeenCalledTimes(1);
    expect(activities.refundFunds).toHaveBeenCalledWith({
      holdId: input.holdId,
      refundId: expect.any(String),
      reason: 'expired',
    });
    expect(ledger.refunded).toEqual([
      { refundId: expect.any(String), reason: 'expired', amount: 1000n },
    ]);
    expect(activities.releaseFunds).not.toHaveBeenCalled();
  });

  it('refunds only what a partial release left when the hold expires', async () => {
    const { ledger, activities } = mockedEscrow();
    const startedAt = await env.currentTimeMs();
    const { answered, result } = await run(activities, (taskQueue) =>
      escrowExpired.play(env, taskQueue),
    );
    expect(answered).toMatchObject({ status: 'done', remaining: '750' });
    expect(result).toEqual({ held: '0' });
    expect((await env.currentTimeMs()) - startedAt).toBeGreaterThanOrEqual(SEVEN_DAYS);
    expect(ledger.refunded).toEqual([
      { refundId: expect.any(String), reason: 'expired', amount: 750n },
    ]);
    expect(ledger.paidOut()).toBe(1000n);
  });

  it('answers a decline while the hold is open, and the server rejects updates once it has ended', async () => {
    const { ledger, activities } = mockedEscrow();
    await run(activities, async (taskQueue) => {
      const { handle } = await hold(taskQueue, inputFor('1000'));
      expect(await release(handle, '1500')).toEqual({
        status: 'declined',
        code: 'invalid_request',
        detail: 'Release amount exceeds the held amount',
      });
      expect(await handle.query(escrowStateQuery)).toEqual({ held: '1000', status: 'held' });
      expect(await release(handle, null)).toMatchObject({ status: 'done', remaining: '0' });
      expect(await handle.result()).toEqual({ held: '0' });
      // The workflow has completed: the server itself refuses the update, no handler runs.
      await expect(release(handle, '1')).rejects.toBeInstanceOf(WorkflowNotFoundError);
      await expect(refund(handle)).rejects.toBeInstanceOf(WorkflowNotFoundError);
    });
    // The declined release and the rejected updates moved nothing.
    expect(activities.releaseFunds).toHaveBeenCalledTimes(2);
    expect(activities.refundFunds).not.toHaveBeenCalled();
    expect(ledger.released.map((r) => r.amount)).toEqual([1000n]);
  });

  it('retries a transient release failure and records the release once', async () => {
    const { ledger, activities } = mockedEscrow();
    const apply = activities.releaseFunds.getMockImplementation()!;
    let calls = 0;
    activities.releaseFunds.mockImplementation((input) => {
      calls += 1;
      if (calls <= 2) return Promise.reject(new Error('connection reset by peer'));
      return apply(input);
    });
    await run(activities, async (taskQueue) => {
      const { handle } = await hold(taskQueue, inputFor('1000'));
      expect(await release(handle, null)).toMatchObject({ status: 'done', remaining: '0' });
      expect(await handle.result()).toEqual({ held: '0' });
    });
    expect(activities.releaseFunds).toHaveBeenCalledTimes(3);
    expect(ledger.released.map((r) => r.amount)).toEqual([1000n]);
  });

  it('answers a declined hold (insufficient funds) and ends without moving money', async () => {
    const { ledger, activities } = mockedEscrow();
    activities.holdFunds.mockImplementation(escrowHoldDeclined.activities(env).holdFunds);
    const { held, result } = await run(activities, (taskQueue) =>
      escrowHoldDeclined.play(env, taskQueue),
    );
    expect(held).toEqual({
      status: 'declined',
      code: 'insufficient_funds',
      detail: 'Insufficient funds',
    });
    expect(result).toEqual({ held: '0' });
    expect(activities.holdFunds).toHaveBeenCalledTimes(1);
    expect(activities.releaseFunds).not.toHaveBeenCalled();
    expect(activities.refundFunds).not.toHaveBeenCalled();
    expect(ledger.paidOut()).toBe(0n);
  });

  it('runs racing releases and refunds one at a time and never pays out more than was held', async () => {
    const { ledger, activities } = mockedEscrow({ stepMs: 50 });
    const results = await run(activities, async (taskQueue) => {
      const { handle } = await hold(taskQueue, inputFor('1000'));
      const results = await Promise.all([
        release(handle, '600'),
        refund(handle),
        release(handle, '600'),
        release(handle, null),
        refund(handle),
      ]);
      expect(await handle.result()).toEqual({ held: '0' });
      return results;
    });
    expect(ledger.overlaps).toEqual([]);
    expect(ledger.paidOut()).toBe(1000n);
    expect(ledger.paidOut()).toBeLessThanOrEqual(ledger.heldAtStart);
    expect(ledger.held).toBe(0n);
    const done = results.filter((r) => r.status === 'done');
    const declined = results.filter((r) => r.status === 'declined');
    expect(done.length).toBeGreaterThanOrEqual(1);
    expect(done.length + declined.length).toBe(results.length);
    for (const d of declined) expect(d).toMatchObject({ code: 'invalid_request' });
    // Every step the ledger made is answered `done`, and made once: a step run again (a local
    // activity of a failed workflow task) answers as the step already made.
    const made = [
      ...ledger.released.map((r) => r.releaseId),
      ...ledger.refunded.map((r) => r.refundId),
    ];
    expect(new Set(made).size).toBe(made.length);
    const answered = done.flatMap((r) => (r.status === 'done' ? [r.transactionId] : []));
    expect(answered.sort()).toEqual(made.sort());
  });

  it('answers a step run again when the server refuses the workflow task that would end the hold', async () => {
    // The release empties the hold while a refund reaches the server. The time-skipping server
    // fails the workflow task that ran the release (a local activity) and would end the workflow,
    // so that the workflow sees the refund: the next task runs the release again.
    const { ledger, activities } = mockedEscrow();
    const apply = activities.releaseFunds.getMockImplementation()!;
    let releasing!: () => void;
    const started = new Promise<void>((resolve) => (releasing = resolve));
    let refundSent!: () => void;
    const sent = new Promise<void>((resolve) => (refundSent = resolve));
    activities.releaseFunds.mockImplementation(async (input) => {
      releasing();
      await sent;
      return apply(input);
    });
    await run(activities, async (taskQueue) => {
      const { handle } = await hold(taskQueue, inputFor('1000'));
      const released = release(handle, null);
      await started;
      const refunded = refund(handle);
      // Long enough for the refund to reach the server while the release's task is open.
      await delay(300);
      refundSent();
      expect(await released).toMatchObject({ status: 'done', remaining: '0' });
      expect(await refunded).toMatchObject({ status: 'declined', code: 'invalid_request' });
      expect(await handle.result()).toEqual({ held: '0' });
      const { events } = await handle.fetchHistory();
      expect(events?.map((e) => e.workflowTaskFailedEventAttributes?.cause)).toContain(
        temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
      );
    });
    expect(activities.releaseFunds).toHaveBeenCalledTimes(2);
    expect(activities.refundFunds).toHaveBeenCalledTimes(1);
    expect(ledger.released.map((r) => r.amount)).toEqual([1000n]);
    expect(ledger.refunded).toEqual([]);
  });
});
