import { ApplicationFailure } from '@temporalio/common';
import { randomUUID } from 'node:crypto';
import { transactionEventData } from '../../src/activities/events';
import { createTransferActivities } from '../../src/activities/transfer';
import { claimIdempotencyKey } from '../../src/db/idempotency';
import type { DatabasePool } from '../../src/db/pool';
import {
  findTransaction,
  transactionAnswer,
  transactionFromRecord,
  transactionRecord,
} from '../../src/db/transactions';
import { setWalletActive } from '../../src/db/wallets';
import type { Caller } from '../../src/domain/types';
import {
  assertLedgerInvariant,
  balanceOf,
  createCaller,
  createTestDatabase,
  eventsOf,
  insertFundedWallet,
  roundTripsOf,
  writtenAtDatabaseTime,
  writtenFor,
} from '../support/database';
import { hashOf, transferStepInput } from '../support/steps';

let pool: DatabasePool;
let caller: Caller;
let other: Caller;

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  caller = await createCaller(pool, 'transfer at once');
  other = await createCaller(pool, 'another');
});
afterAll(async () => pool?.end());

/** Activities that have seen `from` and `to` (one transfer of 1 between them, the usual way). */
async function remembering(from: string, to: string) {
  const { transferFunds } = createTransferActivities({ pool });
  expect(await roundTripsOf(() => transferFunds(transferStepInput(caller, from, to, '1')))).toBe(4);
  return transferFunds;
}

async function declined(run: Promise<unknown>): Promise<string> {
  const error = await run.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApplicationFailure);
  return (error as ApplicationFailure).type ?? '';
}

describe('a transfer between wallets seen before, in one statement', () => {
  it('locks, checks and writes the row, the ledger, the event and the answer in one round trip', async () => {
    const from = await insertFundedWallet(pool, caller, 'SLE', 1_000n);
    const to = await insertFundedWallet(pool, caller, 'SLE', 1n);
    const transferFunds = await remembering(from, to);
    const key = `key-${randomUUID()}`;
    const claim = await claimIdempotencyKey(pool, caller, key, hashOf(key));
    if (claim.kind !== 'claimed') throw new Error(`expected a fresh claim, got ${claim.kind}`);
    const input = {
      ...transferStepInput(caller, from, to, '250'),
      answer: { key, claimedAt: claim.claimedAt },
    };
    let made: Awaited<ReturnType<typeof transferFunds>> | undefined;
    const at = await writtenAtDatabaseTime(pool, input.transactionId, async () => {
      expect(await roundTripsOf(async () => (made = await transferFunds(input)))).toBe(1);
    });
    expect(made?.answered).toBe(true);
    // The row it answers with is the row as it reads back, its time (the database's) included.
    const stored = await findTransaction(pool, input.transactionId);
    expect(stored && transactionRecord(stored)).toEqual(made?.transaction);
    expect(made?.transaction).toMatchObject({ created_at: at, updated_at: at });
    expect(stored).toMatchObject({ status: 'completed', amount: 250n, currency: 'SLE' });
    expect(await balanceOf(pool, from)).toBe(749n);
    // The helper funds every wallet it makes: the recipient started at 1.
    expect(await balanceOf(pool, to)).toBe(252n);
    expect(await eventsOf(pool, input.transactionId)).toEqual([
      { type: 'transfer.completed', data: transactionEventData(stored!) },
    ]);
    const answer = transactionAnswer(transactionFromRecord(made!.transaction!));
    expect(await claimIdempotencyKey(pool, caller, key, hashOf(key))).toEqual({
      kind: 'replay',
      status: 200,
      body: answer,
    });
    await assertLedgerInvariant(pool);
  });

  it('writes nothing for a decline and declines the usual way: funds, a disabled wallet, another application', async () => {
    const from = await insertFundedWallet(pool, caller, 'SLE', 10n);
    const to = await insertFundedWallet(pool, caller, 'SLE', 1n);
    const transferFunds = await remembering(from, to);

    const tooMuch = transferStepInput(caller, from, to, '10');
    expect(await declined(transferFunds(tooMuch))).toBe('insufficient_funds');
    expect(await writtenFor(pool, tooMuch.transactionId)).toBe(0);

    await setWalletActive(pool, to, false);
    const toDisabled = transferStepInput(caller, from, to, '1');
    expect(await declined(transferFunds(toDisabled))).toBe('wallet_disabled');
    expect(await writtenFor(pool, toDisabled.transactionId)).toBe(0);
    await setWalletActive(pool, to, true);

    const foreign = transferStepInput(other, from, to, '1');
    expect(await declined(transferFunds(foreign))).toBe('wallet_forbidden');
    expect(await writtenFor(pool, foreign.transactionId)).toBe(0);

    expect(await balanceOf(pool, from)).toBe(9n);
    expect(await balanceOf(pool, to)).toBe(2n);
    // Still one statement once the checks pass again.
    const fine = transferStepInput(caller, from, to, '9');
    expect(await roundTripsOf(() => transferFunds(fine))).toBe(1);
    expect(await balanceOf(pool, from)).toBe(0n);
    await assertLedgerInvariant(pool);
  });

  it('moves the money once for a retried or racing step of the same transfer', async () => {
    const from = await insertFundedWallet(pool, caller, 'SLE', 100n);
    const to = await insertFundedWallet(pool, caller, 'SLE', 1n);
    const transferFunds = await remembering(from, to);
    const input = transferStepInput(caller, from, to, '7');
    const answers = await Promise.all(Array.from({ length: 8 }, () => transferFunds(input)));
    // One wrote it; the others found it made (the usual way: a retried step's answer).
    expect(answers.filter((a) => a.transaction !== undefined)).toHaveLength(1);
    expect(answers.filter((a) => a.transaction === undefined)).toEqual(
      Array.from({ length: 7 }, () => ({ transactionId: input.transactionId })),
    );
    expect(await transferFunds(input)).toEqual({ transactionId: input.transactionId });
    expect(await writtenFor(pool, input.transactionId)).toBe(3);
    expect(await balanceOf(pool, from)).toBe(92n);
    expect(await balanceOf(pool, to)).toBe(9n);
    await assertLedgerInvariant(pool);
  });

  it('keeps a wallet from going negative when transfers out of it race', async () => {
    const from = await insertFundedWallet(pool, caller, 'SLE', 50n);
    const to = await insertFundedWallet(pool, caller, 'SLE', 1n);
    const transferFunds = await remembering(from, to);
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () => transferFunds(transferStepInput(caller, from, to, '5'))),
    );
    // 49 left after the first transfer of 1: nine of 5 fit, the others are declined.
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(9);
    const reasons = results.flatMap((r) =>
      r.status === 'rejected' ? [(r.reason as ApplicationFailure).type] : [],
    );
    expect(reasons).toEqual(Array.from({ length: 11 }, () => 'insufficient_funds'));
    expect(await balanceOf(pool, from)).toBe(4n);
    expect(await balanceOf(pool, to)).toBe(47n);
    await assertLedgerInvariant(pool);
  });
});
