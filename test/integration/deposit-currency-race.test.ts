import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { sql } from 'slonik';
import { z } from 'zod';
import { insertPendingDeposit } from '../../src/activities/deposit';
import { createFixtureApplication } from '../../tools/harness/fixtures';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool';
import { createTestDatabase, insertFundedWallet } from '../support/database';

/**
 * A deposit's pending record against a currency switch (src/db/applications.ts): the record is
 * written only while the wallet still holds the deposit's currency, and a switch that holds the
 * wallet's lock makes the record wait for its outcome.
 */
let database: { url: string; pool: DatabasePool };
/** The switch's own connection: slonik refuses the pool inside one of its transactions. */
let switcher: DatabasePool;
let scope: { applicationId: string; mode: 'test'; credentialId: string };

beforeAll(async () => {
  database = await createTestDatabase();
  switcher = await createDatabasePool(database.url, { maximumPoolSize: 1 });
  const app = await createFixtureApplication(database.pool, { modes: ['test'], currency: 'SLE' });
  scope = { applicationId: app.id, mode: 'test', credentialId: randomUUID() };
});
afterAll(async () => {
  await switcher?.end();
  await database?.pool.end();
});

const pending = (walletId: string) => ({
  id: randomUUID(),
  applicationId: scope.applicationId,
  mode: scope.mode,
  type: 'mobile_money_deposit' as const,
  status: 'pending' as const,
  currency: 'SLE' as const,
  amount: 100n,
  walletId,
});

const rowsOf = (walletId: string) =>
  database.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM transactions WHERE wallet_id = ${walletId}`);

describe('a pending deposit’s record', () => {
  it('is written while the wallet holds the deposit’s currency', async () => {
    const wallet = await insertFundedWallet(database.pool, scope, 'SLE', 0n);
    const input = { ...scope, walletId: wallet };
    const row = await insertPendingDeposit(database.pool, input, 'SLE', pending(wallet));
    expect(row).toMatchObject({ status: 'pending', currency: 'SLE', wallet_id: wallet });
    expect(await rowsOf(wallet)).toBe(1);
  });

  it('waits for a switch that holds the wallet, then is declined and writes nothing', async () => {
    const wallet = await insertFundedWallet(database.pool, scope, 'SLE', 0n);
    let locked!: () => void;
    let proceed!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const goOn = new Promise<void>((resolve) => (proceed = resolve));
    // The switch's lock, as src/db/applications.ts takes it, then its change.
    const switching = switcher.transaction(async (trx) => {
      await trx.query(sql.unsafe`SELECT 1 FROM ledger_accounts WHERE id = ${wallet} FOR UPDATE`);
      locked();
      await goOn;
      await trx.query(sql.unsafe`UPDATE ledger_accounts SET currency = 'USD' WHERE id = ${wallet}`);
    });
    await lockTaken;
    const input = { ...scope, walletId: wallet };
    const written = insertPendingDeposit(database.pool, input, 'SLE', pending(wallet)).then(
      () => 'written',
      (error: unknown) => error,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    proceed();
    await switching;
    const outcome = await written;
    expect(outcome).toBeInstanceOf(ApplicationFailure);
    expect(outcome).toMatchObject({ type: 'currency_mismatch', nonRetryable: true });
    expect(await rowsOf(wallet)).toBe(0);
  });
});
