import { assertLedgerInvariant, balanceOf, eventsOf } from '../support/database';
import { createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { LOCALSTRIPE_CARDS, startLocalstripe, type Localstripe } from '../support/localstripe';

/**
 * Live Mode card refunds end to end: the refund saga's provider step through the Stripe adapter
 * (the official `stripe` package) against a real Stripe emulator (localstripe).
 */

const WEBHOOK_SECRET = 'whsec_live_refunds_test';
const DEPOSIT = '/api/v1/transactions/wallet/card-deposit';

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
    await assertLedgerInvariant(engine.pool);
  });
});
