import { SandboxCardProvider } from '../../src/providers/sandbox-card';
import { assertLedgerInvariant, balanceOf, eventsOf } from '../support/database';
import { sandboxWebhookSecret } from '../../src/crypto/secret-box';
import { createUserWithWallet, waitForStatus } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { LOCALSTRIPE_CARDS, startLocalstripe, type Localstripe } from '../support/localstripe';

/**
 * Live Mode card deposits end to end: the real API, worker and Stripe adapter (the official
 * `stripe` package) against a real Stripe emulator (localstripe), whose signed events come back
 * through POST /api/v1/webhooks/providers/card.
 */

const WEBHOOK_SECRET = 'whsec_live_card_deposits_test';
const DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const WEBHOOK = '/api/v1/webhooks/providers/card';

let localstripe: Localstripe;
beforeAll(async () => {
  localstripe = await startLocalstripe();
  await localstripe.reset();
});
const engine = useTestEngine(() => ({ env: localstripe.env(WEBHOOK_SECRET) }));
beforeAll(async () => {
  await localstripe.registerWebhook(`${engine.url}${WEBHOOK}`, WEBHOOK_SECRET, {
    events: ['payment_intent.succeeded', 'payment_intent.payment_failed'],
  });
});
const { live } = useTestApp(engine, { currency: 'USD', settings: { feeBps: { card: 100 } } });
afterAll(async () => localstripe?.stop());

describe('Live Mode card deposits against localstripe', () => {
  it('charges the card through Stripe and credits the wallet (the emulator’s cards are FR: international)', async () => {
    const { walletId } = await createUserWithWallet(live);
    const pm = await localstripe.createCard(LOCALSTRIPE_CARDS.succeeds);
    const estimate = await live.post('/api/v1/fees/estimate/deposit/card-metadata', {
      amount: 100,
      payment_method_id: pm,
    });
    expect(estimate.status).toBe(200);
    expect(estimate.body.fee_breakdown).toMatchObject({
      estimated_provider_fee: '4.20',
      application_fee: '1.00',
      total_amount_to_pay: '105.20',
    });
    const res = await live.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 100,
      payment_method_id: pm,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'completed',
      amount: 100,
      provider_fee: 4.2,
      total_amount_paid: 105.2,
      provider_reference: expect.stringMatching(/^pi_/),
      next_action: null,
    });
    const intent = await localstripe.client.paymentIntents.retrieve(
      res.body.provider_reference as string,
    );
    expect(intent.amount).toBe(10_520);
    expect(intent.status).toBe('succeeded');
    expect(intent.metadata.reference).toBe(res.body.id);
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
    // The emulator's own succeeded event arrives later, and settles nothing twice.
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await eventsOf(engine.pool, res.body.id as string)).map((e) => e.type)).toEqual([
      'deposit.completed',
    ]);
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
    await assertLedgerInvariant(engine.pool);
  });

  it('answers a decline with 400 "Card declined…" and records the deposit failed', async () => {
    const { walletId } = await createUserWithWallet(live);
    const pm = await localstripe.createCard(LOCALSTRIPE_CARDS.declined);
    const res = await live.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 10,
      payment_method_id: pm,
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/^Card declined/);
    const list = await live.get(`/api/v1/transactions/?wallet_id=${walletId}`);
    const rows = (list.body.data ?? list.body) as { transaction_type: string; status: string }[];
    expect(rows).toEqual([
      expect.objectContaining({ transaction_type: 'card_deposit', status: 'failed' }),
    ]);
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
  });

  it('completes a 3-D Secure payment on the emulator’s signed event through the webhook', async () => {
    const { walletId } = await createUserWithWallet(live);
    const pm = await localstripe.createCard(LOCALSTRIPE_CARDS.authenticationRequired);
    const res = await live.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 20,
      payment_method_id: pm,
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    await localstripe.authenticate(res.body.provider_reference as string, true);
    expect(await waitForStatus(live, res.body.id as string, 'completed')).toBe('completed');
    expect(await balanceOf(engine.pool, walletId)).toBe(2_000n);
    await assertLedgerInvariant(engine.pool);
  });

  it('refuses an event with a bad Stripe-Signature (400); a sandbox-signed event settles no Live deposit', async () => {
    const bad = await live.request('POST', WEBHOOK, {
      raw: JSON.stringify({ id: 'evt_1', type: 'payment_intent.succeeded' }),
      headers: { 'stripe-signature': 't=1,v1=deadbeef' },
    });
    expect(bad.status).toBe(400);

    const { walletId } = await createUserWithWallet(live);
    const pm = await localstripe.createCard(LOCALSTRIPE_CARDS.authenticationRequired);
    const res = await live.post(DEPOSIT, { wallet_id: walletId, amount: 3, payment_method_id: pm });
    expect(res.body.status).toBe('pending');
    // The sandbox's secret signs it, and it names the Live deposit: recorded, and ignored.
    const sandbox = new SandboxCardProvider(engine.pool, sandboxWebhookSecret(engine.config));
    const forged = sandbox.eventFor({
      id: res.body.provider_reference as string,
      status: 'succeeded',
      amount: 303n,
      currency: 'USD',
      reference: res.body.id as string,
      nextActionUrl: null,
      declineMessage: null,
    });
    const ignored = await live.request('POST', WEBHOOK, {
      raw: forged.body,
      headers: { ...forged.headers },
    });
    expect(ignored.status).toBe(200);
    expect(ignored.body).toEqual({ received: true, transaction_id: null, status: null });
    expect((await live.get(`/api/v1/transactions/${res.body.id}`)).body.status).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);

    const simulate = await live.post('/api/v1/testing/simulate-card-authentication', {
      transaction_id: res.body.id,
      status: 'successful',
    });
    expect(simulate.status).toBe(403);
  });
});
