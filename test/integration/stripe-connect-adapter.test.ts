import Stripe from 'stripe';
import { loadConfig } from '../../src/config';
import type { PayoutAccountDetails } from '../../src/providers/card';
import { DebitCardRequiredError, UnknownCardTokenError } from '../../src/providers/card';
import { ProviderRefusedError } from '../../src/providers/mobile-money';
import { StripeConnectProvider, stripeConnectFromConfig } from '../../src/providers/stripe-connect';
import { FakeStripeConnect } from '../support/fake-stripe-connect';

/**
 * The Live Mode payout-account adapter, for real over HTTP with the official `stripe` package,
 * against a fake server speaking Stripe's wire format for the Connect endpoints it calls.
 */

let fake: FakeStripeConnect;
let adapter: StripeConnectProvider;
let counter = 0;

beforeAll(async () => {
  fake = await FakeStripeConnect.start();
  adapter = new StripeConnectProvider({
    secretKey: fake.secretKey,
    api: fake.api,
    timeoutMs: 5_000,
  });
});
afterAll(async () => fake?.close());

function details(idNumber = '000000000'): PayoutAccountDetails {
  return {
    individual: {
      first_name: 'Aminata',
      last_name: 'Kamara',
      dob: { day: 14, month: 3, year: 1990 },
      address: { line1: '12 Siaka Stevens Street', city: 'Freetown', country: 'SL' },
      email: 'aminata@example.com',
      phone: '+23276123456',
      id_number: idNumber,
    },
    businessProfile: { mcc: '5734', product_description: 'Handmade furniture' },
    tosAcceptance: { ip: '203.0.113.7', date: 1_790_000_000 },
  };
}

const key = () => `onboarding-wallet-${(counter += 1)}-${Date.now()}`;

async function verifiedAccountWithCard(): Promise<string> {
  const account = await adapter.createAccount({
    idempotencyKey: key(),
    reference: 'wallet-1',
    details: details(),
  });
  await adapter.addPayoutCard({
    accountId: account.id,
    cardToken: 'tok_visa_debit',
    idempotencyKey: key(),
  });
  return account.id;
}

describe('StripeConnectProvider against a Stripe-format fake', () => {
  it('creates a Custom account form-encoded, with individual, business_profile and tos_acceptance, once per idempotency key', async () => {
    const idempotencyKey = key();
    const request = { idempotencyKey, reference: 'wallet-42', details: details('123456789') };
    const first = await adapter.createAccount(request);
    const again = await adapter.createAccount(request);
    expect(again).toEqual(first);
    expect(first).toEqual({
      id: expect.stringMatching(/^acct_fake/),
      payoutsEnabled: false,
      externalAccount: null,
      requirements: {
        currentlyDue: ['individual.verification.document'],
        pendingVerification: [],
        disabledReason: 'requirements.past_due',
      },
    });
    const sent = fake
      .requestsTo('POST', /^\/v1\/accounts$/)
      .filter((r) => r.headers['idempotency-key'] === idempotencyKey);
    expect(sent).toHaveLength(2);
    expect(sent[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(sent[0]!.form).toEqual({
      type: 'custom',
      country: 'SL',
      email: 'aminata@example.com',
      business_type: 'individual',
      capabilities: { transfers: { requested: 'true' } },
      metadata: { wallet_id: 'wallet-42' },
      individual: {
        first_name: 'Aminata',
        last_name: 'Kamara',
        dob: { day: '14', month: '3', year: '1990' },
        address: { line1: '12 Siaka Stevens Street', city: 'Freetown', country: 'SL' },
        email: 'aminata@example.com',
        phone: '+23276123456',
        id_number: '123456789',
      },
      business_profile: { mcc: '5734', product_description: 'Handmade furniture' },
      tos_acceptance: { ip: '203.0.113.7', date: '1790000000' },
    });
    // One account at the provider, whatever the retries.
    expect(
      [...fake.accounts.values()].filter((a) => a.metadata.wallet_id === 'wallet-42'),
    ).toHaveLength(1);
  });

  it('verifies 000000000 at once and resubmits with accounts.update on the same account', async () => {
    const created = await adapter.createAccount({
      idempotencyKey: key(),
      reference: 'wallet-2',
      details: details('123456789'),
    });
    const updated = await adapter.updateAccount(created.id, details('000000000'));
    expect(updated).toMatchObject({ id: created.id, payoutsEnabled: true });
    expect(updated.requirements).toEqual({
      currentlyDue: [],
      pendingVerification: [],
      disabledReason: null,
    });
    const [update] = fake.requestsTo('POST', new RegExp(`^/v1/accounts/${created.id}$`));
    expect(update!.form).toMatchObject({
      individual: { id_number: '000000000' },
      tos_acceptance: { ip: '203.0.113.7' },
    });
  });

  it('uploads an identity document on the connected account, names it, and the next retrieve verifies', async () => {
    const account = await adapter.createAccount({
      idempotencyKey: key(),
      reference: 'wallet-3',
      details: details('123456789'),
    });
    const content = Buffer.from('%PDF-1.4\nidentity\n%%EOF\n');
    const fileId = await adapter.uploadIdentityDocument({
      accountId: account.id,
      document: { content, contentType: 'application/pdf', filename: 'id.pdf' },
      idempotencyKey: `document-${account.id}`,
    });
    expect(fileId).toMatch(/^file_fake/);
    const [upload] = fake
      .requestsTo('POST', /^\/v1\/files$/)
      .filter((r) => r.headers['stripe-account'] === account.id);
    expect(String(upload!.headers['content-type'])).toMatch(/^multipart\/form-data; boundary=/);
    expect(upload!.form).toEqual({ purpose: 'identity_document' });
    expect(upload!.file).toEqual({ content, filename: 'id.pdf' });

    const attached = await adapter.attachIdentityDocument(account.id, fileId);
    expect(attached.requirements).toEqual({
      currentlyDue: [],
      pendingVerification: ['individual.verification.document'],
      disabledReason: 'requirements.pending_verification',
    });
    const [named] = fake.requestsTo('POST', new RegExp(`^/v1/accounts/${account.id}$`));
    expect(named!.form).toEqual({ individual: { verification: { document: { front: fileId } } } });
    expect(await adapter.getAccount(account.id)).toMatchObject({ payoutsEnabled: true });
  });

  it('attaches a debit card from its token; refuses a credit card and an unknown token', async () => {
    const account = await adapter.createAccount({
      idempotencyKey: key(),
      reference: 'w',
      details: details(),
    });
    const withCard = await adapter.addPayoutCard({
      accountId: account.id,
      cardToken: 'tok_mastercard_debit',
      idempotencyKey: key(),
    });
    expect(withCard.externalAccount).toEqual({
      id: expect.stringMatching(/^card_fake/),
      last4: '8210',
    });
    const [sent] = fake.requestsTo(
      'POST',
      new RegExp(`^/v1/accounts/${account.id}/external_accounts$`),
    );
    expect(sent!.form).toEqual({
      external_account: 'tok_mastercard_debit',
      default_for_currency: 'true',
    });

    await expect(
      adapter.addPayoutCard({
        accountId: account.id,
        cardToken: 'tok_visa',
        idempotencyKey: key(),
      }),
    ).rejects.toBeInstanceOf(DebitCardRequiredError);
    await expect(
      adapter.addPayoutCard({
        accountId: account.id,
        cardToken: 'tok_nope',
        idempotencyKey: key(),
      }),
    ).rejects.toBeInstanceOf(UnknownCardTokenError);
    // A card Stripe took that is not debit is removed again, and refused.
    await expect(
      adapter.addPayoutCard({
        accountId: account.id,
        cardToken: 'tok_prepaid_quirk',
        idempotencyKey: key(),
      }),
    ).rejects.toBeInstanceOf(DebitCardRequiredError);
    expect(
      fake.requestsTo('DELETE', new RegExp(`^/v1/accounts/${account.id}/external_accounts/`)),
    ).toHaveLength(1);
    expect(fake.accounts.get(account.id)!.cards.map((c) => c.last4)).toEqual(['8210']);
  });

  it('pays out with a transfer to the account and a payout on it, each once per idempotency key', async () => {
    const accountId = await verifiedAccountWithCard();
    const request = {
      idempotencyKey: `payout-${key()}`,
      reference: 'txn-1',
      accountId,
      amount: 2_550n,
      currency: 'USD' as const,
    };
    const payout = await adapter.createPayout(request);
    expect(await adapter.createPayout(request)).toEqual(payout);
    expect(payout).toEqual({
      id: expect.stringMatching(/^po_fake/),
      status: 'paid',
      amount: 2_550n,
      currency: 'USD',
      failureMessage: null,
    });
    expect(fake.transfers.filter((t) => t.destination === accountId)).toEqual([
      { id: expect.any(String), amount: 2550, destination: accountId },
    ]);
    const payouts = fake
      .requestsTo('POST', /^\/v1\/payouts$/)
      .filter((r) => r.headers['stripe-account'] === accountId);
    expect(payouts.map((r) => r.headers['idempotency-key'])).toEqual([
      `${request.idempotencyKey}-payout`,
      `${request.idempotencyKey}-payout`,
    ]);
    expect(payouts[0]!.form).toEqual({
      amount: '2550',
      currency: 'usd',
      metadata: { reference: 'txn-1' },
    });
    expect([...fake.payouts.values()].filter((p) => p.account === accountId)).toHaveLength(1);
  });

  it('reads a payout accepted and failed later as pending, then failed with the provider’s message', async () => {
    const accountId = await verifiedAccountWithCard();
    const payout = await adapter.createPayout({
      idempotencyKey: `payout-${key()}`,
      reference: 'txn-2',
      accountId,
      amount: 4_040n,
      currency: 'USD',
    });
    expect(payout.status).toBe('pending');
    expect(await adapter.getPayout(accountId, payout.id)).toMatchObject({
      status: 'failed',
      failureMessage: 'The bank could not process this payout.',
    });
  });

  it('makes a refusal (4xx) a ProviderRefusedError and leaves a 5xx for the activity to retry', async () => {
    await expect(adapter.getAccount('acct_missing')).rejects.toBeInstanceOf(ProviderRefusedError);
    fake.failNext(1, 503);
    const down = await adapter.getAccount('acct_missing').catch((e: unknown) => e);
    expect(down).toBeInstanceOf(Stripe.errors.StripeError);
    expect(down).not.toBeInstanceOf(ProviderRefusedError);
    expect((down as Stripe.errors.StripeError).statusCode).toBe(503);
  });

  it('is configured only with both Stripe keys (Live Mode otherwise answers 503)', () => {
    expect(stripeConnectFromConfig(loadConfig({}))).toBeNull();
    expect(
      stripeConnectFromConfig(
        loadConfig({ STRIPE_SECRET_KEY: 'sk_live_x', STRIPE_WEBHOOK_SECRET: 'whsec_x' }),
      ),
    ).toBeInstanceOf(StripeConnectProvider);
  });
});

describe('StripeConnectProvider.parsePayoutEvent (the card webhook’s payout events)', () => {
  const SECRET = 'whsec_connect_payout_events';
  const reader = new StripeConnectProvider({ secretKey: 'sk_test_events', webhookSecret: SECRET });
  const event = (type: string, object: Record<string, unknown>) =>
    JSON.stringify({ id: `evt_${type}`, object: 'event', type, data: { object } });
  const payout = (status: string) => ({
    id: 'po_123',
    object: 'payout',
    status,
    amount: 4040,
    currency: 'usd',
    metadata: { reference: 'c0ffee00-0000-4000-8000-000000000001' },
  });
  const signed = (body: string, secret = SECRET) => ({
    'stripe-signature': reader.client.webhooks.generateTestHeaderString({ payload: body, secret }),
  });

  it('reads payout.paid, payout.failed and payout.canceled with our reference', () => {
    for (const [type, status, expected] of [
      ['payout.paid', 'paid', 'paid'],
      ['payout.failed', 'failed', 'failed'],
      ['payout.canceled', 'canceled', 'failed'],
    ] as const) {
      const body = event(type, payout(status));
      expect(reader.parsePayoutEvent(body, signed(body))).toEqual({
        id: `evt_${type}`,
        payoutId: 'po_123',
        status: expected,
        reference: 'c0ffee00-0000-4000-8000-000000000001',
      });
    }
  });

  it('ignores other events, bad signatures, and everything without a webhook secret', () => {
    const intent = event('payment_intent.succeeded', { id: 'pi_1', object: 'payment_intent' });
    expect(reader.parsePayoutEvent(intent, signed(intent))).toBeNull();
    const body = event('payout.failed', payout('failed'));
    expect(reader.parsePayoutEvent(body, signed(body, 'whsec_someone_else'))).toBeNull();
    expect(reader.parsePayoutEvent(body, {})).toBeNull();
    const unkeyed = new StripeConnectProvider({ secretKey: 'sk_test_events' });
    expect(unkeyed.parsePayoutEvent(body, signed(body))).toBeNull();
  });
});
