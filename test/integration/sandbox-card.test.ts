import type { DatabasePool } from '../../src/db/pool';
import { sql } from 'slonik';
import { z } from 'zod';
import { loadConfig } from '../../src/config';
import { UnknownPaymentMethodError, type CardPaymentRequest } from '../../src/providers/card';
import { createProviders } from '../../src/providers';
import { ProviderNotConfiguredError } from '../../src/providers/mobile-money';
import {
  SANDBOX_AUTHENTICATION_FAILED_MESSAGE,
  SANDBOX_CANCELED_MESSAGE,
  SANDBOX_CARDS,
  SANDBOX_REFUND_FAILS_AFTER_MS,
  SANDBOX_REFUND_FAILURE_REASON,
  SandboxCardProvider,
} from '../../src/providers/sandbox-card';
import { ProviderRefusedError } from '../../src/providers/mobile-money';
import { SANDBOX_SIGNATURE_HEADER } from '../../src/providers/sandbox-mobile-money';
import { createTestDatabase } from '../support/database';

/** The Test Mode card sandbox against the real test Postgres. */

const SECRET = 'sandbox-card-test-signing-secret';
let pool: DatabasePool;
let sandbox: SandboxCardProvider;
let counter = 0;

function request(overrides: Partial<CardPaymentRequest> = {}): CardPaymentRequest {
  counter += 1;
  return {
    idempotencyKey: `card-deposit-${counter}`,
    reference: `00000000-0000-4000-8000-${String(counter).padStart(12, '0')}`,
    amount: 10_390n,
    currency: 'USD',
    paymentMethodId: 'pm_card_visa',
    description: 'Wallet top-up',
    ...overrides,
  };
}

async function rowsWithKey(key: string): Promise<number> {
  return pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM sandbox_card_payments WHERE idempotency_key = ${key}`,
  );
}

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  sandbox = new SandboxCardProvider(pool, SECRET);
});

afterAll(async () => {
  await pool.end();
});

describe('payment methods', () => {
  it.each([
    ['pm_card_visa', 'visa', 'US', 'credit'],
    ['pm_card_visa_debit', 'visa', 'US', 'debit'],
    ['pm_card_mastercard', 'mastercard', 'US', 'credit'],
    ['pm_card_amex', 'amex', 'US', 'credit'],
    ['pm_card_gb', 'visa', 'GB', 'credit'],
    ['pm_card_sl', 'visa', 'SL', 'debit'],
    ['pm_card_chargeDeclined', 'visa', 'US', 'credit'],
    ['pm_card_insufficientFunds', 'visa', 'US', 'debit'],
    ['pm_card_authenticationRequired', 'visa', 'US', 'credit'],
    ['pm_card_refundFails', 'visa', 'US', 'credit'],
  ])('%s is %s, %s, %s', async (paymentMethodId, brand, country, funding) => {
    const metadata = await sandbox.getCardMetadata(paymentMethodId);
    expect(metadata).toEqual({
      paymentMethodId,
      brand,
      country,
      funding,
      last4: expect.stringMatching(/^\d{4}$/),
    });
  });

  it('has exactly the payment methods of docs/api.md', () => {
    expect(Object.keys(SANDBOX_CARDS)).toHaveLength(10);
  });

  it('refuses an unknown payment method, also for a payment, and writes nothing', async () => {
    await expect(sandbox.getCardMetadata('pm_card_unknown')).rejects.toBeInstanceOf(
      UnknownPaymentMethodError,
    );
    await expect(sandbox.getCardMetadata('toString')).rejects.toThrow('No such payment method');
    const r = request({ paymentMethodId: 'pm_card_unknown' });
    await expect(sandbox.createPayment(r)).rejects.toBeInstanceOf(UnknownPaymentMethodError);
    expect(await rowsWithKey(r.idempotencyKey)).toBe(0);
  });
});

describe('payments', () => {
  it('charges a card that succeeds', async () => {
    const r = request();
    const payment = await sandbox.createPayment(r);
    expect(payment).toEqual({
      id: expect.stringMatching(/^pi_sandbox_[0-9a-f]{32}$/),
      status: 'succeeded',
      amount: 10_390n,
      currency: 'USD',
      reference: r.reference,
      nextActionUrl: null,
      declineMessage: null,
    });
    expect(await sandbox.getPayment(payment.id)).toEqual(payment);
  });

  it.each([
    ['pm_card_chargeDeclined', 'Your card was declined.'],
    ['pm_card_insufficientFunds', 'Your card has insufficient funds.'],
  ])('declines %s', async (paymentMethodId, message) => {
    const payment = await sandbox.createPayment(request({ paymentMethodId, currency: 'SLE' }));
    expect(payment).toMatchObject({ status: 'failed', currency: 'SLE', declineMessage: message });
    expect(await sandbox.getPayment(payment.id)).toEqual(payment);
  });

  it('waits for 3-D Secure, then succeeds when the payer approves', async () => {
    const payment = await sandbox.createPayment(
      request({ paymentMethodId: 'pm_card_authenticationRequired' }),
    );
    expect(payment.status).toBe('requires_action');
    expect(payment.nextActionUrl).toBe(`/api/v1/testing/card-authentication/${payment.id}`);
    expect(await sandbox.getPayment(payment.id)).toEqual(payment);

    const done = await sandbox.authenticate(payment.id, true);
    expect(done).toMatchObject({ id: payment.id, status: 'succeeded', nextActionUrl: null });
    // Settled: a second answer changes nothing.
    expect(await sandbox.authenticate(payment.id, false)).toEqual(done);
  });

  it('fails a payment whose 3-D Secure fails', async () => {
    const payment = await sandbox.createPayment(
      request({ paymentMethodId: 'pm_card_authenticationRequired' }),
    );
    const done = await sandbox.authenticate(payment.id, false);
    expect(done).toMatchObject({
      status: 'failed',
      nextActionUrl: null,
      declineMessage: SANDBOX_AUTHENTICATION_FAILED_MESSAGE,
    });
    expect(await sandbox.getPayment(payment.id)).toEqual(done);
  });

  it('cancels a payment still waiting for the payer, so a late approval charges nothing', async () => {
    const payment = await sandbox.createPayment(
      request({ paymentMethodId: 'pm_card_authenticationRequired' }),
    );
    const canceled = await sandbox.cancelPayment(payment.id);
    expect(canceled).toMatchObject({
      id: payment.id,
      status: 'failed',
      declineMessage: SANDBOX_CANCELED_MESSAGE,
    });
    expect(await sandbox.authenticate(payment.id, true)).toEqual(canceled);
    // A charged payment stays charged.
    const charged = await sandbox.createPayment(request());
    expect(await sandbox.cancelPayment(charged.id)).toEqual(charged);
  });

  it('does not authenticate a payment that needs no authentication', async () => {
    const payment = await sandbox.createPayment(request());
    expect(await sandbox.authenticate(payment.id, false)).toEqual(payment);
  });

  it('knows no payment it did not create', async () => {
    await expect(sandbox.getPayment('pi_sandbox_missing')).rejects.toThrow('No such payment');
  });

  it('keeps its payments across instances (state in Postgres)', async () => {
    const payment = await sandbox.createPayment(request());
    expect(await new SandboxCardProvider(pool, SECRET).getPayment(payment.id)).toEqual(payment);
  });
});

describe('idempotency', () => {
  it('answers the same payment for the same key, with one row', async () => {
    const r = request({ paymentMethodId: 'pm_card_authenticationRequired' });
    const first = await sandbox.createPayment(r);
    const second = await sandbox.createPayment(r);
    expect(second).toEqual(first);
    expect(await rowsWithKey(r.idempotencyKey)).toBe(1);
  });

  it('creates one payment for concurrent calls with the same key', async () => {
    const r = request();
    const payments = await Promise.all(
      Array.from({ length: 12 }, () => sandbox.createPayment({ ...r })),
    );
    expect(new Set(payments.map((p) => p.id)).size).toBe(1);
    expect(await rowsWithKey(r.idempotencyKey)).toBe(1);
  });
});

describe('refunds', () => {
  const refundOf = (paymentId: string, key: string, amount: bigint) =>
    sandbox.createRefund({
      idempotencyKey: key,
      reference: `refund-${key}`,
      paymentId,
      amount,
      currency: 'USD',
      reason: null,
    });
  const refundRows = (paymentId: string) =>
    pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM sandbox_card_refunds WHERE payment_id = ${paymentId}`);

  it('refunds a charged payment in parts, once per key, never beyond what it has left', async () => {
    const payment = await sandbox.createPayment(request({ amount: 1_000n }));
    const first = await refundOf(payment.id, `r-${payment.id}-1`, 600n);
    expect(first).toMatchObject({ status: 'succeeded', amount: 600n, failureReason: null });
    // The same key again answers the same refund.
    expect(await refundOf(payment.id, `r-${payment.id}-1`, 600n)).toEqual(first);
    await expect(refundOf(payment.id, `r-${payment.id}-2`, 401n)).rejects.toBeInstanceOf(
      ProviderRefusedError,
    );
    expect(await refundOf(payment.id, `r-${payment.id}-3`, 400n)).toMatchObject({
      status: 'succeeded',
    });
    expect(await sandbox.getRefund(first.id)).toEqual(first);
    expect(await refundRows(payment.id)).toBe(2);
  });

  it('refuses a refund of a payment not charged, or unknown, and writes nothing', async () => {
    const waiting = await sandbox.createPayment(
      request({ paymentMethodId: 'pm_card_authenticationRequired' }),
    );
    await expect(refundOf(waiting.id, `r-${waiting.id}`, 100n)).rejects.toBeInstanceOf(
      ProviderRefusedError,
    );
    await expect(refundOf('pi_sandbox_none', 'r-none', 100n)).rejects.toBeInstanceOf(
      ProviderRefusedError,
    );
    expect(await refundRows(waiting.id)).toBe(0);
  });

  it('accepts the refunds of pm_card_refundFails, then fails them a moment later', async () => {
    const payment = await sandbox.createPayment(
      request({ paymentMethodId: 'pm_card_refundFails', amount: 1_000n }),
    );
    expect(payment.status).toBe('succeeded');
    const refund = await refundOf(payment.id, `r-${payment.id}`, 1_000n);
    expect(refund).toMatchObject({ status: 'pending', failureReason: null });
    await new Promise((resolve) => setTimeout(resolve, SANDBOX_REFUND_FAILS_AFTER_MS + 100));
    expect(await sandbox.getRefund(refund.id)).toMatchObject({
      status: 'failed',
      failureReason: SANDBOX_REFUND_FAILURE_REASON,
    });
    // A failed refund takes nothing: the whole payment can be refunded again.
    expect(await refundOf(payment.id, `r-${payment.id}-again`, 1_000n)).toMatchObject({
      status: 'pending',
    });
  });
});

describe('events', () => {
  it('signs an event that parseEvent reads back', async () => {
    const payment = await sandbox.createPayment(request());
    const { body, headers } = sandbox.eventFor(payment);
    expect(Object.keys(headers)).toEqual([SANDBOX_SIGNATURE_HEADER]);
    expect(JSON.parse(body)).toMatchObject({ type: 'payment_intent.succeeded' });
    expect(sandbox.parseEvent(body, headers)).toEqual({
      id: `evt_${payment.id}_succeeded`,
      paymentId: payment.id,
      status: 'succeeded',
      reference: payment.reference,
    });
    // Header names are read whatever their case.
    const upper = { 'Sandbox-Signature': headers[SANDBOX_SIGNATURE_HEADER] };
    expect(sandbox.parseEvent(body, upper)?.paymentId).toBe(payment.id);
  });

  it('names a failed payment payment_intent.payment_failed', async () => {
    const payment = await sandbox.createPayment(
      request({ paymentMethodId: 'pm_card_chargeDeclined' }),
    );
    const { body, headers } = sandbox.eventFor(payment);
    expect(JSON.parse(body)).toMatchObject({ type: 'payment_intent.payment_failed' });
    expect(sandbox.parseEvent(body, headers)?.status).toBe('failed');
  });

  it('refuses a tampered body, a bad, a stale or a missing signature', async () => {
    const payment = await sandbox.createPayment(request());
    const { body, headers } = sandbox.eventFor(payment);
    expect(sandbox.parseEvent(body.replace('succeeded', 'failed'), headers)).toBeNull();
    expect(sandbox.parseEvent(body, {})).toBeNull();
    expect(sandbox.parseEvent(body, { [SANDBOX_SIGNATURE_HEADER]: 'garbage' })).toBeNull();
    const other = new SandboxCardProvider(pool, 'another-secret-of-16+chars');
    expect(other.parseEvent(body, headers)).toBeNull();
    const stale = sandbox.eventFor(payment, Math.floor(Date.now() / 1000) - 3600);
    expect(sandbox.parseEvent(stale.body, stale.headers)).toBeNull();
  });
});

describe('providers wiring', () => {
  it('gives the sandbox in Test Mode and refuses Live Mode without the Stripe keys', () => {
    const config = loadConfig({ STRIPE_SECRET_KEY: 'sk_test_only_one_key' });
    const providers = createProviders({ config, pool });
    expect(providers.card('test')).toBe(providers.sandboxCard);
    expect(providers.liveCard).toBeNull();
    expect(() => providers.card('live')).toThrow(ProviderNotConfiguredError);
  });

  it('gives the Stripe adapter in Live Mode with both keys', () => {
    const config = loadConfig({
      STRIPE_SECRET_KEY: 'sk_test_123',
      STRIPE_WEBHOOK_SECRET: 'whsec_123',
      STRIPE_API_BASE: 'http://127.0.0.1:8420',
    });
    expect(config.providers.stripe.api).toEqual({
      host: '127.0.0.1',
      port: 8420,
      protocol: 'http',
    });
    const providers = createProviders({ config, pool });
    expect(providers.card('live')).toBe(providers.liveCard);
    expect(providers.card('live').name).toBe('stripe');
  });
});
