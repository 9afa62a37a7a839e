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
import { clientFor, createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import {
  onboardForPayouts,
  payableWallet,
  sandboxCardPayouts,
  VERIFIED_INDIVIDUAL,
} from '../support/payouts';
import { awaitRoomInWindow } from '../support/rate-limit';

const engine = useTestEngine();
const { app, api } = useTestApp(engine, {
  currency: 'USD',
  settings: { feeBps: { card_payout: 100 } },
});

const PAYOUT = '/api/v1/transactions/wallet/card-payout';
const NOT_ENABLED = { detail: 'Payouts are not enabled for this wallet' };

const balance = (kind: string, appId = app.id) => systemBalance(engine.pool, appId, kind, 'USD');
const eventsOf = (transactionId: string) => eventsOfPayment(engine.pool, transactionId);

const sagaOf = (id: string) => engine.temporal.workflow.getHandle(workflowIds.payout(id));

describe('card payouts', () => {
  it('pays at once: reserves amount and fee, settles to the card provider, payout.completed', async () => {
    const { walletId } = await payableWallet(api, engine.pool, 100_00n);
    const feesBefore = await balance('application_fees');
    const providerBefore = await balance('provider_clearing_card');
    const payoutsBefore = await balance('payouts');
    const res = await api.post(PAYOUT, { wallet_id: walletId, amount: 25 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      wallet_id: walletId,
      transaction_type: 'card_payout',
      status: 'completed',
      currency: 'USD',
      amount: 25,
      provider_fee: 0,
      application_fee: 0.25,
      total_amount: 25.25,
      provider_reference: expect.stringMatching(/^po_sandbox_/),
    });
    const id = res.body.id as string;
    expect(await balanceOf(engine.pool, walletId)).toBe(100_00n - 25_25n);
    expect(await balance('payouts')).toBe(payoutsBefore);
    expect((await balance('application_fees')) - feesBefore).toBe(25n);
    expect((await balance('provider_clearing_card')) - providerBefore).toBe(25_00n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([
      { step: 'reserve', legs: 2 },
      { step: 'settle', legs: 3 },
    ]);
    const events = await eventsOf(id);
    expect(events.map((e) => e.type)).toEqual(['payout.completed']);
    expect(events[0]!.data).toMatchObject({
      id,
      status: 'completed',
      amount: 25,
      application_fee: 0.25,
      total_amount: 25.25,
      provider_reference: res.body.provider_reference,
    });
    expect(await sandboxCardPayouts(engine.pool, id)).toMatchObject([
      { id: res.body.provider_reference, status: 'paid', amount: 25_00n },
    ]);
    expect(await sagaOf(id).result()).toBe('completed');
    const timeline = await api.get(`/api/v1/transactions/${id}/timeline`);
    expect(timeline.body).toMatchObject({
      workflow_id: workflowIds.payout(id),
      workflow_type: 'cardPayoutWorkflow',
      status: 'completed',
    });
    await assertLedgerInvariant(engine.pool);
  });

  it('40.40: accepted, then failed by the provider; the wallet gets everything back within seconds', async () => {
    const { walletId } = await payableWallet(api, engine.pool, 100_00n);
    const res = await api.post(PAYOUT, { wallet_id: walletId, amount: 40.4 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'pending',
      amount: 40.4,
      total_amount: 40.8,
      provider_reference: expect.stringMatching(/^po_sandbox_/),
    });
    const id = res.body.id as string;
    expect(await balanceOf(engine.pool, walletId)).toBe(100_00n - 40_80n);
    // The saga asks the sandbox again after a few seconds and hears the payout failed.
    expect(await sagaOf(id).result()).toBe('failed');
    expect((await api.get(`/api/v1/transactions/${id}`)).body).toMatchObject({
      id,
      status: 'failed',
      transaction_type: 'card_payout',
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(100_00n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([
      { step: 'reserve', legs: 2 },
      { step: 'give_back', legs: 2 },
    ]);
    const events = await eventsOf(id);
    expect(events.map((e) => e.type)).toEqual(['payout.failed']);
    expect(events[0]!.data).toMatchObject({ id, status: 'failed', amount: 40.4 });
    expect(await sandboxCardPayouts(engine.pool, id)).toMatchObject([
      { id: res.body.provider_reference, status: 'failed', amount: 40_40n },
    ]);
    await assertLedgerInvariant(engine.pool);
  });

  it('answers 400 without an onboarding, with a pending one, or without a payout card; nothing written', async () => {
    const { walletId: never } = await createUserWithWallet(api);
    const { walletId: pending } = await createUserWithWallet(api);
    const { walletId: cardless } = await createUserWithWallet(api);
    const due = await onboardForPayouts(api, pending, {
      individual: { ...VERIFIED_INDIVIDUAL, id_number: '123456789' },
    });
    expect(due.status).toBe(202);
    const noCard = await onboardForPayouts(api, cardless, { card_token: undefined });
    expect(noCard.status).toBe(200);
    expect(noCard.body.external_account_added).toBe(false);
    for (const walletId of [never, pending, cardless]) {
      await fundWallet(engine.pool, walletId, 10_00n);
      const res = await api.post(PAYOUT, { wallet_id: walletId, amount: 5 });
      expect(res.status).toBe(400);
      expect(res.body).toEqual(NOT_ENABLED);
      expect(await balanceOf(engine.pool, walletId)).toBe(10_00n);
      expect((await api.get(`/api/v1/transactions/?wallet_id=${walletId}`)).body.total).toBe(0);
    }
  });

  it('answers 400 on insufficient funds (amount plus fee), writing nothing', async () => {
    const { walletId } = await payableWallet(api, engine.pool, 10_00n);
    const res = await api.post(PAYOUT, { wallet_id: walletId, amount: 10 });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'Insufficient funds' });
    expect(await balanceOf(engine.pool, walletId)).toBe(10_00n);
    expect((await api.get(`/api/v1/transactions/?wallet_id=${walletId}`)).body.total).toBe(0);
    await assertLedgerInvariant(engine.pool);
  });

  it('answers 403 for a disabled wallet, 404 for a missing one, 422 for bad input', async () => {
    const { walletId } = await payableWallet(api, engine.pool, 10_00n);
    for (const bad of [
      { wallet_id: walletId, amount: 1.005 },
      { wallet_id: walletId, amount: 0 },
      { wallet_id: walletId, amount: -5 },
      { wallet_id: walletId, amount: '5' },
      { wallet_id: walletId },
      { amount: 5 },
    ]) {
      const res = await api.post(PAYOUT, bad);
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual(expect.any(String));
    }
    const missing = await api.post(PAYOUT, {
      wallet_id: '00000000-0000-4000-8000-000000000000',
      amount: 1,
    });
    expect(missing.status).toBe(404);
    expect((await api.post(`/api/v1/wallets/${walletId}/disable`)).status).toBe(200);
    const disabled = await api.post(PAYOUT, { wallet_id: walletId, amount: 1 });
    expect(disabled.status).toBe(403);
    expect(disabled.body).toEqual({ detail: 'Wallet is disabled' });
    expect(await balanceOf(engine.pool, walletId)).toBe(10_00n);
    expect((await api.get(`/api/v1/transactions/?wallet_id=${walletId}`)).body.total).toBe(0);
  });

  it('replays a retried Idempotency-Key with the first answer and pays once', async () => {
    const { walletId } = await payableWallet(api, engine.pool, 10_00n);
    const body = { wallet_id: walletId, amount: 2 };
    const first = await api.post(PAYOUT, body, { 'Idempotency-Key': 'payout-replay-1' });
    const second = await api.post(PAYOUT, body, { 'Idempotency-Key': 'payout-replay-1' });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(await balanceOf(engine.pool, walletId)).toBe(10_00n - 2_02n);
    expect(await sandboxCardPayouts(engine.pool, first.body.id)).toHaveLength(1);
    const other = await api.post(
      PAYOUT,
      { ...body, amount: 3 },
      { 'Idempotency-Key': 'payout-replay-1' },
    );
    expect(other.status).toBe(422);
  });

  it('answers a settled payout as it stands on POST /transactions/sync', async () => {
    const { walletId } = await payableWallet(api, engine.pool, 10_00n);
    const res = await api.post(PAYOUT, { wallet_id: walletId, amount: 1 });
    const synced = await api.post(`/api/v1/transactions/sync/${res.body.provider_reference}`);
    expect(synced.status).toBe(200);
    expect(synced.body).toMatchObject({ transaction_id: res.body.id, status: 'completed' });
    expect((await eventsOf(res.body.id)).map((e) => e.type)).toEqual(['payout.completed']);
  });

  it('limits card payouts to 5 a minute per credential by default (429)', async () => {
    const limited = await createTestApp(engine.pool, { rateLimits: null, currency: 'USD' });
    const client = clientFor(engine.url, limited);
    const { walletId } = await payableWallet(client, engine.pool, 10_00n);
    const body = { wallet_id: walletId, amount: 1 };
    await awaitRoomInWindow(engine.pool);
    for (let i = 0; i < 5; i += 1) expect((await client.post(PAYOUT, body)).status).toBe(200);
    const sixth = await client.post(PAYOUT, body);
    expect(sixth.status).toBe(429);
    expect(sixth.headers.get('retry-after')).toEqual(expect.any(String));
    expect(await balanceOf(engine.pool, walletId)).toBe(10_00n - 5n * 1_00n);
  });

  it('answers 503 in Live Mode without the Stripe keys, writing nothing', async () => {
    const live = clientFor(engine.url, app, 'live');
    const { walletId } = await createUserWithWallet(live);
    await fundWallet(engine.pool, walletId, 10_00n);
    const res = await live.post(PAYOUT, { wallet_id: walletId, amount: 1 });
    expect(res.status).toBe(503);
    expect(res.body.detail).toMatch(/not configured/);
    expect(await balanceOf(engine.pool, walletId)).toBe(10_00n);
  });
});
