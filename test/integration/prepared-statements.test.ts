import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { createTransferActivities } from '../../src/activities/transfer';
import { findTransaction } from '../../src/db/transactions';
import { createDatabasePool, prepare, type DatabasePool } from '../../src/db/pool';
import type { Caller } from '../../src/domain/types';
import {
  assertLedgerInvariant,
  balanceOf,
  createCaller,
  createTestDatabase,
  insertFundedWallet,
} from '../support/database';

let pool: DatabasePool;
let url: string;
let caller: Caller;

beforeAll(async () => {
  ({ pool, url } = await createTestDatabase());
  caller = await createCaller(pool, 'prepared statements');
});
afterAll(async () => pool?.end());

const preparedRow = z.object({ name: z.string(), statement: z.string(), runs: z.number() });

/** The statements the pool's one connection has prepared, with how often each ran. */
const preparedOn = (one: DatabasePool) =>
  one.any(sql.type(preparedRow)`
    SELECT name, statement, (generic_plans + custom_plans)::int AS runs
    FROM pg_prepared_statements ORDER BY name`);

/**
 * Three transfers of 1 from a wallet of 10 through a one-connection pool, each by fresh activities
 * (which remember no wallet: each runs the usual transaction), or, `remembering`, by shared ones:
 * the first the usual way, the next two in one statement each (src/activities/transfer.ts).
 */
async function threeTransfers(one: DatabasePool, remembering = false) {
  const from = await insertFundedWallet(pool, caller, 'SLE', 10n);
  const to = await insertFundedWallet(pool, caller, 'SLE', 1n);
  const shared = createTransferActivities({ pool: one });
  for (let i = 0; i < 3; i += 1) {
    const { transferFunds } = remembering ? shared : createTransferActivities({ pool: one });
    await transferFunds({
      transactionId: randomUUID(),
      applicationId: caller.applicationId,
      mode: caller.mode,
      fromWalletId: from,
      toWalletId: to,
      amount: '1',
      description: 'prepared',
    });
  }
  expect(await balanceOf(pool, from)).toBe(7n);
  expect(await balanceOf(pool, to)).toBe(4n);
}

describe('prepared statements', () => {
  it("prepares a money step's statements once per connection and runs them again by name", async () => {
    const one = await createDatabasePool(url, { maximumPoolSize: 1 });
    try {
      await threeTransfers(one);
      let prepared = await preparedOn(one);
      const usual = (text: string) =>
        prepared.find(
          (p) => p.statement.includes(text) && !p.statement.includes('transfer_checked'),
        );
      let lock = usual('FOR NO KEY UPDATE OF a');
      let ledger = usual('INSERT INTO ledger_entries');
      // Parsed once on this connection, run three times: the lock and the ledger statement.
      expect(lock).toMatchObject({ name: expect.stringMatching(/^wallet_[0-9a-f]{32}$/), runs: 3 });
      expect(ledger).toMatchObject({ runs: 3 });
      expect(ledger?.name).not.toBe(lock?.name);
      expect(prepared.some((p) => p.statement.includes('transfer_checked'))).toBe(false);
      // Wallets remembered: the two transfers after the first are one statement each, which
      // locks, checks and writes, parsed once and run again by name.
      await threeTransfers(one, true);
      prepared = await preparedOn(one);
      lock = usual('FOR NO KEY UPDATE OF a');
      ledger = usual('INSERT INTO ledger_entries');
      const atOnce = prepared.find((p) => p.statement.includes('transfer_checked'));
      expect(lock).toMatchObject({ runs: 4 });
      expect(ledger).toMatchObject({ runs: 4 });
      expect(atOnce).toMatchObject({
        name: expect.stringMatching(/^wallet_[0-9a-f]{32}$/),
        runs: 2,
      });
      // A payment read by its id (an escrow release or refund reads its hold so): prepared too.
      const id = await pool.oneFirst(
        sql.type(z.object({ id: z.string() }))`SELECT id FROM transactions LIMIT 1`,
      );
      for (let i = 0; i < 2; i += 1) expect((await findTransaction(one, id))?.id).toBe(id);
      const byId = (await preparedOn(one)).find((p) =>
        /^SELECT id, .* FROM transactions WHERE id = \$1$/s.test(p.statement),
      );
      expect(byId).toMatchObject({ runs: 2 });
      await assertLedgerInvariant(pool);
    } finally {
      await one.end();
    }
  });

  it('runs them unnamed on a pool opened without prepared statements (a pooler that cannot keep them)', async () => {
    const one = await createDatabasePool(url, { maximumPoolSize: 1, preparedStatements: false });
    try {
      await threeTransfers(one);
      expect(await preparedOn(one)).toEqual([]);
    } finally {
      await one.end();
    }
  });

  it('names a statement by its text, and stops naming new texts past its bound', () => {
    const text = (i: number) => sql.unsafe`SELECT ${i}::int AS n, ${`t${i}`}::text AS t`;
    expect(prepare(text(1)).name).toBe(prepare(text(2)).name); // the values differ, not the text
    // An identifier is part of the text: each of these is a text of its own.
    const varied = (i: number) => prepare(sql.unsafe`SELECT 1 AS ${sql.identifier([`c${i}`])}`);
    const first = varied(0).name;
    expect(first).toMatch(/^wallet_/);
    expect(varied(1).name).not.toBe(first);
    let named = 2;
    while (varied(named).name !== undefined) named += 1;
    // Every text this file prepared counts, the transfers' too: at most 100 in all.
    expect(named).toBeLessThanOrEqual(100);
    expect(named).toBeGreaterThan(90);
    expect(varied(0).name).toBe(first); // a text named before keeps its name
  });
});
