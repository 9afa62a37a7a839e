import { randomUUID } from 'node:crypto';
import pg, { type QueryConfig } from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { createApplication } from '../../src/db/applications';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool';
import { ledgerInvariantProblems } from '../../src/db/ledger-audit';
import { fundWallet as fund } from '../../tools/harness/fixtures';
import { SCRATCH_CONNECT_TIMEOUT_MS } from '../../tools/harness/engine';
import { insertUser } from '../../src/db/users';
import { insertWallet } from '../../src/db/wallets';
import type { Currency } from '../../src/domain/money';
import type { Caller } from '../../src/domain/types';

function serverUrl(): string {
  const url = process.env.TEST_PG_SERVER_URL;
  if (!url) throw new Error('TEST_PG_SERVER_URL is not set: run the tests with npm test');
  return url;
}

export function databaseUrl(name: string): string {
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/** A fresh database for one test file, cloned from the migrated template. */
export async function createTestDatabase({ poolSize = 30 }: { poolSize?: number } = {}): Promise<{
  url: string;
  pool: DatabasePool;
  name: string;
}> {
  const name = `t_${randomUUID().replace(/-/g, '')}`;
  const client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
  try {
    // CREATE DATABASE ... TEMPLATE fails while another session uses the template; retry briefly.
    for (let attempt = 0; ; attempt += 1) {
      try {
        await client.query(`CREATE DATABASE ${name} TEMPLATE wallet_template`);
        break;
      } catch (error) {
        if (attempt > 20) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    await client.end();
  }
  const url = databaseUrl(name);
  const pool = await createDatabasePool(url, {
    maximumPoolSize: poolSize,
    connectTimeoutMs: SCRATCH_CONNECT_TIMEOUT_MS,
  });
  return { url, name, pool };
}

/** Money into a wallet for tests that need a balance (see tools/harness/fixtures.ts). */
export function fundWallet(
  pool: DatabasePool,
  walletId: string,
  amountMinor: bigint,
): Promise<void> {
  return fund(pool, walletId, amountMinor, 'test_funding');
}

export async function balanceOf(pool: DatabasePool, accountId: string): Promise<bigint> {
  return pool.oneFirst(
    sql.type(
      z.object({ balance: z.bigint() }),
    )`SELECT balance FROM ledger_accounts WHERE id = ${accountId}`,
  );
}

/** The ledger invariant (src/db/ledger-audit.ts); throws with the offending rows. */
export async function assertLedgerInvariant(pool: DatabasePool): Promise<void> {
  const problems = await ledgerInvariantProblems(pool);
  if (problems.length) throw new Error(`ledger invariant broken: ${problems.join('; ')}`);
}

/** The balance of an application's system account (0 before its first use). */
export async function systemBalance(
  pool: DatabasePool,
  applicationId: string,
  kind: string,
  currency: 'SLE' | 'USD',
  mode: 'test' | 'live' = 'test',
): Promise<bigint> {
  const value = await pool.maybeOneFirst(sql.type(z.object({ balance: z.bigint() }))`
    SELECT balance FROM ledger_accounts
    WHERE application_id = ${applicationId} AND mode = ${mode} AND kind = ${kind} AND currency = ${currency}`);
  return value ?? 0n;
}

/** The events written about a payment, oldest first. */
export function eventsOf(pool: DatabasePool, transactionId: string) {
  return pool.any(sql.type(z.object({ type: z.string(), data: z.any() }))`
    SELECT type, data FROM events WHERE transaction_id = ${transactionId} ORDER BY created_at`);
}

const databaseNow = (pool: DatabasePool) =>
  pool.oneFirst(sql.type(z.object({ now: z.string() }))`SELECT now() AS now`);

/**
 * Runs `run`, which writes a payment step, and checks that all it wrote has one time, the
 * database's: the record's, its event's and its ledger transaction's are one instant, between
 * the database's `now()` before and after. Answers that time, as the pool reads it.
 */
export async function writtenAtDatabaseTime(
  pool: DatabasePool,
  transactionId: string,
  run: () => Promise<unknown>,
): Promise<string> {
  const before = await databaseNow(pool);
  await run();
  const after = await databaseNow(pool);
  const { at, one_instant } = await pool.one(sql.type(
    z.object({ at: z.string(), one_instant: z.boolean() }),
  )`
    SELECT t.created_at AS at,
      t.updated_at = t.created_at AND e.created_at = t.created_at AND l.created_at = t.created_at
        AS one_instant
    FROM transactions t
      JOIN events e ON e.transaction_id = t.id
      JOIN ledger_transactions l ON l.transaction_id = t.id
    WHERE t.id = ${transactionId}`);
  expect({ one_instant, between: before <= at && at <= after }).toEqual({
    one_instant: true,
    between: true,
  });
  return at;
}

/**
 * An application in `currency` written straight to the database, and a Test Mode caller of it
 * (as an API credential of its would be), for tests that call activities or queries directly.
 */
export async function createCaller(
  pool: DatabasePool,
  name: string,
  currency: Currency = 'SLE',
): Promise<Caller> {
  const app = await createApplication(pool, { name, baseCurrency: currency });
  return { applicationId: app.id, mode: 'test', credentialId: randomUUID() };
}

/** A user with a wallet written straight to the database (no API), funded with `amount`. */
export async function insertFundedWallet(
  pool: DatabasePool,
  caller: Caller,
  currency: Currency,
  amount: bigint,
): Promise<string> {
  const user = await insertUser(pool, caller, {
    app_user_id: randomUUID(),
    name: 'K',
    phone_number: '+23276000000',
    email: null,
    username: null,
    is_active: true,
  });
  const walletId = await pool.transaction(
    async (trx) => (await insertWallet(trx, caller, user.id, currency, true)).id,
  );
  if (amount > 0n) await fundWallet(pool, walletId, amount);
  return walletId;
}

/**
 * The statements `run` sends to Postgres (their text and values), each a round trip (BEGIN and
 * COMMIT too): every `pg` client's, so only `run` may use the database meanwhile, or the caller
 * picks out the statements it looks for.
 */
export async function statementsOf(
  run: () => Promise<unknown>,
): Promise<{ text: string; values: unknown[] }[]> {
  // Every call goes through to the real method; the spy only keeps its arguments.
  const spy = jest.spyOn(pg.Client.prototype, 'query');
  let calls: unknown[][];
  try {
    await run();
  } finally {
    calls = spy.mock.calls;
    spy.mockRestore();
  }
  return calls.map(([first, second]) => {
    const config = (typeof first === 'string' ? { text: first } : first) as QueryConfig;
    const values = Array.isArray(second) ? (second as unknown[]) : (config.values ?? []);
    return { text: config.text ?? '', values };
  });
}

/** How many statements `run` sends to Postgres (`statementsOf`). */
export async function roundTripsOf(run: () => Promise<unknown>): Promise<number> {
  return (await statementsOf(run)).length;
}

/** The steps of a payment's ledger transactions, oldest first. */
export const ledgerSteps = (pool: DatabasePool, transactionId: string) =>
  pool.anyFirst(sql.type(z.object({ step: z.string() }))`
    SELECT metadata->>'step' AS step FROM ledger_transactions
    WHERE transaction_id = ${transactionId} ORDER BY created_at`);

/** A payment's ledger transactions, oldest first: each one's step and how many entries it has. */
export const ledgerLegs = (pool: DatabasePool, transactionId: string) =>
  pool.any(sql.type(z.object({ step: z.string().nullable(), legs: z.number() }))`
    SELECT t.metadata->>'step' AS step, count(e.id)::int AS legs
    FROM ledger_transactions t JOIN ledger_entries e ON e.ledger_transaction_id = t.id
    WHERE t.transaction_id = ${transactionId}
    GROUP BY t.id, t.created_at ORDER BY t.created_at`);

/** How many ledger transactions a payment has. */
export const ledgerTransactionCount = (pool: DatabasePool, transactionId: string) =>
  pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM ledger_transactions WHERE transaction_id = ${transactionId}`);

/**
 * Everything a money step writes under a payment's id: its payment row, ledger transactions and
 * events, counted (0 for a decline, which writes nothing).
 */
export const writtenFor = (pool: DatabasePool, id: string) =>
  pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT ((SELECT count(*) FROM transactions WHERE id = ${id})
      + (SELECT count(*) FROM ledger_transactions WHERE transaction_id = ${id})
      + (SELECT count(*) FROM events WHERE transaction_id = ${id}))::int AS n`);
