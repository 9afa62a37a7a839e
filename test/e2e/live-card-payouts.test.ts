import { sql } from 'slonik';
import Stripe from 'stripe';
import { workflowIds } from '../../src/workflows/ids';
import { reconciliationWorkflow } from '../../src/workflows/reconciliation';
import {
  assertLedgerInvariant,
  balanceOf,
  eventsOf as eventsOfPayment,
  ledgerSteps,
  systemBalance,
} from '../support/database';
import { FakeStripeConnect } from '../support/fake-stripe-connect';
import { createAdmin } from '../../src/db/admins';
import { clientFor } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { payableWallet } from '../support/payouts';

/**
 * Live Mode card payouts end to end: STRIPE_* set as in production, the saga's provider step
 * through the official `stripe` package against the local Connect fake, and Stripe's signed
 * payout events through the card webhook.
 */

const WEBHOOK_SECRET = 'whsec_live_card_payouts_test';
const PAYOUT = '/api/v1/transactions/wallet/card-payout';
const WEBHOOK = '/api/v1/webhooks/providers/card';

let fake: FakeStripeConnect;
beforeAll(async () => {
  fake = await FakeStripeConnect.start();
});
const engine = useTestEngine(() => ({
  env: {
    STRIPE_SECRET_KEY: fake.secretKey,
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_API_BASE: `http://127.0.0.1:${fake.api.port}`,
  },
}));
const { app, live } = useTestApp(engine, { currency: 'USD' });
afterAll(async () => fake?.close());

const balance = (kind: string) => systemBalance(engine.pool, app.id, kind, 'USD', 'live');
const eventsOf = (transactionId: string) => eventsOfPayment(engine.pool, transactionId);

/** Stripe's signed event about a payout as it stands at the fake, posted to the card webhook. */
async function sendPayoutEvent(payoutId: string, secret = WEBHOOK_SECRET) {
  const body = fake.payoutEventBody(payoutId);
  const signature = new Stripe(fake.secretKey).webhooks.generateTestHeaderString({
    payload: body,
    secret,
  });
  return clientFor(engine.url, null).request('POST', WEBHOOK, {
    raw: body,
    headers: { 'stripe-signature': signature },
  });
}

describe('Live Mode card payouts through Stripe Connect', () => {
  it('transfers to the connected account and pays its card, each once with our idempotency key', async () => {
    const { walletId, accountId } = await payableWallet(live, engine.pool, 50_00n);
    const res = await live.post(PAYOUT, { wallet_id: walletId, amount: 12.5 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'completed',
      transaction_type: 'card_payout',
      amount: 12.5,
      total_amount: 12.5,
      provider_reference: expect.stringMatching(/^po_fake/),
    });
    const id = res.body.id as string;
    const [transfer] = fake.requestsTo('POST', /^\/v1\/transfers$/);
    expect(transfer!.headers['idempotency-key']).toBe(`${workflowIds.payout(id)}-transfer`);
    expect(transfer!.form).toMatchObject({
      amount: '1250',
      currency: 'usd',
      destination: accountId,
      metadata: { reference: id },
    });
    const payouts = fake.requestsTo('POST', /^\/v1\/payouts$/);
    expect(payouts).toHaveLength(1);
    expect(payouts[0]!.headers['idempotency-key']).toBe(`${workflowIds.payout(id)}-payout`);
    expect(payouts[0]!.headers['stripe-account']).toBe(accountId);
    expect(await balanceOf(engine.pool, walletId)).toBe(50_00n - 12_50n);
    expect(await ledgerSteps(engine.pool, id)).toEqual(['reserve', 'settle']);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['payout.completed']);
    await assertLedgerInvariant(engine.pool);
  });

  it('reverses a payout Stripe reported paid and later failed (payout.failed on the card webhook)', async () => {
    const { walletId } = await payableWallet(live, engine.pool, 50_00n);
    const providerBefore = await balance('provider_clearing_card');
    const res = await live.post(PAYOUT, { wallet_id: walletId, amount: 20 });
    expect(res.body.status).toBe('completed');
    const id = res.body.id as string;
    expect((await balance('provider_clearing_card')) - providerBefore).toBe(20_00n);

    // A bad signature is refused and changes nothing.
    fake.failPayout(res.body.provider_reference);
    const forged = await sendPayoutEvent(res.body.provider_reference, 'whsec_someone_else');
    expect(forged.status).toBe(400);
    expect(await balanceOf(engine.pool, walletId)).toBe(30_00n);

    const hook = await sendPayoutEvent(res.body.provider_reference);
    expect(hook.status).toBe(200);
    expect(hook.body).toEqual({ received: true, transaction_id: id, status: 'failed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(50_00n);
    expect(await balance('provider_clearing_card')).toBe(providerBefore);
    expect(await ledgerSteps(engine.pool, id)).toEqual(['reserve', 'settle', 'reverse']);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['payout.completed', 'payout.failed']);
    expect((await live.get(`/api/v1/transactions/${id}`)).body.status).toBe('failed');
    expect(await engine.temporal.workflow.getHandle(workflowIds.payout(id)).result()).toBe(
      'failed',
    );
    // Stripe's retry of the same event changes nothing.
    const again = await sendPayoutEvent(res.body.provider_reference);
    expect(again.body.status).toBe('failed');
    expect(await balanceOf(engine.pool, walletId)).toBe(50_00n);
    expect(await eventsOf(id)).toHaveLength(2);
    await assertLedgerInvariant(engine.pool);
  });

  it('a resolution asks Stripe: completed refused while pending, failed cancels the payout (payouts.cancel)', async () => {
    const { walletId, accountId } = await payableWallet(live, engine.pool, 50_00n);
    const res = await live.post(PAYOUT, { wallet_id: walletId, amount: 41.41 });
    expect(res.body.status).toBe('pending');
    const id = res.body.id as string;
    const payoutId = res.body.provider_reference as string;
    const resolve = async (outcome: string) => {
      const admin = await createAdmin(engine.pool, `ops-${outcome}`);
      return clientFor(engine.url, null).post(
        `/api/v1/admin/payments/${id}/resolve`,
        { outcome, reason: 'Stripe support ticket 12', operator: 'Lin' },
        { 'api-key': admin.api_key, 'secret-key': admin.secret_key },
      );
    };

    const completed = await resolve('completed');
    expect(completed.status).toBe(400);
    expect(completed.body).toEqual({
      detail: 'The provider says the payment is pending: it cannot be resolved completed',
    });
    expect(await ledgerSteps(engine.pool, id)).toEqual(['reserve']);
    expect(fake.requestsTo('POST', /\/cancel$/)).toHaveLength(0);

    const failed = await resolve('failed');
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ id, status: 'failed' });
    const [cancel] = fake.requestsTo('POST', new RegExp(`^/v1/payouts/${payoutId}/cancel$`));
    expect(cancel!.headers['stripe-account']).toBe(accountId);
    expect(fake.payouts.get(payoutId)!.status).toBe('canceled');
    expect(await balanceOf(engine.pool, walletId)).toBe(50_00n);
    expect(await ledgerSteps(engine.pool, id)).toEqual(['reserve', 'give_back']);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['payout.failed']);
    await assertLedgerInvariant(engine.pool);
  });

  it('40.40: in transit, then failed at Stripe; POST /transactions/sync gives the money back', async () => {
    const { walletId } = await payableWallet(live, engine.pool, 50_00n);
    const res = await live.post(PAYOUT, { wallet_id: walletId, amount: 40.4 });
    expect(res.body.status).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(50_00n - 40_40n);
    const synced = await live.post(`/api/v1/transactions/sync/${res.body.id}`);
    expect(synced.status).toBe(200);
    expect(synced.body).toMatchObject({ transaction_id: res.body.id, status: 'failed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(50_00n);
    expect(await ledgerSteps(engine.pool, res.body.id)).toEqual(['reserve', 'give_back']);
    expect((await eventsOf(res.body.id)).map((e) => e.type)).toEqual(['payout.failed']);
    await assertLedgerInvariant(engine.pool);
  });

  it('the reconciliation schedule’s workflow syncs a card payout pending past the grace period', async () => {
    const { walletId } = await payableWallet(live, engine.pool, 50_00n);
    const res = await live.post(PAYOUT, { wallet_id: walletId, amount: 40.4 });
    expect(res.body.status).toBe('pending');
    const id = res.body.id as string;
    await engine.pool.query(sql.unsafe`
      UPDATE transactions SET created_at = now() - interval '1 day' WHERE id = ${id}`);
    const run = await engine.temporal.workflow.execute(reconciliationWorkflow, {
      workflowId: `reconciliation-test-${id}`,
      taskQueue: engine.config.temporal.taskQueue,
      args: [{}],
    });
    expect(run.errors).toEqual([]);
    expect(run.changes).toContainEqual({
      transaction_id: id,
      transaction_type: 'card_payout',
      from: 'pending',
      to: 'failed',
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(50_00n);
    expect(await ledgerSteps(engine.pool, id)).toEqual(['reserve', 'give_back']);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['payout.failed']);
    await assertLedgerInvariant(engine.pool);
  });

  it('rides out Stripe being down: retried with the same keys, one transfer and one payout', async () => {
    const { walletId } = await payableWallet(live, engine.pool, 50_00n);
    const transfersBefore = fake.transfers.length;
    fake.failNext(2, 503);
    const res = await live.post(PAYOUT, { wallet_id: walletId, amount: 3 });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    expect(fake.transfers.length - transfersBefore).toBe(1);
    const id = res.body.id as string;
    const forThis = [...fake.payouts.values()].filter((p) => p.metadata.reference === id);
    expect(forThis).toHaveLength(1);
    expect(await balanceOf(engine.pool, walletId)).toBe(47_00n);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['payout.completed']);
  });
});
