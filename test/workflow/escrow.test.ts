import { ApplicationFailure } from '@temporalio/common';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Activities } from '../../workflows/activities-types';
import { escrowWorkflow } from '../../workflows/escrow';
import {
  escrowStateQuery,
  escrowUpdates,
  escrowWorkflowId,
  type EscrowStepResult,
  type HoldInput,
  type RefundRequest,
  type ReleaseRequest,
} from '../../workflows/shared';
import { createTimeSkippingEnv, withWorker } from '../support/time-skipping';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

const SEVEN_DAYS = 7 * 24 * 60 * 60 * 1000;
const RECIPIENT = 'w-recipient';

function inputFor(amount = '1000', expiresAt: string | null = null): HoldInput {
  return {
    holdId: randomUUID(),
    applicationId: 'app',
    mode: 'test',
    walletId: 'w-sender',
    amount,
    description: 'order 42',
    recipientWalletId: RECIPIENT,
    expiresAt,
  };
}

const exceedsHeld = () =>
  ApplicationFailure.nonRetryable('Release amount exceeds the held amount', 'invalid_request');
const notHeld = () =>
  ApplicationFailure.nonRetryable(
    'The escrow transaction is not in held status',
    'invalid_request',
  );

/**
 * The escrow activities as a small in-memory ledger of one hold: what is held, what went out
 * (released or refunded), and whether two money steps ever ran at the same time. Each step
 * takes a few real milliseconds (`stepMs`), so that racing updates would overlap if the
 * workflow let them.
 */
function fakeEscrow(options: { stepMs?: number } = {}) {
  const stepMs = options.stepMs ?? 5;
  const ledger = {
    held: 0n,
    heldAtStart: 0n,
    released: [] as { releaseId: string; amount: bigint }[],
    refunded: [] as { refundId: string; reason: RefundRequest['reason']; amount: bigint }[],
    /** Steps that started while another was still running: must stay empty. */
    overlaps: [] as string[],
    paidOut: () =>
      [...ledger.released, ...ledger.refunded].reduce((sum, { amount }) => sum + amount, 0n),
  };
  let running: string | null = null;

  /** One money step: records an overlap, waits a little, then applies `apply` atomically. */
  async function step(name: string, apply: () => EscrowStepResult): Promise<EscrowStepResult> {
    if (running !== null) ledger.overlaps.push(`${name} started while ${running} was running`);
    running = name;
    try {
      await delay(stepMs);
      return apply();
    } finally {
      running = null;
    }
  }

  const activities = {
    holdFunds: jest.fn((input: HoldInput): Promise<EscrowStepResult> =>
      step(`hold ${input.holdId}`, () => {
        ledger.held = BigInt(input.amount);
        ledger.heldAtStart = ledger.held;
        return { status: 'done', transactionId: input.holdId, remaining: input.amount };
      }),
    ),
    releaseFunds: jest.fn((input: ReleaseRequest & { holdId: string }): Promise<EscrowStepResult> =>
      step(`release ${input.releaseId}`, () => {
        if (ledger.held === 0n) throw notHeld();
        const amount = input.amount === null ? ledger.held : BigInt(input.amount);
        if (amount > ledger.held) throw exceedsHeld();
        ledger.held -= amount;
        ledger.released.push({ releaseId: input.releaseId, amount });
        return {
          status: 'done',
          transactionId: input.releaseId,
          remaining: ledger.held.toString(),
        };
      }),
    ),
    refundFunds: jest.fn((input: RefundRequest & { holdId: string }): Promise<EscrowStepResult> =>
      step(`refund ${input.refundId}`, () => {
        if (ledger.held === 0n) throw notHeld();
        ledger.refunded.push({
          refundId: input.refundId,
          reason: input.reason,
          amount: ledger.held,
        });
        ledger.held = 0n;
        return { status: 'done', transactionId: input.refundId, remaining: '0' };
      }),
    ),
  };
  return { ledger, activities };
}

type EscrowMocks = ReturnType<typeof fakeEscrow>['activities'];

function run<R>(activities: EscrowMocks, fn: (taskQueue: string) => Promise<R>): Promise<R> {
  return withWorker(env, activities as unknown as Partial<Activities>, fn);
}

/** Starts the hold's workflow with the `hold` update, as the API does. */
async function hold(taskQueue: string, input: HoldInput) {
  const start = new WithStartWorkflowOperation(escrowWorkflow, {
    workflowId: escrowWorkflowId(input.holdId),
    taskQueue,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const held = await env.client.workflow.executeUpdateWithStart(escrowUpdates.hold, {
    startWorkflowOperation: start,
  });
  return { held, handle: await start.workflowHandle() };
}

type EscrowHandle = Awaited<ReturnType<typeof hold>>['handle'];

const release = (handle: EscrowHandle, amount: string | null, releaseId = randomUUID()) =>
  handle.executeUpdate(escrowUpdates.release, {
    args: [{ releaseId, recipientWalletId: RECIPIENT, amount }],
  });

const refund = (handle: EscrowHandle, refundId = randomUUID()) =>
  handle.executeUpdate(escrowUpdates.refund, { args: [{ refundId, reason: 'requested' }] });

describe('escrowWorkflow', () => {
  it('releases in full and completes with nothing held', async () => {
    const { ledger, activities } = fakeEscrow();
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

  it('releases partially until nothing is held, and ends with the last release', async () => {
    const { ledger, activities } = fakeEscrow();
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

  it('refunds what is left after a partial release', async () => {
    const { ledger, activities } = fakeEscrow();
    await run(activities, async (taskQueue) => {
      const { handle } = await hold(taskQueue, inputFor('1000'));
      expect(await release(handle, '400')).toMatchObject({ status: 'done', remaining: '600' });
      const refundId = randomUUID();
      expect(await refund(handle, refundId)).toEqual({
        status: 'done',
        transactionId: refundId,
        remaining: '0',
      });
      expect(await handle.result()).toEqual({ held: '0' });
    });
    expect(ledger.released.map((r) => r.amount)).toEqual([400n]);
    expect(ledger.refunded).toEqual([
      { refundId: expect.any(String), reason: 'requested', amount: 600n },
    ]);
    expect(ledger.paidOut()).toBe(1000n);
  });

  it('refunds automatically when the hold expires after 7 days, in milliseconds of real time', async () => {
    const { ledger, activities } = fakeEscrow();
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
    const { ledger, activities } = fakeEscrow();
    const startedAt = await env.currentTimeMs();
    const input = inputFor('1000', new Date(startedAt + SEVEN_DAYS).toISOString());
    await run(activities, async (taskQueue) => {
      const { handle } = await hold(taskQueue, input);
      expect(await release(handle, '250')).toMatchObject({ status: 'done', remaining: '750' });
      expect(await handle.result()).toEqual({ held: '0' });
    });
    expect((await env.currentTimeMs()) - startedAt).toBeGreaterThanOrEqual(SEVEN_DAYS);
    expect(ledger.refunded).toEqual([
      { refundId: expect.any(String), reason: 'expired', amount: 750n },
    ]);
    expect(ledger.paidOut()).toBe(1000n);
  });

  it('answers a decline while the hold is open, and the server rejects updates once it has ended', async () => {
    const { ledger, activities } = fakeEscrow();
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
    const { ledger, activities } = fakeEscrow();
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
    const { ledger, activities } = fakeEscrow();
    activities.holdFunds.mockImplementation(() =>
      Promise.reject(ApplicationFailure.nonRetryable('Insufficient funds', 'insufficient_funds')),
    );
    await run(activities, async (taskQueue) => {
      const { held, handle } = await hold(taskQueue, inputFor('1000'));
      expect(held).toEqual({
        status: 'declined',
        code: 'insufficient_funds',
        detail: 'Insufficient funds',
      });
      expect(await handle.result()).toEqual({ held: '0' });
    });
    expect(activities.holdFunds).toHaveBeenCalledTimes(1);
    expect(activities.releaseFunds).not.toHaveBeenCalled();
    expect(activities.refundFunds).not.toHaveBeenCalled();
    expect(ledger.paidOut()).toBe(0n);
  });

  it('runs racing releases and refunds one at a time and never pays out more than was held', async () => {
    const { ledger, activities } = fakeEscrow({ stepMs: 50 });
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
    // Exactly one step emptied the hold; every step after it was declined, none paid out twice.
    expect(done.filter((r) => r.status === 'done' && r.remaining === '0')).toHaveLength(1);
  });
});
