import { ApplicationFailure } from '@temporalio/common';
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { createTransferActivities } from '../../src/activities/transfer';
import { claimIdempotencyKey, completeIdempotencyKey } from '../../src/db/idempotency';
import type { DatabasePool } from '../../src/db/pool';
import {
  findTransaction,
  transactionAnswer,
  transactionFromRecord,
  transactionRecord,
} from '../../src/db/transactions';
import type { Caller } from '../../src/domain/types';
import type { TransferInput } from '../../src/workflows/shared';
import {
  balanceOf,
  createCaller,
  createTestDatabase,
  insertFundedWallet,
  roundTripsOf,
} from '../support/database';
import { hashOf, transferStepInput } from '../support/steps';

let pool: DatabasePool;
let caller: Caller;
let transferFunds: ReturnType<typeof createTransferActivities>['transferFunds'];

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  caller = await createCaller(pool, 'step answers');
  ({ transferFunds } = createTransferActivities({ pool }));
});
afterAll(async () => pool?.end());

/** A claimed key and a transfer between two new wallets that answers under it. */
async function claimedTransfer(amount: string, funded = 1_000n) {
  const key = `key-${randomUUID()}`;
  const claim = await claimIdempotencyKey(pool, caller, key, hashOf(key));
  if (claim.kind !== 'claimed') throw new Error(`expected a fresh claim, got ${claim.kind}`);
  const input: TransferInput = {
    ...transferStepInput(
      caller,
      await insertFundedWallet(pool, caller, 'SLE', funded),
      // The helper funds every wallet it makes: the recipient starts at 1.
      await insertFundedWallet(pool, caller, 'SLE', 1n),
      amount,
      'answered with the step',
    ),
    answer: { key, claimedAt: claim.claimedAt },
  };
  return { key, input };
}

const keyRow = (key: string) =>
  pool.one(sql.type(
    z.object({
      response_status: z.number().nullable(),
      response_body: z.unknown(),
      completed_at: z.string().nullable(),
    }),
  )`SELECT response_status, response_body, completed_at FROM idempotency_keys
    WHERE application_id = ${caller.applicationId} AND mode = ${caller.mode} AND key = ${key}`);

const ledgerWrittenAt = (transactionId: string) =>
  pool.oneFirst(sql.type(z.object({ created_at: z.string() }))`
    SELECT created_at FROM ledger_transactions WHERE transaction_id = ${transactionId}`);

describe('a transfer step that stores its request answer', () => {
  it('stores the answer in the transaction that moves the money; a replay finds it', async () => {
    const { key, input } = await claimedTransfer('250');
    let made: Awaited<ReturnType<typeof transferFunds>> | undefined;
    // BEGIN, the lock (with the transaction's now()), the ledger statement (the payment row,
    // the entries, the event, the answer), COMMIT.
    expect(await roundTripsOf(async () => (made = await transferFunds(input)))).toBe(4);
    if (!made) throw new Error('the step answered nothing');
    // The row the step answers with is the row as it reads back, to the millisecond.
    const stored = await findTransaction(pool, input.transactionId);
    expect(stored && transactionRecord(stored)).toEqual(made.transaction);
    expect(made.answered).toBe(true);
    expect(made.transaction).toBeDefined();
    const answer = transactionAnswer(transactionFromRecord(made.transaction!));
    expect(answer).toMatchObject({ id: input.transactionId, amount: 2.5, status: 'completed' });

    const row = await keyRow(key);
    expect(row.response_status).toBe(200);
    expect(row.response_body).toEqual(answer);
    // now() is the database transaction's start: the same instant for both rows.
    expect(row.completed_at).toBe(await ledgerWrittenAt(input.transactionId));
    expect(await claimIdempotencyKey(pool, caller, key, hashOf(key))).toEqual({
      kind: 'replay',
      status: 200,
      body: answer,
    });
    expect(await balanceOf(pool, input.toWalletId)).toBe(251n);
  });

  it('a retried step finds the payment made, claims no answer and changes none', async () => {
    const { key, input } = await claimedTransfer('100');
    await transferFunds(input);
    const before = await keyRow(key);
    const again = await transferFunds(input);
    expect(again).toEqual({ transactionId: input.transactionId });
    expect(await keyRow(key)).toEqual(before);
    // The API stores its answer when the step did not say it had: the first one stays.
    await completeIdempotencyKey(pool, caller, key, 200, { other: true });
    expect(await keyRow(key)).toEqual(before);
    expect(await balanceOf(pool, input.toWalletId)).toBe(101n);
  });

  it('leaves another use of the key unanswered (a key taken over after 24 hours)', async () => {
    const { key, input } = await claimedTransfer('100');
    const later = new Date(Date.parse(input.answer!.claimedAt) + 1).toISOString();
    const made = await transferFunds({ ...input, answer: { key, claimedAt: later } });
    expect(made.transaction?.status).toBe('completed');
    expect(await keyRow(key)).toEqual({
      response_status: null,
      response_body: null,
      completed_at: null,
    });
  });

  it('a declined step stores nothing: the API answers the decline itself', async () => {
    const { key, input } = await claimedTransfer('5000', 1_000n);
    const failure = await transferFunds(input).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'insufficient_funds', nonRetryable: true });
    expect((await keyRow(key)).response_status).toBeNull();
    expect(await balanceOf(pool, input.fromWalletId)).toBe(1_000n);
  });
});
