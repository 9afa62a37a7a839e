import Stripe from 'stripe';
import { sql } from 'slonik';
import { z } from 'zod';
import { assertLedgerInvariant, balanceOf, eventsOf } from '../support/database';
import { clientFor, createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { LOCALSTRIPE_CARDS, startLocalstripe, type Localstripe } from '../support/localstripe';

/**
 * Live Mode card refunds end to end: the refund saga's provider step through the Stripe adapter
 * (the official `stripe` package) against a real Stripe emulator (localstripe).
 */

const WEBHOOK_SECRET = 'whsec_live_refunds_test';
const DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const WEBHOOK = '/api/v1/webhooks/providers/card';

/** Stripe's signed `refund.failed` event about a refund, as Stripe would send it. */
function sendRefundFailed(refundId: string, reference: string) {
  const body = JSON.stringify({
    id: `evt_refund_failed_${refundId}`,
    object: 'event',
    type: 'refund.failed',
    created: Math.floor(Date.now() / 1000),
    data: { object: { id: refundId, object: 'refund', status: 'failed', metadata: { reference } } },
  });
  const signature = new Stripe('sk_test_unused').webhooks.generateTestHeaderString({
    payload: body,
    secret: WEBHOOK_SECRET,
  });
  return clientFor(engine.url, null).request('POST', WEBHOOK, {
    raw: body,
    headers: { 'stripe-signature': signature },
  });
}

let localstripe: Localstripe;
beforeAll(async () => {
  localstripe = await startLocalstripe();
  await localstripe.reset();
});
const engine = useTestEngine(() => ({ env: localstripe.env(WEBHOOK_SECRET) }));
const { live } = useTestApp(engine, { currency: 'USD' });
afterAll(async () => localstripe?.stop());

describe('Live Mode card refunds against localstripe', () => {
  it('refunds part of a deposit through Stripe Refunds, with the refund’s idempotency key', async () => {
    const { walletId } = await createUserWithWallet(live);
    const pm = await localstripe.createCard(LOCALSTRIPE_CARDS.succeeds);
    const deposit = await live.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 40,
      payment_method_id: pm,
    });
    expect(deposit.body).toMatchObject({ status: 'completed', amount: 40 });
    const intentId = deposit.body.provider_reference as string;

    // No `reason`: the emulator refuses the parameter, which Stripe takes.
    const res = await live.post(
      `/api/v1/transactions/${deposit.body.id}/refund`,
      { amount: 15 },
      { 'idempotency-key': `live-refund-${deposit.body.id}` },
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      transaction_type: 'card_refund',
      status: 'completed',
      amount: 15,
      source_transaction_id: deposit.body.id,
      provider_reference: expect.stringMatching(/^re_/),
    });
    const refund = await localstripe.client.refunds.retrieve(res.body.provider_reference as string);
    expect(refund).toMatchObject({ amount: 15_00, payment_intent: intentId, status: 'succeeded' });
    expect(refund.metadata?.reference).toBe(res.body.id);
    expect(await balanceOf(engine.pool, walletId)).toBe(25_00n);
    expect((await eventsOf(engine.pool, res.body.id as string)).map((e) => e.type)).toEqual([
      'refund.completed',
    ]);
    const record = await live.get(`/api/v1/transactions/${deposit.body.id}`);
    expect(record.body).toMatchObject({ amount_refunded: 15 });

    // A signed `refund.failed` reaches the refund's saga, which asks Stripe before it moves
    // money: the emulator says the refund succeeded, so nothing is reversed.
    const event = await sendRefundFailed(res.body.provider_reference as string, res.body.id);
    expect(event.status).toBe(200);
    expect(event.body).toEqual({
      received: true,
      transaction_id: res.body.id,
      status: 'completed',
    });
    const kept = await engine.pool.oneFirst(sql.type(z.object({ outcome: z.string() }))`
      SELECT outcome FROM provider_notifications
      WHERE kind = 'refund' AND transaction_id = ${res.body.id}`);
    expect(kept).toBe('matched');
    expect(await balanceOf(engine.pool, walletId)).toBe(25_00n);
    await assertLedgerInvariant(engine.pool);
  });
});
