import { findPayoutAccount } from '../../src/db/payout-accounts';
import { FakeStripeConnect } from '../support/fake-stripe-connect';
import { createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

/**
 * Live Mode onboarding end to end: the engine configured with STRIPE_* as in production, its
 * payout-account adapter (the official `stripe` package) talking to a local fake that speaks
 * Stripe's wire format for the Connect endpoints.
 */

let fake: FakeStripeConnect;
beforeAll(async () => {
  fake = await FakeStripeConnect.start();
});
const engine = useTestEngine(() => ({
  env: {
    STRIPE_SECRET_KEY: fake.secretKey,
    STRIPE_WEBHOOK_SECRET: 'whsec_live_onboarding_test',
    STRIPE_API_BASE: `http://127.0.0.1:${fake.api.port}`,
  },
}));
const { app, live } = useTestApp(engine, { currency: 'USD' });
afterAll(async () => fake?.close());

const COMPLETE = '/api/v1/transactions/wallet/complete-onboarding/';
const CUSTOMER = { 'x-forwarded-for': '203.0.113.7' };

function submission(walletId: string, idNumber: string, cardToken?: string) {
  return {
    wallet_id: walletId,
    individual: {
      first_name: 'Aminata',
      last_name: 'Kamara',
      dob: { day: 14, month: 3, year: 1990 },
      address: { line1: '12 Siaka Stevens Street', city: 'Freetown', country: 'SL' },
      email: 'aminata@example.com',
      id_number: idNumber,
    },
    business_profile: { mcc: '5734', product_description: 'Handmade furniture' },
    ...(cardToken ? { card_token: cardToken } : {}),
  };
}

describe('Live Mode payout-account onboarding through Stripe Connect', () => {
  it('creates the account with the terms acceptance, asks for a document, sends it to Stripe, and the re-sync verifies', async () => {
    const { walletId } = await createUserWithWallet(live);
    const first = await live.post(COMPLETE, submission(walletId, '123456789'), CUSTOMER);
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({
      account_id: expect.stringMatching(/^acct_fake/),
      currently_due: ['individual.verification.document'],
      disabled_reason: 'requirements.past_due',
    });
    const accountId = first.body.account_id as string;
    const account = fake.accounts.get(accountId)!;
    expect(account.metadata).toEqual({ wallet_id: walletId });
    expect(account.tos_acceptance).toEqual({ ip: '203.0.113.7', date: expect.any(String) });
    const acceptedAt = Number(account.tos_acceptance.date) * 1000;
    expect(Math.abs(acceptedAt - Date.now())).toBeLessThan(60_000);
    expect(
      await findPayoutAccount(engine.pool, { applicationId: app.id, mode: 'live' }, walletId),
    ).toMatchObject({ provider: 'stripe', account_id: accountId, payouts_enabled: false });

    const pdf = Buffer.from('%PDF-1.4\nlive identity\n%%EOF\n');
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(pdf)], { type: 'application/pdf' }), 'id.pdf');
    form.append('purpose', 'identity_document');
    const uploaded = await fetch(
      `${engine.url}/api/v1/transactions/wallet/${walletId}/verification-document`,
      {
        method: 'POST',
        headers: {
          'api-key': app.credentials.live.apiKey,
          'secret-key': app.credentials.live.secretKey,
        },
        body: form,
      },
    );
    expect(uploaded.status).toBe(202);
    expect(await uploaded.json()).toMatchObject({
      pending_verification: ['individual.verification.document'],
    });
    const files = fake.files.filter((f) => f.account === accountId);
    expect(files.map((f) => ({ content: f.content, purpose: f.purpose }))).toEqual([
      { content: pdf, purpose: 'identity_document' },
    ]);
    expect(account.individual).toMatchObject({
      verification: { document: { front: files[0]!.id } },
    });

    const synced = await live.post(`/api/v1/transactions/wallet/${walletId}/onboarding/sync`);
    expect(synced).toMatchObject({
      status: 200,
      body: { account_id: accountId, payouts_enabled: true, currently_due: [] },
    });
  });

  it('attaches a debit card on resubmission to the same account, and refuses a credit card', async () => {
    const { walletId } = await createUserWithWallet(live);
    const refused = await live.post(
      COMPLETE,
      submission(walletId, '000000000', 'tok_visa'),
      CUSTOMER,
    );
    expect(refused).toMatchObject({ status: 400, body: { detail: 'Payouts need a debit card' } });
    const row = await findPayoutAccount(
      engine.pool,
      { applicationId: app.id, mode: 'live' },
      walletId,
    );
    expect(row).toMatchObject({ payouts_enabled: true, external_account_added: false });
    const again = await live.post(
      COMPLETE,
      submission(walletId, '000000000', 'tok_visa_debit'),
      CUSTOMER,
    );
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      account_id: row!.account_id,
      payouts_enabled: true,
      external_account_added: true,
    });
    expect(fake.accounts.get(row!.account_id)!.cards.map((c) => c.last4)).toEqual(['5556']);
    expect(
      [...fake.accounts.values()].filter((a) => a.metadata.wallet_id === walletId),
    ).toHaveLength(1);
  });
});
