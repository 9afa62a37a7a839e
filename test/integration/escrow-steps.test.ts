import { ApplicationFailure } from '@temporalio/common';
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { createEscrowActivities } from '../../src/activities/escrow';
import { updateApplication } from '../../src/db/applications';
import type { DatabasePool } from '../../src/db/pool';
import { setWalletActive } from '../../src/db/wallets';
import type { Caller } from '../../src/domain/types';
import type { EscrowStepResult, HoldInput } from '../../src/workflows/shared';
import { claimIdempotencyKey } from '../../src/db/idempotency';
import { findTransaction, transactionAnswer, transactionRecord } from '../../src/db/transactions';
import { transactionEventData } from '../../src/activities/events';
import {
  assertLedgerInvariant,
  balanceOf,
  createCaller,
  createTestDatabase,
  eventsOf,
  insertFundedWallet,
  roundTripsOf,
  writtenAtDatabaseTime,
  systemBalance,
  writtenFor,
} from '../support/database';
import { hashOf } from '../support/steps';

let pool: DatabasePool;
let caller: Caller;
let other: Caller;
let steps: ReturnType<typeof createEscrowActivities>;
/** The system accounts `steps` has seen, shared with the other processes' steps of a test. */
const systemAccounts = new Map<string, string>();

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  caller = await createCaller(pool, 'escrow steps');
  other = await createCaller(pool, 'another');
  steps = createEscrowActivities({ pool, systemAccounts });
});
afterAll(async () => pool?.end());

/** A hold of `amount` minor units from a new wallet funded with 10 000, and a recipient. */
async function held(amount: bigint) {
  const input: HoldInput = {
    holdId: randomUUID(),
    applicationId: caller.applicationId,
    mode: caller.mode,
    walletId: await insertFundedWallet(pool, caller, 'SLE', 10_000n),
    amount: amount.toString(),
    description: 'escrow steps',
    recipientWalletId: null,
    expiresAt: null,
  };
  const made = await steps.holdFunds(input);
  expect(made).toMatchObject({ status: 'done', transactionId: input.holdId });
  // The helper funds every wallet it makes: the recipient starts at 1.
  const recipient = await insertFundedWallet(pool, caller, 'SLE', 1n);
  return { input, recipient };
}

const holdState = (id: string) =>
  pool.one(sql.type(z.object({ status: z.string(), escrow_amount: z.bigint() }))`
    SELECT status, escrow_amount FROM transactions WHERE id = ${id}`);

const declineOf = (step: Promise<unknown>) =>
  step.then(
    () => null,
    (error: unknown) => {
      expect(error).toBeInstanceOf(ApplicationFailure);
      return (error as ApplicationFailure).type;
    },
  );

/**
 * Runs a step that must take one round trip (one statement), checks that it answers with the
 * row it wrote as that row reads back, at the database's time, and answers that row.
 */
async function madeAtOnce(
  run: () => Promise<EscrowStepResult>,
  id: string,
  remaining: string,
  answered = false,
) {
  let made: EscrowStepResult | undefined;
  const at = await writtenAtDatabaseTime(pool, id, async () => {
    expect(await roundTripsOf(async () => (made = await run()))).toBe(1);
  });
  const stored = await findTransaction(pool, id);
  expect(made).toEqual({
    status: 'done',
    transactionId: id,
    remaining,
    transaction: stored && transactionRecord(stored),
    ...(answered ? { answered: true } : {}),
  });
  expect(stored).toMatchObject({ created_at: at, updated_at: at });
  expect(await eventsOf(pool, id)).toEqual([
    {
      type: expect.any(String),
      data: expect.objectContaining(transactionEventData(stored!)),
    },
  ]);
  return stored;
}

describe('escrow steps, each one database transaction', () => {
  it('releases part with the fee the application has now, then refunds the rest', async () => {
    await updateApplication(pool, caller.applicationId, { escrowFeeBps: 0, escrowFeeFixed: 0n });
    const { input, recipient } = await held(3_000n);
    // Changed after the hold: the release takes the fee as it is at the release.
    await updateApplication(pool, caller.applicationId, { escrowFeeBps: 250, escrowFeeFixed: 10n });
    const fees = await systemBalance(pool, caller.applicationId, 'application_fees', 'SLE');

    const releaseId = randomUUID();
    const release = await steps.releaseFunds({
      holdId: input.holdId,
      releaseId,
      recipientWalletId: recipient,
      amount: '1000',
    });
    expect(release).toMatchObject({ status: 'done', transactionId: releaseId, remaining: '2000' });
    expect(await holdState(input.holdId)).toEqual({ status: 'held', escrow_amount: 2_000n });
    expect(await balanceOf(pool, recipient)).toBe(1n + 1_000n - 35n);
    expect(await systemBalance(pool, caller.applicationId, 'application_fees', 'SLE')).toBe(
      fees + 35n,
    );

    const refundId = randomUUID();
    const refund = await steps.refundFunds({
      holdId: input.holdId,
      refundId,
      reason: 'requested',
    });
    expect(refund).toMatchObject({ status: 'done', transactionId: refundId, remaining: '0' });
    expect(await holdState(input.holdId)).toEqual({ status: 'reversed', escrow_amount: 0n });
    expect(await balanceOf(pool, input.walletId)).toBe(10_000n - 1_000n);
    await assertLedgerInvariant(pool);
  });

  it('a retried step answers with the step made and moves nothing more', async () => {
    const { input, recipient } = await held(500n);
    const again = await steps.holdFunds(input);
    expect(again).toMatchObject({ status: 'done', transactionId: input.holdId, remaining: '500' });
    const release = {
      holdId: input.holdId,
      releaseId: randomUUID(),
      recipientWalletId: recipient,
      amount: null,
    };
    const first = await steps.releaseFunds(release);
    const second = await steps.releaseFunds(release);
    expect(second).toMatchObject({ status: 'done', transactionId: release.releaseId });
    expect(second).toEqual(first);
    expect(await holdState(input.holdId)).toEqual({ status: 'completed', escrow_amount: 0n });
    expect(await balanceOf(pool, input.walletId)).toBe(9_500n);
    const written = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions WHERE parent_id = ${input.holdId}`);
    expect(written).toBe(1);
    await assertLedgerInvariant(pool);
  });

  it('declines a release to a wallet that is missing, another application’s or disabled', async () => {
    const { input, recipient } = await held(700n);
    const foreign = await insertFundedWallet(pool, other, 'SLE', 1n);
    await setWalletActive(pool, recipient, false);
    const releaseTo = (recipientWalletId: string) =>
      declineOf(
        steps.releaseFunds({
          holdId: input.holdId,
          releaseId: randomUUID(),
          recipientWalletId,
          amount: null,
        }),
      );
    expect(await releaseTo(randomUUID())).toBe('wallet_not_found');
    expect(await releaseTo(foreign)).toBe('wallet_forbidden');
    expect(await releaseTo(recipient)).toBe('wallet_disabled');
    expect(await holdState(input.holdId)).toEqual({ status: 'held', escrow_amount: 700n });
    expect(await balanceOf(pool, recipient)).toBe(1n);
  });

  it('holds from a wallet seen before in one statement, which writes nothing for a decline', async () => {
    const { input, recipient } = await held(1_000n);
    const hold = (change: Partial<HoldInput>) => ({ ...input, holdId: randomUUID(), ...change });

    const key = `key-${randomUUID()}`;
    const claim = await claimIdempotencyKey(pool, caller, key, hashOf(key));
    if (claim.kind !== 'claimed') throw new Error(`expected a fresh claim, got ${claim.kind}`);
    const named = hold({
      recipientWalletId: recipient,
      amount: '2000',
      answer: { key, claimedAt: claim.claimedAt },
    });
    const stored = await madeAtOnce(() => steps.holdFunds(named), named.holdId, '2000', true);
    // The answer stored with it has the same time as the record.
    expect(await claimIdempotencyKey(pool, caller, key, hashOf(key))).toEqual({
      kind: 'replay',
      status: 200,
      body: transactionAnswer(stored!),
    });
    expect(stored).toMatchObject({
      status: 'held',
      escrow_amount: 2_000n,
      recipient_wallet_id: recipient,
    });
    expect(await balanceOf(pool, input.walletId)).toBe(7_000n);
    // Its retry is found made (the usual way) and moves nothing more.
    expect(await steps.holdFunds(named)).toMatchObject({ status: 'done', remaining: '2000' });

    const tooMuch = hold({ amount: '7001' });
    expect(await declineOf(steps.holdFunds(tooMuch))).toBe('insufficient_funds');
    await setWalletActive(pool, recipient, false);
    const toDisabled = hold({ recipientWalletId: recipient });
    expect(await declineOf(steps.holdFunds(toDisabled))).toBe('wallet_disabled');
    await setWalletActive(pool, recipient, true);
    const foreign = hold({ applicationId: other.applicationId });
    expect(await declineOf(steps.holdFunds(foreign))).toBe('wallet_forbidden');
    for (const declined of [tooMuch, toDisabled, foreign]) {
      expect(await writtenFor(pool, declined.holdId)).toBe(0);
    }
    expect(await balanceOf(pool, input.walletId)).toBe(7_000n);
    await assertLedgerInvariant(pool);
  });

  it('takes five round trips a step the usual way once the system accounts are known', async () => {
    await updateApplication(pool, caller.applicationId, { escrowFeeBps: 100, escrowFeeFixed: 0n });
    const first = await held(1_000n);
    await steps.releaseFunds({
      holdId: first.input.holdId,
      releaseId: randomUUID(),
      recipientWalletId: first.recipient,
      amount: '100',
    });
    const { input, recipient } = await held(1_000n);
    // A hold from a wallet no step has seen: BEGIN, the wallets' states (with whether the step
    // is made and the transaction's now()), the accounts' lock, the ledger statement (the
    // payment row, the entries, the event), COMMIT.
    const unseen = {
      ...input,
      holdId: randomUUID(),
      walletId: await insertFundedWallet(pool, caller, 'SLE', 10_000n),
    };
    expect(await roundTripsOf(() => steps.holdFunds(unseen))).toBe(5);
    // From a wallet seen since, its escrow account known: one statement locks, checks, writes.
    const again = { ...input, holdId: randomUUID() };
    expect(await roundTripsOf(() => steps.holdFunds(again))).toBe(1);
    const release = {
      holdId: input.holdId,
      releaseId: randomUUID(),
      recipientWalletId: recipient,
      amount: '100',
    };
    // Steps of a process that has not seen this hold nor read the application's fee (the usual
    // way): BEGIN, the hold's lock (with the fee, the recipient and the transaction's now()),
    // the accounts' lock, the ledger statement, COMMIT.
    const elsewhere = createEscrowActivities({ pool, systemAccounts });
    let released: EscrowStepResult | undefined;
    expect(await roundTripsOf(async () => (released = await elsewhere.releaseFunds(release)))).toBe(
      5,
    );
    const refund = { holdId: input.holdId, refundId: randomUUID(), reason: 'requested' as const };
    expect(await roundTripsOf(() => elsewhere.refundFunds(refund))).toBe(5);
    // A retried step: BEGIN, the lock that says it is made, the step's row, COMMIT.
    expect(await roundTripsOf(() => elsewhere.releaseFunds(release))).toBe(4);
    expect(await holdState(input.holdId)).toEqual({ status: 'reversed', escrow_amount: 0n });
    // The row a step answers with, written by the ledger's statement, is the row as it reads back.
    const stored = await findTransaction(pool, release.releaseId);
    expect(released).toMatchObject({ transaction: stored && transactionRecord(stored) });
    await assertLedgerInvariant(pool);
  });
  it('releases a hold it remembers in one statement, which writes nothing where it is not as remembered', async () => {
    await updateApplication(pool, caller.applicationId, { escrowFeeBps: 100, escrowFeeFixed: 0n });
    // A process of its own: it remembers what its own steps wrote and read.
    const own = createEscrowActivities({ pool, systemAccounts });
    const { input, recipient } = await held(2_000n);
    const hold = await own.holdFunds(input);
    expect(hold).toMatchObject({ status: 'done', remaining: '2000' });
    const release = (amount: string | null, change: { recipientWalletId?: string } = {}) => ({
      holdId: input.holdId,
      releaseId: randomUUID(),
      recipientWalletId: recipient,
      amount,
      ...change,
    });
    const fees = () => systemBalance(pool, caller.applicationId, 'application_fees', 'SLE');

    // The first release reads the application's fee the usual way; the next is one statement.
    await own.releaseFunds(release('100'));
    const feesBefore = await fees();
    const second = release('100');
    const stored = await madeAtOnce(() => own.releaseFunds(second), second.releaseId, '1800');
    expect(stored).toMatchObject({
      transaction_type: 'escrow_release',
      amount: 99n,
      application_fee: 1n,
      escrow_amount: 1_800n,
      recipient_wallet_id: recipient,
    });
    expect(await holdState(input.holdId)).toEqual({ status: 'held', escrow_amount: 1_800n });
    expect(await balanceOf(pool, recipient)).toBe(1n + 99n + 99n);
    expect(await fees()).toBe(feesBefore + 1n);
    // Its retry is found made (the usual way) and moves nothing more.
    expect(await own.releaseFunds(second)).toMatchObject({ remaining: '1800' });

    // The fee changed since it was read: the statement writes nothing, the usual way charges
    // the fee as it is now.
    await updateApplication(pool, caller.applicationId, { escrowFeeBps: 200, escrowFeeFixed: 0n });
    const newFee = release('100');
    expect(await roundTripsOf(() => own.releaseFunds(newFee))).toBe(6);
    expect(await findTransaction(pool, newFee.releaseId)).toMatchObject({
      amount: 98n,
      application_fee: 2n,
    });
    // Another process released meanwhile: the hold holds less than remembered.
    await steps.releaseFunds(release('100'));
    expect(await own.releaseFunds(release('100'))).toMatchObject({ remaining: '1500' });
    // A recipient disabled since: declined the usual way, nothing written.
    await setWalletActive(pool, recipient, false);
    const toDisabled = release('100');
    expect(await declineOf(own.releaseFunds(toDisabled))).toBe('wallet_disabled');
    await setWalletActive(pool, recipient, true);
    // More than is held: declined the usual way.
    const tooMuch = release('1501');
    expect(await declineOf(own.releaseFunds(tooMuch))).toBe('release_exceeds_hold');
    for (const declined of [toDisabled, tooMuch]) {
      expect(await writtenFor(pool, declined.releaseId)).toBe(0);
    }
    expect(await holdState(input.holdId)).toEqual({ status: 'held', escrow_amount: 1_500n });
    await assertLedgerInvariant(pool);
  });

  it('declines a release to a deleted user’s wallet in one statement as the usual way does, writing nothing', async () => {
    const own = createEscrowActivities({ pool, systemAccounts });
    const { input, recipient } = await held(2_000n);
    await own.holdFunds(input);
    const release = () => ({
      holdId: input.holdId,
      releaseId: randomUUID(),
      recipientWalletId: recipient,
      amount: '100',
    });
    // Remembered by `own`: its next release to the recipient would be one statement.
    await own.releaseFunds(release());
    // The user is deleted (its wallet row goes with it; its ledger account stays).
    await pool.query(sql.unsafe`
      DELETE FROM users WHERE id = (SELECT user_id FROM wallets WHERE id = ${recipient})`);
    const balance = await balanceOf(pool, recipient);

    const usual = release();
    const atOnce = release();
    const usualDecline = await declineOf(steps.releaseFunds(usual));
    expect(usualDecline).toBe('wallet_not_found');
    expect(await declineOf(own.releaseFunds(atOnce))).toBe(usualDecline);
    for (const declined of [usual, atOnce]) {
      expect(await writtenFor(pool, declined.releaseId)).toBe(0);
    }
    expect(await balanceOf(pool, recipient)).toBe(balance);
    expect(await holdState(input.holdId)).toEqual({ status: 'held', escrow_amount: 1_900n });
    await assertLedgerInvariant(pool);
  });

  it('racing releases of a remembered hold never release more than it holds', async () => {
    await updateApplication(pool, caller.applicationId, { escrowFeeBps: 0, escrowFeeFixed: 0n });
    const own = createEscrowActivities({ pool, systemAccounts });
    const { input, recipient } = await held(500n);
    await own.holdFunds(input);
    await own.releaseFunds({
      holdId: input.holdId,
      releaseId: randomUUID(),
      recipientWalletId: recipient,
      amount: '100',
    });
    // Eight releases of 100 at once, each from the same memory (400 held): four are made.
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        own
          .releaseFunds({
            holdId: input.holdId,
            releaseId: randomUUID(),
            recipientWalletId: recipient,
            amount: '100',
          })
          .then(
            (result) => result.status,
            (error: unknown) => (error as ApplicationFailure).type,
          ),
      ),
    );
    expect(results.filter((r) => r === 'done')).toHaveLength(4);
    for (const r of results.filter((r) => r !== 'done')) {
      expect(['release_exceeds_hold', 'escrow_not_held']).toContain(r);
    }
    expect(await holdState(input.holdId)).toEqual({ status: 'completed', escrow_amount: 0n });
    expect(await balanceOf(pool, recipient)).toBe(1n + 500n);
    expect(await balanceOf(pool, input.walletId)).toBe(9_500n);
    await assertLedgerInvariant(pool);
  });
});
