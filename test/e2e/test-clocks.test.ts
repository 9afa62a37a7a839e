import { sql } from 'slonik';
import { z } from 'zod';
import {
  assertLedgerInvariant,
  balanceOf,
  eventsOf,
  ledgerTransactionCount,
} from '../support/database';
import { createTestApp } from '../support/engine';
import {
  clientFor,
  createFundedWallet,
  createUserWithWallet,
  expectError,
  transfer,
} from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

const ADVANCE = '/api/v1/testing/advance-time';
const HOUR = 60 * 60;
const DAY = 24 * HOUR;

const engine = useTestEngine();
const { api, live } = useTestApp(engine);
const usd = useTestApp(engine, { currency: 'USD' });

const advance = (transactionId: string, seconds: unknown, client = api) =>
  client.post(ADVANCE, { transaction_id: transactionId, seconds });

/** What a payment's children (an escrow hold's releases and refunds) are, oldest first. */
const childrenOf = (parentId: string) =>
  engine.pool.any(sql.type(
    z.object({ id: z.string(), transaction_type: z.string(), status: z.string() }),
  )`
    SELECT id, transaction_type, status FROM transactions
    WHERE parent_id = ${parentId} ORDER BY created_at`);

describe('advance-time', () => {
  it('leaves a hold as it is when an advance falls short of expires_at, then a later one refunds it', async () => {
    const { walletId: sender } = await createFundedWallet(api, engine.pool, 10_000n);
    const hold = await api.post('/api/v1/escrow/hold', {
      wallet_id: sender,
      amount: 25,
      expires_at: new Date(Date.now() + DAY * 1000).toISOString(),
    });
    expect(hold.status).toBe(200);
    expect(await balanceOf(engine.pool, sender)).toBe(7_500n);

    const short = await advance(hold.body.id, 12 * HOUR);
    expect(short.status).toBe(200);
    expect(short.body).toEqual({ transaction_id: hold.body.id, status: 'held' });
    expect(await balanceOf(engine.pool, sender)).toBe(7_500n);
    expect(await childrenOf(hold.body.id)).toEqual([]);

    // The two advances add up past expires_at: refunded before the answer.
    const past = await advance(hold.body.id, 12 * HOUR + 1);
    expect(past.status).toBe(200);
    expect(past.body).toEqual({ transaction_id: hold.body.id, status: 'reversed' });
    expect(await balanceOf(engine.pool, sender)).toBe(10_000n);
    const [refund, ...others] = await childrenOf(hold.body.id);
    expect(others).toEqual([]);
    expect(refund).toMatchObject({ transaction_type: 'escrow_refund', status: 'completed' });
    expect((await eventsOf(engine.pool, refund!.id)).map((e) => e.type)).toEqual([
      'escrow.refunded',
    ]);
    expect(await ledgerTransactionCount(engine.pool, refund!.id)).toBe(1);
    expect((await api.get(`/api/v1/escrow/${hold.body.id}`)).body).toMatchObject({
      escrow_amount: 0,
      status: 'reversed',
    });
    await assertLedgerInvariant(engine.pool);

    // The hold's workflow has ended: nothing waits on a timer any more.
    const after = await advance(hold.body.id, 60);
    expect(expectError(after, 400)).toBe('The payment is not waiting on a timer');
  });

  it('expires a payment code, and the deposit moves no money', async () => {
    const { walletId } = await createUserWithWallet(api);
    const deposit = await api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      wallet_id: walletId,
      amount: 500,
    });
    expect(deposit.status).toBe(200);
    const id = deposit.body.transaction_id as string;
    const res = await advance(id, HOUR);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ transaction_id: id, status: 'expired' });
    expect((await api.get(`/api/v1/transactions/${id}`)).body.status).toBe('expired');
    // The sandbox provider's code moved with the clock: it is expired too, and cannot be paid.
    const code = () =>
      engine.pool.oneFirst(sql.type(z.object({ status: z.string() }))`
        SELECT CASE WHEN status = 'pending' AND expires_at <= now() THEN 'expired' ELSE status END
          AS status FROM sandbox_payment_codes
        WHERE id = (SELECT provider_reference FROM transactions WHERE id = ${id})`);
    expect(await code()).toBe('expired');
    const paid = await api.post('/api/v1/testing/simulate-mobile-money-webhook', {
      transaction_id: id,
      status: 'successful',
    });
    expect(paid.status).toBe(200);
    expect(paid.body.status).toBe('expired');
    expect(await code()).toBe('expired');
    expect((await eventsOf(engine.pool, id)).map((e) => e.type)).toEqual(['deposit.failed']);
    expect(await ledgerTransactionCount(engine.pool, id)).toBe(0);
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
  });

  it('moves the sandbox code’s expiry with an advance that falls short of it', async () => {
    const { walletId } = await createUserWithWallet(api);
    const deposit = await api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      wallet_id: walletId,
      amount: 500,
    });
    const id = deposit.body.transaction_id as string;
    const expiry = () =>
      engine.pool.oneFirst(sql.type(z.object({ at: z.number() }))`
        SELECT extract(epoch FROM expires_at)::float8 AS at FROM sandbox_payment_codes
        WHERE id = (SELECT provider_reference FROM transactions WHERE id = ${id})`);
    const before = await expiry();
    expect((await advance(id, 60)).body).toEqual({ transaction_id: id, status: 'pending' });
    expect(before - (await expiry())).toBe(60);
    // Still payable: the deposit completes as it would have.
    const paid = await api.post('/api/v1/testing/simulate-mobile-money-webhook', {
      transaction_id: id,
      status: 'successful',
    });
    expect(paid.body.status).toBe('completed');
    expect(await ledgerTransactionCount(engine.pool, id)).toBe(1);
  });

  it('lapses a card payment’s 3-D Secure wait: canceled at the provider, the deposit expired', async () => {
    const { walletId } = await createUserWithWallet(usd.api);
    const deposit = await usd.api.post('/api/v1/transactions/wallet/card-deposit', {
      wallet_id: walletId,
      amount: 10,
      payment_method_id: 'pm_card_authenticationRequired',
    });
    expect(deposit.body.status).toBe('pending');
    const id = deposit.body.id as string;
    const res = await advance(id, 2 * HOUR, usd.api);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ transaction_id: id, status: 'expired' });
    expect((await eventsOf(engine.pool, id)).map((e) => e.type)).toEqual(['deposit.failed']);
    const payment = await engine.pool.oneFirst(sql.type(z.object({ status: z.string() }))`
      SELECT status FROM sandbox_card_payments WHERE id = ${deposit.body.provider_reference as string}`);
    expect(payment).toBe('failed');
    expect(await ledgerTransactionCount(engine.pool, id)).toBe(0);
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
  });

  it('answers 403 to Live Mode credentials and for a payment of another application, 404 for none', async () => {
    const { walletId } = await createUserWithWallet(api);
    const deposit = await api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      wallet_id: walletId,
      amount: 500,
    });
    const id = deposit.body.transaction_id as string;
    expectError(await advance(id, 60, live), 403);
    expectError(await advance('00000000-0000-4000-8000-000000000000', 60), 404);
    const other = clientFor(engine.url, await createTestApp(engine.pool));
    expectError(await advance(id, 60, other), 403);
    // None of those touched it: still pending, its code still waiting.
    expect((await api.get(`/api/v1/transactions/${id}`)).body.status).toBe('pending');
  });

  it('answers 400 for a payment that waits on no timer: a transfer, a hold without expiry', async () => {
    const { walletId: from } = await createFundedWallet(api, engine.pool, 1_000n);
    const { walletId: to } = await createUserWithWallet(api);
    const moved = await transfer(api, from, to, 1);
    expect(expectError(await advance(moved.id as string, 60), 400)).toBe(
      'The payment is not waiting on a timer',
    );
    const hold = await api.post('/api/v1/escrow/hold', { wallet_id: from, amount: 2 });
    expect(expectError(await advance(hold.body.id as string, 60), 400)).toBe(
      'The payment is not waiting on a timer',
    );
    expect((await api.get(`/api/v1/escrow/${hold.body.id}`)).body.status).toBe('held');
  });

  it('answers 422 naming seconds out of 1 to 31,536,000 or not an integer, changing nothing', async () => {
    const { walletId: sender } = await createFundedWallet(api, engine.pool, 1_000n);
    const hold = await api.post('/api/v1/escrow/hold', {
      wallet_id: sender,
      amount: 2,
      expires_at: new Date(Date.now() + DAY * 1000).toISOString(),
    });
    for (const seconds of [0, -5, 31_536_001, 1.5, '60', null]) {
      expect(expectError(await advance(hold.body.id as string, seconds), 422)).toContain('seconds');
    }
    const missing = await api.post(ADVANCE, { transaction_id: hold.body.id });
    expect(expectError(missing, 422)).toContain('seconds');
    expect((await api.get(`/api/v1/escrow/${hold.body.id}`)).body).toMatchObject({
      status: 'held',
      escrow_amount: 2,
    });
    expect(await balanceOf(engine.pool, sender)).toBe(800n);
  });
});
