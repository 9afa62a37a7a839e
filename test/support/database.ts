import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { createDatabasePool, type DatabasePool } from '../../db/pool';
import { postLedgerTransaction, systemAccountId, lockAccounts } from '../../db/ledger';

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
export async function createTestDatabase(): Promise<{
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
  return { url, name, pool: await createDatabasePool(url, { maximumPoolSize: 30 }) };
}

/**
 * Money into a wallet for tests that need a balance, booked as the mobile-money provider's
 * clearing account paying the wallet: one balanced ledger transaction, as a deposit would be.
 */
export async function fundWallet(
  pool: DatabasePool,
  walletId: string,
  amountMinor: bigint,
): Promise<void> {
  await pool.transaction(async (trx) => {
    const wallet = await trx.one(
      sql.type(
        z.object({
          application_id: z.string(),
          mode: z.enum(['test', 'live']),
          currency: z.enum(['USD', 'SLE']),
        }),
      )`SELECT application_id, mode, currency FROM ledger_accounts WHERE id = ${walletId}`,
    );
    const clearing = await systemAccountId(
      trx,
      wallet.application_id,
      wallet.mode,
      'provider_clearing_mobile_money',
      wallet.currency,
    );
    await lockAccounts(trx, [walletId, clearing]);
    await postLedgerTransaction(trx, {
      applicationId: wallet.application_id,
      mode: wallet.mode,
      transactionId: null,
      kind: 'test_funding',
      postings: [
        { accountId: clearing, currency: wallet.currency, amount: -amountMinor },
        { accountId: walletId, currency: wallet.currency, amount: amountMinor },
      ],
    });
  });
}

export async function balanceOf(pool: DatabasePool, accountId: string): Promise<bigint> {
  return pool.oneFirst(
    sql.type(
      z.object({ balance: z.bigint() }),
    )`SELECT balance FROM ledger_accounts WHERE id = ${accountId}`,
  );
}

/**
 * The ledger invariant: every account's stored balance equals the sum of its entries; all
 * entries of each ledger transaction, and of the whole ledger, sum to zero per currency; no
 * user wallet is negative. Throws with the offending rows.
 */
export async function assertLedgerInvariant(pool: DatabasePool): Promise<void> {
  const drift = await pool.any(sql.type(
    z.object({ id: z.string(), balance: z.bigint(), sum: z.bigint() }),
  )`
    SELECT a.id, a.balance, coalesce(sum(e.amount), 0)::bigint AS sum
    FROM ledger_accounts a LEFT JOIN ledger_entries e ON e.account_id = a.id
    GROUP BY a.id HAVING a.balance <> coalesce(sum(e.amount), 0)`);
  if (drift.length)
    throw new Error(`stored balance differs from entries: ${JSON.stringify(drift, replacer)}`);
  const unbalanced = await pool.any(sql.type(
    z.object({ ledger_transaction_id: z.string(), currency: z.string(), sum: z.bigint() }),
  )`
    SELECT ledger_transaction_id, currency, sum(amount)::bigint AS sum FROM ledger_entries
    GROUP BY ledger_transaction_id, currency HAVING sum(amount) <> 0`);
  if (unbalanced.length)
    throw new Error(`unbalanced ledger transactions: ${JSON.stringify(unbalanced, replacer)}`);
  const total = await pool.any(sql.type(z.object({ currency: z.string(), sum: z.bigint() }))`
    SELECT currency, sum(amount)::bigint AS sum FROM ledger_entries GROUP BY currency HAVING sum(amount) <> 0`);
  if (total.length)
    throw new Error(`ledger does not sum to zero: ${JSON.stringify(total, replacer)}`);
  const negative = await pool.any(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM ledger_accounts WHERE kind = 'user_wallet' AND balance < 0`);
  if (negative.length) throw new Error(`negative user wallets: ${JSON.stringify(negative)}`);
}

function replacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
