import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  lockAccounts,
  postLedgerTransaction,
  systemAccountId,
  type SystemAccountMemory,
} from '../../src/db/ledger';
import type { DatabasePool } from '../../src/db/pool';
import { insertUser } from '../../src/db/users';
import { insertWallet } from '../../src/db/wallets';
import type { Caller } from '../../src/domain/types';
import {
  assertLedgerInvariant,
  balanceOf,
  createCaller,
  createTestDatabase,
  fundWallet,
  insertFundedWallet,
} from '../support/database';

let pool: DatabasePool;
let caller: Caller;

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  caller = await createCaller(pool, 'ledger');
});
afterAll(async () => pool?.end());

/** Slonik wraps Postgres errors; the constraint or trigger message is on the cause. */
async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    const e = error as Error & { cause?: Error & { constraint?: string } };
    return [e.message, e.cause?.message, e.cause?.constraint].filter(Boolean).join(' | ');
  }
  throw new Error('expected the database to refuse');
}

const newWallet = () => insertFundedWallet(pool, caller, 'SLE', 0n);

describe('the database enforces the ledger rules', () => {
  it('moves stored balances with the entries of a balanced transaction', async () => {
    const [a, b] = [await newWallet(), await newWallet()];
    await fundWallet(pool, a, 500n);
    await pool.transaction(async (trx) => {
      await lockAccounts(trx, [a, b]);
      await postLedgerTransaction(trx, {
        applicationId: caller.applicationId,
        mode: 'test',
        transactionId: null,
        kind: 'transfer',
        postings: [
          { accountId: a, currency: 'SLE', amount: -200n },
          { accountId: b, currency: 'SLE', amount: 200n },
        ],
      });
    });
    expect(await balanceOf(pool, a)).toBe(300n);
    expect(await balanceOf(pool, b)).toBe(200n);
    await assertLedgerInvariant(pool);
  });

  it('refuses at commit a ledger transaction whose entries do not sum to zero', async () => {
    const a = await newWallet();
    const ledgerId = randomUUID();
    const message = await failure(
      pool.transaction(async (trx) => {
        await trx.query(sql.unsafe`INSERT INTO ledger_transactions (id, application_id, mode, kind)
          VALUES (${ledgerId}, ${caller.applicationId}, 'test', 'bad')`);
        await trx.query(sql.unsafe`INSERT INTO ledger_entries (ledger_transaction_id, account_id, currency, amount)
          VALUES (${ledgerId}, ${a}, 'SLE', 100)`);
      }),
    );
    expect(message).toMatch(/does not balance in SLE/);
    expect(await balanceOf(pool, a)).toBe(0n);
    await assertLedgerInvariant(pool);
  });

  it('refuses a user wallet going negative', async () => {
    const [a, b] = [await newWallet(), await newWallet()];
    await fundWallet(pool, a, 100n);
    const message = await failure(
      pool.transaction(async (trx) => {
        await lockAccounts(trx, [a, b]);
        await postLedgerTransaction(trx, {
          applicationId: caller.applicationId,
          mode: 'test',
          transactionId: null,
          kind: 'transfer',
          postings: [
            { accountId: a, currency: 'SLE', amount: -101n },
            { accountId: b, currency: 'SLE', amount: 101n },
          ],
        });
      }),
    );
    expect(message).toMatch(/user_wallet_not_negative/);
    expect(await balanceOf(pool, a)).toBe(100n);
    expect(await balanceOf(pool, b)).toBe(0n);
  });

  it('refuses to update or delete entries, and to set a balance directly', async () => {
    const a = await newWallet();
    await fundWallet(pool, a, 100n);
    await expect(
      pool.query(sql.unsafe`DELETE FROM ledger_entries WHERE account_id = ${a}`),
    ).rejects.toThrow();
    expect(
      await failure(
        pool.query(sql.unsafe`UPDATE ledger_entries SET amount = 1 WHERE account_id = ${a}`),
      ),
    ).toMatch(/cannot be updated or deleted/);
    expect(
      await failure(
        pool.query(sql.unsafe`UPDATE ledger_accounts SET balance = 1000000 WHERE id = ${a}`),
      ),
    ).toMatch(/only through ledger entries/);
    expect(
      await failure(
        pool.query(sql.unsafe`INSERT INTO ledger_accounts (id, application_id, mode, kind, currency, balance)
          VALUES (${randomUUID()}, ${caller.applicationId}, 'test', 'user_wallet', 'SLE', 5)`),
      ),
    ).toMatch(/zero balance/);
    expect(await balanceOf(pool, a)).toBe(100n);
  });

  it('refuses an entry in a currency other than its account’s, and amounts that are not integers', async () => {
    const [a, b] = [await newWallet(), await newWallet()];
    await fundWallet(pool, a, 100n);
    const message = await failure(
      pool.transaction(async (trx) => {
        await lockAccounts(trx, [a, b]);
        await postLedgerTransaction(trx, {
          applicationId: caller.applicationId,
          mode: 'test',
          transactionId: null,
          kind: 'bad',
          postings: [
            { accountId: a, currency: 'USD', amount: -1n },
            { accountId: b, currency: 'USD', amount: 1n },
          ],
        });
      }),
    );
    expect(message).toMatch(/does not match account currency/);
    const ledgerId = randomUUID();
    await expect(
      pool.transaction(async (trx) => {
        await trx.query(sql.unsafe`INSERT INTO ledger_transactions (id, application_id, mode, kind)
          VALUES (${ledgerId}, ${caller.applicationId}, 'test', 'bad')`);
        await trx.query(sql.unsafe`INSERT INTO ledger_entries (ledger_transaction_id, account_id, currency, amount)
          VALUES (${ledgerId}, ${a}, 'SLE', '1.5')`);
      }),
    ).rejects.toThrow();
    const ledgerRows = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM ledger_transactions WHERE id = ${ledgerId}`);
    expect(ledgerRows).toBe(0);
  });

  it('allows one wallet per user and one email per application and mode', async () => {
    const user = await insertUser(pool, caller, {
      app_user_id: 'dup',
      name: 'D',
      phone_number: '+232',
      email: 'd@example.com',
      username: null,
      is_active: true,
    });
    await pool.transaction((trx) => insertWallet(trx, caller, user.id, 'SLE', true));
    await expect(
      pool.transaction((trx) => insertWallet(trx, caller, user.id, 'SLE', true)),
    ).rejects.toThrow();
    await expect(
      insertUser(pool, caller, {
        app_user_id: 'dup2',
        name: 'D',
        phone_number: '+232',
        email: 'D@example.com',
        username: null,
        is_active: true,
      }),
    ).rejects.toThrow();
    const live = await insertUser(
      pool,
      { ...caller, mode: 'live' },
      {
        app_user_id: 'dup3',
        name: 'D',
        phone_number: '+232',
        email: 'd@example.com',
        username: null,
        is_active: true,
      },
    );
    expect(live.mode).toBe('live');
  });

  it('opens one system account per application, mode, kind and currency', async () => {
    const first = await systemAccountId(pool, caller.applicationId, 'test', 'escrow', 'SLE');
    const again = await systemAccountId(pool, caller.applicationId, 'test', 'escrow', 'SLE');
    const live = await systemAccountId(pool, caller.applicationId, 'live', 'escrow', 'SLE');
    expect(again).toBe(first);
    expect(live).not.toBe(first);
    const count = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM ledger_accounts WHERE application_id = ${caller.applicationId} AND kind = 'escrow'`);
    expect(count).toBe(2);
  });

  it('remembers a system account once the transaction that opened it commits, not before', async () => {
    const memory: SystemAccountMemory = new Map();
    const app = caller.applicationId;
    const fees = () => systemAccountId(pool, app, 'test', 'application_fees', 'SLE', memory);
    // Opened in a transaction that rolls back: the account goes, and memory never had it.
    let opened = '';
    await expect(
      pool.transaction(async (trx) => {
        opened = await systemAccountId(trx, app, 'test', 'application_fees', 'SLE', memory);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(memory.size).toBe(0);
    const committed = await pool.transaction((trx) =>
      systemAccountId(trx, app, 'test', 'application_fees', 'SLE', memory),
    );
    expect(committed).not.toBe(opened);
    expect([...memory.values()]).toEqual([committed]);
    // Answered from memory: the row is not read again, even where it would no longer match.
    await pool.query(sql.unsafe`
      UPDATE ledger_accounts SET currency = 'USD' WHERE id = ${committed}`);
    expect(await fees()).toBe(committed);
    await pool.query(sql.unsafe`
      UPDATE ledger_accounts SET currency = 'SLE' WHERE id = ${committed}`);
  });
});
