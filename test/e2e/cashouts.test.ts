import { createProviders } from '../../src/providers';
import { workflowIds } from '../../src/workflows/ids';
import {
  assertLedgerInvariant,
  balanceOf,
  eventsOf as eventsOfPayment,
  fundWallet,
  ledgerLegs,
  systemBalance,
} from '../support/database';
import { createTestApp } from '../support/engine';
import { clientFor, createFundedWallet, createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { awaitRoomInWindow } from '../support/rate-limit';
import { sandboxMobileMoneyPayouts } from '../support/payouts';

const engine = useTestEngine();
const { app, api } = useTestApp(engine, { settings: { feeBps: { mobile_money_cashout: 200 } } });

const CASHOUT = '/api/v1/transactions/wallet/mobile-money-cashout';
const SIMULATE = '/api/v1/testing/simulate-mobile-money-webhook';
const PHONE = '+23276123456';

const balance = (kind: string, appId = app.id, currency: 'SLE' | 'USD' = 'SLE') =>
  systemBalance(engine.pool, appId, kind, currency);
const eventsOf = (transactionId: string) => eventsOfPayment(engine.pool, transactionId);

describe('mobile-money cashouts', () => {
  it('reserves amount and fees, answers pending, then settles once when the payout succeeds', async () => {
    const { walletId } = await createFundedWallet(api, engine.pool, 100_000n);
    const feesBefore = await balance('application_fees');
    const providerBefore = await balance('provider_clearing_mobile_money');
    const res = await api.post(CASHOUT, {
      wallet_id: walletId,
      amount: 10_000,
      phone_number: PHONE,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      wallet_id: walletId,
      transaction_type: 'mobile_money_cashout',
      status: 'pending',
      currency: 'SLE',
      amount: 100,
      provider_fee: 1,
      application_fee: 2,
      total_amount: 103,
      provider_reference: expect.stringMatching(/^po_/),
    });
    const id = res.body.id as string;
    expect(await balanceOf(engine.pool, walletId)).toBe(100_000n - 10_300n);
    expect(await balance('payouts')).toBe(10_300n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([{ step: 'reserve', legs: 2 }]);
    expect(await eventsOf(id)).toEqual([]);

    const paid = await api.post(SIMULATE, { transaction_id: id, status: 'successful' });
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ transaction_id: id, status: 'completed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(89_700n);
    expect(await balance('payouts')).toBe(0n);
    expect((await balance('application_fees')) - feesBefore).toBe(200n);
    expect((await balance('provider_clearing_mobile_money')) - providerBefore).toBe(10_100n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([
      { step: 'reserve', legs: 2 },
      { step: 'settle', legs: 3 },
    ]);
    const events = await eventsOf(id);
    expect(events.map((e) => e.type)).toEqual(['cashout.completed']);
    expect(events[0]!.data).toMatchObject({
      id,
      status: 'completed',
      amount: 100,
      provider_fee: 1,
      application_fee: 2,
      provider_reference: res.body.provider_reference,
    });
    const read = await api.get(`/api/v1/transactions/${id}`);
    expect(read.body).toMatchObject({
      id,
      status: 'completed',
      transaction_type: 'mobile_money_cashout',
    });

    // The saga has ended: a second notification changes nothing.
    await engine.temporal.workflow.getHandle(workflowIds.cashout(id)).result();
    const again = await api.post(SIMULATE, { transaction_id: id, status: 'failed' });
    expect(again.body.status).toBe('completed');
    expect(await balanceOf(engine.pool, walletId)).toBe(89_700n);
    expect(await eventsOf(id)).toHaveLength(1);
    expect(await sandboxMobileMoneyPayouts(engine.pool, id)).toMatchObject([
      { id: res.body.provider_reference, calls: 1, status: 'completed' },
    ]);
    const timeline = await api.get(`/api/v1/transactions/${id}/timeline`);
    expect(timeline.body).toMatchObject({
      workflow_id: workflowIds.cashout(id),
      workflow_type: 'mobileMoneyCashoutWorkflow',
      status: 'completed',
    });
    const names = (timeline.body.steps as { name: string }[]).map((step) => step.name);
    for (const step of ['reserveMoneyOut', 'sendMoneyOut', 'settleMoneyOut']) {
      expect(names).toContain(step);
    }
    expect(names).not.toContain('giveBackMoneyOut');
    await assertLedgerInvariant(engine.pool);
  });

  it('gives everything back when the payout fails after the provider accepted it', async () => {
    const { walletId } = await createFundedWallet(api, engine.pool, 20_000n);
    const res = await api.post(CASHOUT, {
      wallet_id: walletId,
      amount: 5_000,
      phone_number: PHONE,
    });
    expect(res.status).toBe(200);
    expect(await balanceOf(engine.pool, walletId)).toBe(20_000n - 5_150n);
    const failed = await api.post(SIMULATE, { transaction_id: res.body.id, status: 'failed' });
    expect(failed.status).toBe(200);
    expect(failed.body.status).toBe('failed');
    expect(await balanceOf(engine.pool, walletId)).toBe(20_000n);
    expect(await ledgerLegs(engine.pool, res.body.id)).toEqual([
      { step: 'reserve', legs: 2 },
      { step: 'give_back', legs: 2 },
    ]);
    expect((await eventsOf(res.body.id)).map((e) => e.type)).toEqual(['cashout.failed']);
    expect((await api.get(`/api/v1/transactions/${res.body.id}`)).body.status).toBe('failed');
    await assertLedgerInvariant(engine.pool);
  });

  it('answers 400 when the provider refuses a cashout of exactly 4040, and the wallet keeps its money', async () => {
    const { walletId } = await createFundedWallet(api, engine.pool, 10_000n);
    const payoutsBefore = await balance('payouts');
    const res = await api.post(CASHOUT, { wallet_id: walletId, amount: 4040, phone_number: PHONE });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'Provider refused the cashout' });
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
    expect(await balance('payouts')).toBe(payoutsBefore);
    const listed = await api.get(`/api/v1/transactions/?wallet_id=${walletId}`);
    const [refused] = listed.body.data as { id: string; status: string }[];
    expect(refused).toMatchObject({ status: 'failed', transaction_type: 'mobile_money_cashout' });
    expect(await ledgerLegs(engine.pool, refused!.id)).toEqual([
      { step: 'reserve', legs: 2 },
      { step: 'give_back', legs: 2 },
    ]);
    expect(await sandboxMobileMoneyPayouts(engine.pool, refused!.id)).toMatchObject([]);
    await assertLedgerInvariant(engine.pool);
  });

  it('answers 400 on insufficient funds (amount plus fees), writing nothing', async () => {
    const { walletId } = await createFundedWallet(api, engine.pool, 10_200n);
    const res = await api.post(CASHOUT, {
      wallet_id: walletId,
      amount: 10_000,
      phone_number: PHONE,
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'Insufficient funds' });
    expect(await balanceOf(engine.pool, walletId)).toBe(10_200n);
    const listed = await api.get(`/api/v1/transactions/?wallet_id=${walletId}`);
    expect(listed.body.total).toBe(0);
  });

  it('answers 403 for a disabled wallet, 404 for a missing one, 422 for bad input', async () => {
    const { walletId } = await createFundedWallet(api, engine.pool, 10_000n);
    expect((await api.post(`/api/v1/wallets/${walletId}/disable`)).status).toBe(200);
    const disabled = await api.post(CASHOUT, {
      wallet_id: walletId,
      amount: 100,
      phone_number: PHONE,
    });
    expect(disabled.status).toBe(403);
    expect(disabled.body).toEqual({ detail: 'Wallet is disabled' });
    const missing = await api.post(CASHOUT, {
      wallet_id: '00000000-0000-4000-8000-000000000000',
      amount: 100,
      phone_number: PHONE,
    });
    expect(missing.status).toBe(404);
    for (const bad of [
      { wallet_id: walletId, amount: 10.5, phone_number: PHONE },
      { wallet_id: walletId, amount: 0, phone_number: PHONE },
      { wallet_id: walletId, amount: 100, phone_number: 'call me' },
      { wallet_id: walletId, amount: 100 },
    ]) {
      const res = await api.post(CASHOUT, bad);
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual(expect.any(String));
    }
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
  });

  it('converts to USD for a USD application and settles through the FX accounts', async () => {
    const usdApp = await createTestApp(engine.pool, { currency: 'USD' });
    const usd = clientFor(engine.url, usdApp);
    const { walletId } = await createFundedWallet(usd, engine.pool, 5_000n);
    const res = await usd.post(CASHOUT, {
      wallet_id: walletId,
      amount: 24_000,
      phone_number: PHONE,
    });
    expect(res.status).toBe(200);
    // 24 000 SLE cents at 24.00 SLE per USD: 10.00 USD; the 1% provider fee 0.10 USD.
    expect(res.body).toMatchObject({
      currency: 'USD',
      amount: 10,
      provider_fee: 0.1,
      application_fee: 0,
      total_amount: 10.1,
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(5_000n - 1_010n);
    const paid = await usd.post(SIMULATE, { transaction_id: res.body.id, status: 'successful' });
    expect(paid.body.status).toBe('completed');
    expect(await balance('payouts', usdApp.id, 'USD')).toBe(0n);
    expect(await balance('fx', usdApp.id, 'USD')).toBe(1_010n);
    expect(await balance('fx', usdApp.id, 'SLE')).toBe(-24_240n);
    expect(await balance('provider_clearing_mobile_money', usdApp.id, 'SLE')).toBe(24_240n);
    expect(await ledgerLegs(engine.pool, res.body.id)).toEqual([
      { step: 'reserve', legs: 2 },
      // payouts clearing, FX in USD and out in SLE, the provider (no application fee: no leg)
      { step: 'settle', legs: 4 },
    ]);
    await assertLedgerInvariant(engine.pool);
  });

  it('replays a retried Idempotency-Key with the first answer and reserves once', async () => {
    const { walletId } = await createFundedWallet(api, engine.pool, 10_000n);
    const body = { wallet_id: walletId, amount: 1_000, phone_number: PHONE };
    const first = await api.post(CASHOUT, body, { 'Idempotency-Key': 'cashout-replay-1' });
    const second = await api.post(CASHOUT, body, { 'Idempotency-Key': 'cashout-replay-1' });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n - 1_030n);
    const other = await api.post(
      CASHOUT,
      { ...body, amount: 2_000 },
      { 'Idempotency-Key': 'cashout-replay-1' },
    );
    expect(other.status).toBe(422);
    expect(other.body).toEqual({
      detail: 'Idempotency-Key was already used with a different request',
    });
  });

  it('settles through POST /transactions/sync (the saga’s sync) when the provider paid but no notification came', async () => {
    const { walletId } = await createFundedWallet(api, engine.pool, 10_000n);
    const res = await api.post(CASHOUT, {
      wallet_id: walletId,
      amount: 1_000,
      phone_number: PHONE,
    });
    const payoutsPending = await balance('payouts');
    const providers = createProviders({ config: engine.config, pool: engine.pool });
    await providers.sandboxMobileMoney.settlePayout(res.body.provider_reference, 'completed');
    // By the provider's reference, as a merchant holding only that would ask.
    const synced = await api.post(`/api/v1/transactions/sync/${res.body.provider_reference}`);
    expect(synced.status).toBe(200);
    expect(synced.body).toMatchObject({ transaction_id: res.body.id, status: 'completed' });
    expect((await eventsOf(res.body.id)).map((e) => e.type)).toEqual(['cashout.completed']);
    expect(payoutsPending - (await balance('payouts'))).toBe(1_030n);
    await assertLedgerInvariant(engine.pool);
  });

  it('takes a signed payout notification on the provider webhook and gives the money back', async () => {
    const { walletId } = await createFundedWallet(api, engine.pool, 10_000n);
    const res = await api.post(CASHOUT, {
      wallet_id: walletId,
      amount: 1_000,
      phone_number: PHONE,
    });
    const providers = createProviders({ config: engine.config, pool: engine.pool });
    const sandbox = providers.sandboxMobileMoney;
    const payout = await sandbox.settlePayout(res.body.provider_reference, 'failed');
    const signed = sandbox.payoutNotificationFor(payout, Math.floor(Date.now() / 1000));
    const bad = await clientFor(engine.url, null).request(
      'POST',
      '/api/v1/webhooks/providers/mobile-money',
      { raw: signed.body, headers: { 'sandbox-signature': 't=1,v1=' + '0'.repeat(64) } },
    );
    expect(bad.status).toBe(400);
    const hook = await clientFor(engine.url, null).request(
      'POST',
      '/api/v1/webhooks/providers/mobile-money',
      { raw: signed.body, headers: signed.headers },
    );
    expect(hook.status).toBe(200);
    expect(hook.body).toEqual({ received: true, transaction_id: res.body.id, status: 'failed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
    expect((await eventsOf(res.body.id)).map((e) => e.type)).toEqual(['cashout.failed']);
  });

  it('limits cashouts to 2 a minute per credential by default (429)', async () => {
    const limited = await createTestApp(engine.pool, { rateLimits: null });
    const client = clientFor(engine.url, limited);
    const { walletId } = await createFundedWallet(client, engine.pool, 10_000n);
    const body = { wallet_id: walletId, amount: 100, phone_number: PHONE };
    await awaitRoomInWindow(engine.pool);
    expect((await client.post(CASHOUT, body)).status).toBe(200);
    expect((await client.post(CASHOUT, body)).status).toBe(200);
    const third = await client.post(CASHOUT, body);
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toEqual(expect.any(String));
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n - 2n * 101n);
  });

  it('answers 503 in Live Mode without the provider’s credentials, writing nothing', async () => {
    const live = clientFor(engine.url, app, 'live');
    const { walletId } = await createUserWithWallet(live);
    await fundWallet(engine.pool, walletId, 10_000n);
    const res = await live.post(CASHOUT, {
      wallet_id: walletId,
      amount: 1_000,
      phone_number: PHONE,
    });
    expect(res.status).toBe(503);
    expect(res.body.detail).toMatch(/not configured/);
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
    expect((await live.get(`/api/v1/transactions/?wallet_id=${walletId}`)).body.total).toBe(0);
  });

  it('answers 403 on the simulate endpoint with Live Mode credentials', async () => {
    const live = clientFor(engine.url, app, 'live');
    const res = await live.post(SIMULATE, {
      transaction_id: '00000000-0000-4000-8000-000000000000',
      status: 'successful',
    });
    expect(res.status).toBe(403);
  });
});
