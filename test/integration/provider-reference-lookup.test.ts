import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { sql } from 'slonik';
import { cardDepositByPaymentQuery, findCardDepositByPayment } from '../../src/db/card-deposits';
import type { DatabasePool } from '../../src/db/pool';
import { findNotifiedPayment, notifiedPaymentQuery } from '../../src/db/provider-notifications';
import { createCaller, createTestDatabase } from '../support/database';

/**
 * The lookups of a provider's message and of the sandbox's 3-D Secure page know the provider's
 * reference but not the application: at many tenants' payments, they must read an index.
 */

const PAYMENTS = 20_000;
let pool: DatabasePool;
let url: string;
let apps: string[];

beforeAll(async () => {
  ({ pool, url } = await createTestDatabase());
  apps = [
    (await createCaller(pool, 'one')).applicationId,
    (await createCaller(pool, 'two')).applicationId,
  ];
  // Many tenants' payments in both modes, most with a provider reference.
  await pool.query(sql.unsafe`
    INSERT INTO transactions
      (id, application_id, mode, transaction_type, status, currency, amount, provider_reference)
    SELECT gen_random_uuid(), (${sql.array(apps, 'uuid')}::uuid[])[1 + g % 2],
      CASE WHEN g % 3 = 0 THEN 'live' ELSE 'test' END,
      (ARRAY['card_deposit', 'mobile_money_deposit', 'mobile_money_cashout'])[1 + g % 3],
      'completed', 'SLE', g, CASE WHEN g % 5 = 0 THEN NULL ELSE 'pay_' || g END
    FROM generate_series(1, ${PAYMENTS}) AS g`);
  await pool.query(sql.unsafe`ANALYZE transactions`);
});

afterAll(async () => pool?.end());

/** The plan Postgres picks for the query, with its parameters, as EXPLAIN prints it. */
async function planOf(query: { sql: string; values: readonly unknown[] }): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query<{ 'QUERY PLAN': string }>(
      // Slonik numbers its placeholders in its own way; pg takes $1, $2...
      `EXPLAIN (COSTS OFF) ${query.sql.replace(/\$slonik_(\d+)/g, '$$$1')}`,
      [...query.values],
    );
    return result.rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await client.end();
  }
}

async function insertPayment(type: string, mode: 'test' | 'live', reference: string | null) {
  const id = randomUUID();
  await pool.query(sql.unsafe`
    INSERT INTO transactions
      (id, application_id, mode, transaction_type, status, currency, amount, provider_reference)
    VALUES (${id}, ${apps[0]!}, ${mode}, ${type}, 'pending', 'SLE', 100, ${reference})`);
  return id;
}

describe('the payment a provider’s message is about', () => {
  it('is read through the provider-reference index and the primary key, never a scan', async () => {
    const plan = await planOf(
      notifiedPaymentQuery({
        transactionType: 'mobile_money_deposit',
        paymentReference: 'pay_1234',
        transactionId: randomUUID(),
      }),
    );
    expect(plan).toContain('transactions_provider_reference_idx');
    expect(plan).toContain('transactions_pkey');
    expect(plan).not.toContain('Seq Scan');
  });

  it('is found by its reference first, else by our id, of that type only', async () => {
    const byReference = await insertPayment('mobile_money_deposit', 'live', `ref_${randomUUID()}`);
    const byId = await insertPayment('mobile_money_deposit', 'test', null);
    const reference = (await pool.oneFirst(sql.unsafe`
      SELECT provider_reference FROM transactions WHERE id = ${byReference}`)) as string;
    const find = (
      paymentReference: string,
      transactionId: string | null,
      type = 'mobile_money_deposit',
    ) => findNotifiedPayment(pool, { transactionType: type, paymentReference, transactionId });
    expect(await find(reference, byId)).toEqual({
      id: byReference,
      mode: 'live',
      status: 'pending',
      providerReference: reference,
    });
    expect(await find('unknown', byId)).toMatchObject({ id: byId, providerReference: null });
    expect(await find('unknown', null)).toBeNull();
    expect(await find(reference, byId, 'card_deposit')).toBeNull();
  });
});

describe('the sandbox 3-D Secure page’s card deposit', () => {
  it('is read through the provider-reference index, in its mode only', async () => {
    const plan = await planOf(cardDepositByPaymentQuery('pay_4321', 'test'));
    expect(plan).toContain('transactions_provider_reference_idx');
    expect(plan).not.toContain('Seq Scan');
    const reference = `pi_${randomUUID()}`;
    const id = await insertPayment('card_deposit', 'test', reference);
    expect((await findCardDepositByPayment(pool, reference, 'test'))?.id).toBe(id);
    expect(await findCardDepositByPayment(pool, reference, 'live')).toBeNull();
    const live = `pi_${randomUUID()}`;
    await insertPayment('card_deposit', 'live', live);
    expect(await findCardDepositByPayment(pool, live, 'test')).toBeNull();
  });
});
