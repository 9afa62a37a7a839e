import { sql } from 'slonik';
import { z } from 'zod';
import { parseMajorDecimal } from '../../src/domain/money';
import { workflowIds } from '../../src/workflows/ids';
import {
  assertLedgerInvariant,
  balanceOf,
  eventsOf as eventsOfPayment,
  systemBalance,
} from '../support/database';
import { createTestApp } from '../support/engine';
import { clientFor, createUserWithWallet } from '../support/http';
import { reply, useWalletClient } from '../support/client';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { app, api } = useTestApp(engine, { settings: { feeBps: { mobile_money: 150 } } });
const client = useWalletClient(engine, app);
const liveClient = useWalletClient(engine, app, 'live');

const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const SIMULATE = '/api/v1/testing/simulate-mobile-money-webhook';

const accountBalance = (kind: string, appId = app.id, currency: 'SLE' | 'USD' = 'SLE') =>
  systemBalance(engine.pool, appId, kind, currency);

const eventsOf = (transactionId: string) => eventsOfPayment(engine.pool, transactionId);

describe('mobile-money deposits', () => {
  it('answers with the payment code, then credits the wallet once the payer pays', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await reply(
      client.raw.POST(DEPOSIT, { body: { wallet_id: walletId, amount: 10_000 } }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      transaction_id: expect.any(String),
      payment_code: {
        status: 'pending',
        result: {
          id: expect.stringMatching(/^pmc_/),
          code: expect.stringMatching(/^\*715\*\d{6}#$/),
          amount: 10_250,
          currency: 'SLE',
        },
      },
      transaction: {
        id: res.body.transaction_id,
        wallet_id: walletId,
        amount: 10_000,
        currency: 'SLE',
        status: 'pending',
        provider_fee: 100,
        application_fee: 150,
        total_amount_paid: 10_250,
      },
    });
    expect(res.body.payment_code.result.instructions).toContain(res.body.payment_code.result.code);
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);

    const feesBefore = await accountBalance('application_fees');
    const paid = await reply(
      client.raw.POST(SIMULATE, {
        body: {
          transaction_id: res.body.transaction_id,
          status: 'successful',
        },
      }),
    );
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({
      transaction_id: res.body.transaction_id,
      status: 'completed',
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
    expect((await accountBalance('application_fees')) - feesBefore).toBe(150n);
    const events = await eventsOf(res.body.transaction_id);
    expect(events.map((e) => e.type)).toEqual(['deposit.completed']);
    expect(events[0]!.data).toMatchObject({
      id: res.body.transaction_id,
      status: 'completed',
      sle_amount: 10_000,
    });

    // The workflow has ended: the second notification's update is refused by Temporal.
    await engine.temporal.workflow.getHandle(workflowIds.deposit(res.body.transaction_id)).result();
    const again = await reply(
      client.raw.POST(SIMULATE, {
        body: {
          transaction_id: res.body.transaction_id,
          status: 'successful',
        },
      }),
    );
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('completed');
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
    expect(await eventsOf(res.body.transaction_id)).toHaveLength(1);
    await assertLedgerInvariant(engine.pool);
  });

  it('fails the deposit on a failed payment and moves no money', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await reply(
      client.raw.POST(DEPOSIT, { body: { wallet_id: walletId, amount: 500 } }),
    );
    const failed = await reply(
      client.raw.POST(SIMULATE, {
        body: {
          transaction_id: res.body.transaction_id,
          status: 'failed',
        },
      }),
    );
    expect(failed.status).toBe(200);
    expect(failed.body.status).toBe('failed');
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect((await eventsOf(res.body.transaction_id)).map((e) => e.type)).toEqual([
      'deposit.failed',
    ]);
    const ledger = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM ledger_transactions WHERE transaction_id = ${res.body.transaction_id}`);
    expect(ledger).toBe(0);
  });

  it('answers 400 when the sandbox refuses to create a payment code, writing nothing', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await reply(
      client.raw.POST(DEPOSIT, { body: { wallet_id: walletId, amount: 4040 } }),
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'Provider failed to create the payment code' });
    const rows = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions WHERE wallet_id = ${walletId}`);
    expect(rows).toBe(0);
  });

  it('answers 401, 403, 404 and 422 as the specification says', async () => {
    const { walletId } = await createUserWithWallet(api);
    expect(
      (await clientFor(engine.url, null).post(DEPOSIT, { wallet_id: walletId, amount: 100 }))
        .status,
    ).toBe(401);
    expect(
      (
        await reply(
          client.raw.POST(DEPOSIT, {
            body: { wallet_id: '00000000-0000-4000-8000-000000000000', amount: 100 },
          }),
        )
      ).status,
    ).toBe(404);
    for (const amount of [0, -5, 10.5, '100', null, 1e14]) {
      // Some of these amounts the typed client cannot send: raw HTTP.
      const bad = await api.post(DEPOSIT, { wallet_id: walletId, amount });
      expect(bad.status).toBe(422);
    }
    // Judged as written: a literal that rounds to an integer as a float is still not one.
    const inexact = await api.request('POST', DEPOSIT, {
      raw: `{"wallet_id":"${walletId}","amount":100.00000000000000001}`,
    });
    expect(inexact.status).toBe(422);
    expect(inexact.body).toEqual({ detail: 'amount: must be an integer count of minor units' });
    const deposits = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions WHERE wallet_id = ${walletId}`);
    expect(deposits).toBe(0);
    const other = await createTestApp(engine.pool);
    const foreign = await createUserWithWallet(clientFor(engine.url, other));
    expect(
      (
        await reply(
          client.raw.POST(DEPOSIT, { body: { wallet_id: foreign.walletId, amount: 100 } }),
        )
      ).status,
    ).toBe(403);
    await reply(
      client.raw.POST('/api/v1/wallets/{wallet_id}/disable', {
        params: { path: { wallet_id: walletId } },
      }),
    );
    const disabled = await reply(
      client.raw.POST(DEPOSIT, { body: { wallet_id: walletId, amount: 100 } }),
    );
    expect(disabled.status).toBe(403);
    expect(disabled.body.detail).toBe('Wallet is disabled');
  });

  it('answers 503 in Live Mode without live provider credentials, writing nothing', async () => {
    const live = clientFor(engine.url, app, 'live');
    const { walletId } = await createUserWithWallet(live);
    const res = await reply(
      liveClient.raw.POST(DEPOSIT, { body: { wallet_id: walletId, amount: 100 } }),
    );
    expect(res.status).toBe(503);
    expect(res.body.detail).toMatch(/not configured/);
    const rows = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions WHERE wallet_id = ${walletId}`);
    expect(rows).toBe(0);
    expect(
      (await reply(liveClient.raw.POST(SIMULATE, { body: { transaction_id: walletId } }))).status,
    ).toBe(403);
  });

  it('sync completes a payment whose notification never arrived, exactly once, even racing a notification', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await reply(
      client.raw.POST(DEPOSIT, { body: { wallet_id: walletId, amount: 2_000 } }),
    );
    const reference = res.body.payment_code.result.id as string;
    // The payer paid, but the provider's notification is lost.
    await engine.pool.query(
      sql.unsafe`UPDATE sandbox_payment_codes SET status = 'completed' WHERE id = ${reference}`,
    );
    const replies = await Promise.all([
      reply(
        client.raw.POST('/api/v1/transactions/sync/{reference_id}', {
          params: { path: { reference_id: reference } },
        }),
      ),
      reply(
        client.raw.POST('/api/v1/transactions/sync/{reference_id}', {
          params: { path: { reference_id: reference } },
        }),
      ),
      reply(client.raw.POST(SIMULATE, { body: { transaction_id: res.body.transaction_id } })),
      reply(
        client.raw.POST('/api/v1/transactions/sync/{reference_id}', {
          params: { path: { reference_id: res.body.transaction_id } },
        }),
      ),
    ]);
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(replies.map((r) => r.body.status)).toEqual([
      'completed',
      'completed',
      'completed',
      'completed',
    ]);
    expect(replies[0].body.transaction_id).toBe(res.body.transaction_id);
    expect(await balanceOf(engine.pool, walletId)).toBe(2_000n);
    expect(await eventsOf(res.body.transaction_id)).toHaveLength(1);
    await assertLedgerInvariant(engine.pool);

    const other = await createTestApp(engine.pool);
    expect(
      (await clientFor(engine.url, other).post(`/api/v1/transactions/sync/${reference}`)).status,
    ).toBe(404);
    expect((await api.post('/api/v1/transactions/sync/pmc_nothing')).status).toBe(404);
  });

  it('credits a USD wallet at the configured rate and records the conversion', async () => {
    const usdApp = await createTestApp(engine.pool, { currency: 'USD' });
    const usd = clientFor(engine.url, usdApp);
    const { walletId } = await createUserWithWallet(usd);
    const res = await usd.post(DEPOSIT, { wallet_id: walletId, amount: 2_460 }); // 24.60 SLE at 24.00 = 1.025 USD -> 1.02
    expect(res.status).toBe(200);
    expect(
      (await usd.post(SIMULATE, { transaction_id: res.body.transaction_id })).body.status,
    ).toBe('completed');
    expect(await balanceOf(engine.pool, walletId)).toBe(102n);
    const wallet = await usd.get(`/api/v1/wallets/?per_page=5`);
    expect(wallet.body[0]).toMatchObject({ balance: 1.02, currency: 'USD' });
    const meta = await engine.pool.oneFirst(sql.type(z.object({ metadata: z.any() }))`
      SELECT metadata FROM ledger_transactions WHERE transaction_id = ${res.body.transaction_id}`);
    expect(meta).toMatchObject({
      sle_amount: '2460',
      credited_amount: '102',
      credited_currency: 'USD',
      fx_sle_per_usd: '24.00',
    });
    await assertLedgerInvariant(engine.pool);
  });

  it('charges exactly what the fee estimate announced', async () => {
    const { walletId } = await createUserWithWallet(api);
    for (const cents of [1, 50, 150, 12_345, 99_999_999]) {
      const estimate = await reply(
        client.raw.POST('/api/v1/fees/estimate/deposit', {
          body: {
            amount: cents / 100,
            payment_method: 'mobile_money',
          },
        }),
      );
      expect(estimate.status).toBe(200);
      const deposit = await reply(
        client.raw.POST(DEPOSIT, { body: { wallet_id: walletId, amount: cents } }),
      );
      expect(deposit.status).toBe(200);
      const breakdown = estimate.body.fee_breakdown;
      const toCents = (s: string) => Number(parseMajorDecimal(s));
      expect(deposit.body.transaction.provider_fee).toBe(toCents(breakdown.estimated_provider_fee));
      expect(deposit.body.transaction.application_fee).toBe(toCents(breakdown.application_fee));
      expect(deposit.body.transaction.total_amount_paid).toBe(
        toCents(breakdown.total_amount_to_pay),
      );
    }
  });

  it('rejects a provider notification with a bad signature', async () => {
    const res = await clientFor(engine.url, null).request(
      'POST',
      '/api/v1/webhooks/providers/mobile-money',
      {
        raw: JSON.stringify({
          event: 'payment_code.completed',
          data: { id: 'pmc_x', status: 'completed' },
        }),
        headers: { 'sandbox-signature': 't=1,v1=00' },
      },
    );
    expect(res.status).toBe(400);
  });
});
