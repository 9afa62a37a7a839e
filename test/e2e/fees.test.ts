import { sql } from 'slonik';
import { z } from 'zod';
import { updateApplication } from '../../src/db/applications';
import { computeDepositFees } from '../../src/domain/fees';
import { minorToDecimalString } from '../../src/domain/money';
import { createTestApp } from '../support/engine';
import { clientFor } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { app, api } = useTestApp(engine);

const ESTIMATE = '/api/v1/fees/estimate/deposit';

function breakdown(
  amount: string,
  application: string,
  provider: string,
  total: string,
  pay: string,
) {
  return {
    transaction_amount: amount,
    application_fee: application,
    estimated_provider_fee: provider,
    total_fees: total,
    total_amount_to_pay: pay,
    net_amount: amount,
  };
}

describe('POST /api/v1/fees/estimate/deposit', () => {
  it.each([
    ['mobile_money', false, 100, breakdown('100.00', '0.00', '1.00', '1.00', '101.00')],
    ['card', false, 100, breakdown('100.00', '0.00', '3.20', '3.20', '103.20')],
    ['card', true, 100, breakdown('100.00', '0.00', '4.20', '4.20', '104.20')],
    ['bank', false, 100, breakdown('100.00', '0.00', '1.00', '1.00', '101.00')],
    ['wallet', false, 100, breakdown('100.00', '0.00', '0.00', '0.00', '100.00')],
    // Smallest amounts: the fixed parts remain, the rates round to nothing.
    ['mobile_money', false, 0.01, breakdown('0.01', '0.00', '0.00', '0.00', '0.01')],
    ['card', false, 0.01, breakdown('0.01', '0.00', '0.30', '0.30', '0.31')],
    ['bank', false, 0.01, breakdown('0.01', '0.00', '1.00', '1.00', '1.01')],
    // Halves round to even: 12.5 cents -> 12, 14.5 -> 14 (+ 30), 19.5 -> 20 (+ 30).
    ['mobile_money', false, 12.5, breakdown('12.50', '0.00', '0.12', '0.12', '12.62')],
    ['card', false, 5, breakdown('5.00', '0.00', '0.44', '0.44', '5.44')],
    ['card', true, 5, breakdown('5.00', '0.00', '0.50', '0.50', '5.50')],
    // The largest amount accepted on the wire.
    [
      'card',
      true,
      100_000_000_000,
      breakdown('100000000000.00', '0.00', '3900000000.30', '3900000000.30', '103900000000.30'),
    ],
  ])('%s (international %p) of %p', async (method, international, amount, expected) => {
    const res = await api.post(ESTIMATE, {
      amount,
      payment_method: method,
      is_international: international,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      transaction_type: 'deposit',
      payment_method: method,
      fee_enabled: false,
      fee_breakdown: expected,
      message: expect.any(String),
    });
  });

  it('defaults is_international to false: the domestic card rate', async () => {
    const res = await api.post(ESTIMATE, { amount: 100, payment_method: 'card' });
    expect(res.status).toBe(200);
    expect(res.body.fee_breakdown.estimated_provider_fee).toBe('3.20');
    expect(res.body.message).toMatch(/domestic/);
    const international = await api.post(ESTIMATE, {
      amount: 100,
      payment_method: 'card',
      is_international: true,
    });
    expect(international.body.fee_breakdown.estimated_provider_fee).toBe('4.20');
    expect(international.body.message).toMatch(/international/);
  });

  it('adds the application fee set per payment method, and flips fee_enabled', async () => {
    const feeApp = await createTestApp(engine.pool);
    const feeApi = clientFor(engine.url, feeApp);
    const before = await feeApi.post(ESTIMATE, { amount: 12.5, payment_method: 'mobile_money' });
    expect(before.body).toMatchObject({
      fee_enabled: false,
      fee_breakdown: breakdown('12.50', '0.00', '0.12', '0.12', '12.62'),
    });

    await updateApplication(engine.pool, feeApp.id, { feeBps: { mobile_money: 150 } });
    // 1 250 × 1.5 % = 18.75 -> 19 cents; the provider's 12.5 -> 12 cents.
    const after = await feeApi.post(ESTIMATE, { amount: 12.5, payment_method: 'mobile_money' });
    expect(after.status).toBe(200);
    expect(after.body).toEqual({
      transaction_type: 'deposit',
      payment_method: 'mobile_money',
      fee_enabled: true,
      fee_breakdown: breakdown('12.50', '0.19', '0.12', '0.31', '12.81'),
      message: expect.any(String),
    });
    // The same numbers as the deposit itself computes.
    const fees = computeDepositFees({
      method: 'mobile_money',
      amount: 1_250n,
      applicationFeeBps: 150,
    });
    expect(after.body.fee_breakdown).toEqual(
      breakdown(
        minorToDecimalString(fees.transactionAmount),
        minorToDecimalString(fees.applicationFee),
        minorToDecimalString(fees.providerFee),
        minorToDecimalString(fees.totalFees),
        minorToDecimalString(fees.totalAmountToPay),
      ),
    );

    // Other methods of that application carry no application fee; Live mode sees the same.
    const card = await feeApi.post(ESTIMATE, { amount: 100, payment_method: 'card' });
    expect(card.body).toMatchObject({
      fee_enabled: false,
      fee_breakdown: breakdown('100.00', '0.00', '3.20', '3.20', '103.20'),
    });
    const live = await clientFor(engine.url, feeApp, 'live').post(ESTIMATE, {
      amount: 12.5,
      payment_method: 'mobile_money',
    });
    expect(live.body).toEqual(after.body);

    // Setting it to 0 turns it off again; the first application never saw any of this.
    await updateApplication(engine.pool, feeApp.id, { feeBps: { mobile_money: 0 } });
    const off = await feeApi.post(ESTIMATE, { amount: 12.5, payment_method: 'mobile_money' });
    expect(off.body).toEqual(before.body);
    const untouched = await api.post(ESTIMATE, { amount: 12.5, payment_method: 'mobile_money' });
    expect(untouched.body.fee_enabled).toBe(false);
  });

  it.each([
    ['amount 0', { amount: 0, payment_method: 'card' }],
    ['amount -1', { amount: -1, payment_method: 'card' }],
    ['amount 1.001', { amount: 1.001, payment_method: 'card' }],
    ['amount as a string', { amount: '5', payment_method: 'card' }],
    ['amount above the maximum', { amount: 100_000_000_000.01, payment_method: 'card' }],
    ['a missing amount', { payment_method: 'card' }],
    ['an unknown method', { amount: 5, payment_method: 'crypto' }],
    ['a missing method', { amount: 5 }],
    ['a non-boolean is_international', { amount: 5, payment_method: 'card', is_international: 1 }],
  ])('answers 422 for %s', async (_name, body) => {
    const res = await api.post(ESTIMATE, body);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: expect.any(String) });
  });

  it('names the failing field in the 422 detail', async () => {
    const zero = await api.post(ESTIMATE, { amount: 0, payment_method: 'card' });
    expect(zero.body.detail).toMatch(/^amount: .*greater than 0/);
    const crypto = await api.post(ESTIMATE, { amount: 5, payment_method: 'crypto' });
    expect(crypto.body.detail).toBe(
      'payment_method: must be one of mobile_money, card, bank, wallet',
    );
  });

  it('answers 401 without or with wrong credentials', async () => {
    const bare = clientFor(engine.url, null);
    const none = await bare.post(ESTIMATE, { amount: 5, payment_method: 'card' });
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ detail: expect.any(String) });
    const wrong = await bare.post(
      ESTIMATE,
      { amount: 5, payment_method: 'card' },
      { 'api-key': app.credentials.test.apiKey, 'secret-key': 'not-the-secret' },
    );
    expect(wrong.status).toBe(401);
  });

  it('moves no money and writes nothing', async () => {
    const quiet = await createTestApp(engine.pool);
    await updateApplication(engine.pool, quiet.id, { feeBps: { card: 100, bank: 50 } });
    const quietApi = clientFor(engine.url, quiet);
    for (const payment_method of ['mobile_money', 'card', 'bank', 'wallet']) {
      const res = await quietApi.post(ESTIMATE, { amount: 250.75, payment_method });
      expect(res.status).toBe(200);
    }
    const count = async (query: ReturnType<typeof sql.fragment>) =>
      engine.pool.oneFirst(
        sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n ${query}`,
      );
    const id = quiet.id;
    expect(await count(sql.fragment`FROM transactions WHERE application_id = ${id}`)).toBe(0);
    expect(await count(sql.fragment`FROM ledger_transactions WHERE application_id = ${id}`)).toBe(
      0,
    );
    expect(
      await count(sql.fragment`FROM ledger_entries e
        JOIN ledger_accounts a ON a.id = e.account_id WHERE a.application_id = ${id}`),
    ).toBe(0);
    expect(await count(sql.fragment`FROM events WHERE application_id = ${id}`)).toBe(0);
    expect(await count(sql.fragment`FROM idempotency_keys WHERE application_id = ${id}`)).toBe(0);
  });
});
