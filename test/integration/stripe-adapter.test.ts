import type Stripe from 'stripe';
import { loadConfig } from '../../src/config';
import { createProviders } from '../../src/providers';
import { UnknownPaymentMethodError, type CardPaymentRequest } from '../../src/providers/card';
import { ProviderNotConfiguredError } from '../../src/providers/mobile-money';
import {
  STRIPE_CARD_EVENT_TYPES,
  STRIPE_SIGNATURE_HEADER,
  StripeCardProvider,
  stripeCardFromConfig,
} from '../../src/providers/stripe-card';
import { createTestDatabase } from '../support/database';
import { LOCALSTRIPE_CARDS, startLocalstripe, type Localstripe } from '../support/localstripe';
import { startReceiver, type Received, type Receiver } from '../support/webhook-receiver';

/**
 * The Live Mode card adapter, for real over HTTP with the official `stripe` package, against a
 * real Stripe emulator (localstripe), configured as the engine configures it (STRIPE_*).
 */

const WEBHOOK_SECRET = 'whsec_stripe_adapter_test';

let localstripe: Localstripe;
let adapter: StripeCardProvider;
let receiver: Receiver;
let counter = 0;

function request(overrides: Partial<CardPaymentRequest> = {}): CardPaymentRequest {
  counter += 1;
  return {
    idempotencyKey: `card-deposit-${counter}-${Date.now()}`,
    reference: `00000000-0000-4000-8000-${String(counter).padStart(12, '0')}`,
    amount: 10_390n,
    currency: 'USD',
    paymentMethodId: 'pm_card_visa',
    description: 'Wallet top-up',
    ...overrides,
  };
}

/** The first delivered event of this type about this PaymentIntent (localstripe waits ~1 s). */
const deliveryFor = (paymentId: string, type: string): Promise<Received> =>
  receiver.waitFor(
    (r) => r.payload?.type === type && r.payload?.data?.object?.id === paymentId,
    15_000,
  );

beforeAll(async () => {
  localstripe = await startLocalstripe();
  await localstripe.reset();
  const live = stripeCardFromConfig(loadConfig(localstripe.env(WEBHOOK_SECRET)));
  if (!live) throw new Error('the Stripe adapter was not configured');
  adapter = live;

  receiver = await startReceiver();
  await localstripe.registerWebhook(receiver.url('/webhooks'), WEBHOOK_SECRET, {
    events: STRIPE_CARD_EVENT_TYPES,
  });
});

afterAll(async () => {
  await localstripe?.stop();
  await receiver?.close();
});

describe('card metadata', () => {
  it('reads a created card PaymentMethod', async () => {
    const id = await localstripe.createCard(LOCALSTRIPE_CARDS.succeeds);
    // localstripe reports every card as a French visa credit card.
    expect(await adapter.getCardMetadata(id)).toEqual({
      paymentMethodId: id,
      brand: 'visa',
      country: 'FR',
      funding: 'credit',
      last4: '4242',
    });
  });

  it('reads a Stripe test payment method id', async () => {
    expect(await adapter.getCardMetadata('pm_card_visa')).toMatchObject({
      brand: 'visa',
      last4: '4242',
    });
  });

  it('refuses a payment method Stripe does not know', async () => {
    await expect(adapter.getCardMetadata('pm_doesNotExist')).rejects.toBeInstanceOf(
      UnknownPaymentMethodError,
    );
    await expect(
      adapter.createPayment(request({ paymentMethodId: 'pm_doesNotExist' })),
    ).rejects.toBeInstanceOf(UnknownPaymentMethodError);
  });
});

describe('payments', () => {
  it('charges a card: a confirmed PaymentIntent in minor units, with the reference', async () => {
    const paymentMethodId = await localstripe.createCard(LOCALSTRIPE_CARDS.succeeds);
    const r = request({ paymentMethodId });
    const payment = await adapter.createPayment(r);
    expect(payment).toEqual({
      id: expect.stringMatching(/^pi_/),
      status: 'succeeded',
      amount: 10_390n,
      currency: 'USD',
      reference: r.reference,
      nextActionUrl: null,
      declineMessage: null,
    });
    expect(await adapter.getPayment(payment.id)).toEqual(payment);

    const intent = await localstripe.client.paymentIntents.retrieve(payment.id);
    expect(intent).toMatchObject({
      amount: 10_390,
      currency: 'usd',
      payment_method: paymentMethodId,
      metadata: { reference: r.reference },
    });
    const event = await deliveryFor(payment.id, 'payment_intent.succeeded');
    expect(adapter.parseEvent(event.body, event.headers)).toEqual({
      id: expect.stringMatching(/^evt_/),
      paymentId: payment.id,
      status: 'succeeded',
      reference: r.reference,
    });
  });

  it('answers a decline as a failed payment with the message, and reads its event', async () => {
    const paymentMethodId = await localstripe.createCard(LOCALSTRIPE_CARDS.declined);
    const r = request({ paymentMethodId, currency: 'SLE', amount: 250_000n });
    const payment = await adapter.createPayment(r);
    expect(payment).toEqual({
      id: expect.stringMatching(/^pi_/),
      status: 'failed',
      amount: 250_000n,
      currency: 'SLE',
      reference: r.reference,
      nextActionUrl: null,
      declineMessage: 'Your card was declined.',
    });
    expect(await adapter.getPayment(payment.id)).toEqual(payment);
    const event = await deliveryFor(payment.id, 'payment_intent.payment_failed');
    expect(adapter.parseEvent(event.body, event.headers)).toMatchObject({
      paymentId: payment.id,
      status: 'failed',
      reference: r.reference,
    });
  });

  it('sends the idempotency key on every create', async () => {
    // localstripe ignores Idempotency-Key (Stripe answers the first PaymentIntent again): what
    // can be checked here is that the official client sends ours, unchanged, on each call.
    const sent: (string | undefined)[] = [];
    const listener = (event: Stripe.RequestEvent) => {
      if (event.method === 'POST' && event.path === '/v1/payment_intents') {
        sent.push(event.idempotency_key);
      }
    };
    // stripe 23's typings declare on/off as `any`; this is their documented signature.
    const emitter: {
      on(name: 'request', listener: (event: Stripe.RequestEvent) => void): void;
      off(name: 'request', listener: (event: Stripe.RequestEvent) => void): void;
    } = adapter.client;
    emitter.on('request', listener);
    try {
      const r = request();
      await adapter.createPayment(r);
      await adapter.createPayment(r);
      expect(sent).toEqual([r.idempotencyKey, r.idempotencyKey]);
    } finally {
      emitter.off('request', listener);
    }
  });

  it('knows no payment Stripe does not have', async () => {
    await expect(adapter.getPayment('pi_doesNotExist')).rejects.toThrow('No such payment');
  });
});

describe('3-D Secure', () => {
  it('waits for authentication, then succeeds on the emulator signed event', async () => {
    const paymentMethodId = await localstripe.createCard(LOCALSTRIPE_CARDS.authenticationRequired);
    const r = request({ paymentMethodId });
    const payment = await adapter.createPayment(r);
    // localstripe's next action is `use_stripe_sdk` with an empty stripe_js: no URL to give.
    expect(payment).toMatchObject({
      status: 'requires_action',
      nextActionUrl: null,
      declineMessage: null,
    });
    expect((await adapter.getPayment(payment.id)).status).toBe('requires_action');

    await localstripe.authenticate(payment.id, true);
    const event = await deliveryFor(payment.id, 'payment_intent.succeeded');
    expect(event.headers[STRIPE_SIGNATURE_HEADER]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(adapter.parseEvent(event.body, event.headers)).toEqual({
      id: expect.stringMatching(/^evt_/),
      paymentId: payment.id,
      status: 'succeeded',
      reference: r.reference,
    });
    expect((await adapter.getPayment(payment.id)).status).toBe('succeeded');
  });

  it('cancels a payment still waiting for authentication; a charged one stays charged', async () => {
    const paymentMethodId = await localstripe.createCard(LOCALSTRIPE_CARDS.authenticationRequired);
    const waiting = await adapter.createPayment(request({ paymentMethodId }));
    expect((await adapter.cancelPayment(waiting.id)).status).toBe('failed');
    expect((await adapter.getPayment(waiting.id)).status).toBe('failed');
    const charged = await adapter.createPayment(
      request({ paymentMethodId: await localstripe.createCard(LOCALSTRIPE_CARDS.succeeds) }),
    );
    expect((await adapter.cancelPayment(charged.id)).status).toBe('succeeded');
  });

  it('fails a payment whose authentication fails', async () => {
    const paymentMethodId = await localstripe.createCard(LOCALSTRIPE_CARDS.authenticationRequired);
    const payment = await adapter.createPayment(request({ paymentMethodId }));
    await localstripe.authenticate(payment.id, false);
    // localstripe sends no event for it: the payment is read back.
    expect(await adapter.getPayment(payment.id)).toMatchObject({
      status: 'failed',
      nextActionUrl: null,
      declineMessage: 'The provided PaymentMethod has failed authentication.',
    });
  });
});

describe('events', () => {
  let delivered: Received;

  beforeAll(async () => {
    const payment = await adapter.createPayment(request());
    delivered = await deliveryFor(payment.id, 'payment_intent.succeeded');
  });

  it('refuses a tampered body, a missing, a bad or another secret signature', () => {
    const { body, headers } = delivered;
    expect(adapter.parseEvent(body, headers)).not.toBeNull();
    expect(adapter.parseEvent(body.replace('succeeded', 'failed'), headers)).toBeNull();
    expect(adapter.parseEvent(body, {})).toBeNull();
    expect(adapter.parseEvent(body, { [STRIPE_SIGNATURE_HEADER]: 't=1,v1=00' })).toBeNull();
    const other = new StripeCardProvider({
      secretKey: 'sk_test_other',
      webhookSecret: 'whsec_another_secret',
    });
    expect(other.parseEvent(body, headers)).toBeNull();
  });

  it('reads the header whatever its case', () => {
    const signature = delivered.headers[STRIPE_SIGNATURE_HEADER];
    expect(adapter.parseEvent(delivered.body, { 'Stripe-Signature': signature })).not.toBeNull();
  });

  it('ignores a signed event of another type', () => {
    const body = JSON.stringify({
      id: 'evt_other',
      object: 'event',
      type: 'customer.created',
      data: { object: { id: 'cus_1', object: 'customer' } },
    });
    const header = adapter.client.webhooks.generateTestHeaderString({
      payload: body,
      secret: WEBHOOK_SECRET,
    });
    expect(adapter.parseEvent(body, { [STRIPE_SIGNATURE_HEADER]: header })).toBeNull();
  });
});

describe('configuration', () => {
  it('is Live Mode only with both keys: without them card("live") is not configured', async () => {
    const { pool } = await createTestDatabase();
    try {
      for (const env of [
        {},
        { STRIPE_SECRET_KEY: 'sk_test_x' },
        { STRIPE_WEBHOOK_SECRET: 'whsec_x' },
        { STRIPE_SECRET_KEY: '', STRIPE_WEBHOOK_SECRET: '', STRIPE_API_BASE: '' },
      ]) {
        const providers = createProviders({ config: loadConfig(env), pool });
        expect(providers.liveCard).toBeNull();
        expect(() => providers.card('live')).toThrow(ProviderNotConfiguredError);
      }
    } finally {
      await pool.end();
    }
  });

  it('parses STRIPE_API_BASE into the client host, port and protocol', () => {
    expect(loadConfig({ STRIPE_API_BASE: localstripe.baseUrl }).providers.stripe.api).toEqual({
      host: '127.0.0.1',
      port: localstripe.port,
      protocol: 'http',
    });
    expect(loadConfig({ STRIPE_API_BASE: 'https://api.stripe.com' }).providers.stripe.api).toEqual({
      host: 'api.stripe.com',
      port: 443,
      protocol: 'https',
    });
    expect(() => loadConfig({ STRIPE_API_BASE: 'ftp://example.com' })).toThrow('STRIPE_API_BASE');
  });
});
