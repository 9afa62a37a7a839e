import Stripe from 'stripe';
import { loadConfig } from '../../src/config';
import type { CardRefundRequest } from '../../src/providers/card';
import { ProviderRefusedError } from '../../src/providers/mobile-money';
import {
  STRIPE_CARD_EVENT_TYPES,
  STRIPE_CASE_EVENT_TYPES,
  STRIPE_SIGNATURE_HEADER,
  StripeCardProvider,
  stripeCardFromConfig,
} from '../../src/providers/stripe-card';
import { FakeStripeCases, type FakeDisputeStatus } from '../support/fake-stripe-cases';
import { LOCALSTRIPE_CARDS, startLocalstripe, type Localstripe } from '../support/localstripe';

/**
 * The Live Mode card adapter's refunds and disputes over HTTP with the official `stripe` package:
 * against localstripe for what it emulates (refunds that succeed at once), against
 * fake-stripe-cases.ts for what it does not (docs/testing.md "The helpers").
 */

const WEBHOOK_SECRET = 'whsec_stripe_refunds_adapter_test';
let counter = 0;

function refundRequest(
  paymentId: string,
  overrides: Partial<CardRefundRequest> = {},
): CardRefundRequest {
  counter += 1;
  return {
    idempotencyKey: `refund-${counter}-${Date.now()}`,
    reference: `00000000-0000-4000-8000-${String(counter).padStart(12, '0')}`,
    paymentId,
    amount: 1_000n,
    currency: 'USD',
    reason: null,
    ...overrides,
  };
}

const expectRefused = (run: Promise<unknown>) =>
  expect(run).rejects.toBeInstanceOf(ProviderRefusedError);

/** A transient failure: rethrown as Stripe's error, for the activity to retry. */
async function expectTransient(run: Promise<unknown>, type: new (...args: never[]) => Error) {
  const error: unknown = await run.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  expect(error).not.toBeInstanceOf(ProviderRefusedError);
}

describe('refunds against localstripe', () => {
  let localstripe: Localstripe;
  let adapter: StripeCardProvider;

  beforeAll(async () => {
    localstripe = await startLocalstripe();
    await localstripe.reset();
    const live = stripeCardFromConfig(loadConfig(localstripe.env(WEBHOOK_SECRET)));
    if (!live) throw new Error('the Stripe adapter was not configured');
    adapter = live;
  });
  afterAll(async () => localstripe?.stop());

  async function chargedPayment(amount: bigint): Promise<string> {
    const paymentMethodId = await localstripe.createCard(LOCALSTRIPE_CARDS.succeeds);
    counter += 1;
    const payment = await adapter.createPayment({
      idempotencyKey: `card-deposit-${counter}-${Date.now()}`,
      reference: `00000000-0000-4000-9000-${String(counter).padStart(12, '0')}`,
      amount,
      currency: 'USD',
      paymentMethodId,
      description: 'Wallet top-up',
    });
    expect(payment.status).toBe('succeeded');
    return payment.id;
  }

  it('refunds part of a charged payment, then the rest, each with our reference', async () => {
    const paymentId = await chargedPayment(10_000n);
    const first = refundRequest(paymentId, { amount: 3_000n });
    const part = await adapter.createRefund(first);
    expect(part).toEqual({
      id: expect.stringMatching(/^re_/),
      status: 'succeeded',
      amount: 3_000n,
      currency: 'USD',
      failureReason: null,
    });
    expect(await adapter.getRefund(part.id)).toEqual(part);
    expect(await localstripe.client.refunds.retrieve(part.id)).toMatchObject({
      payment_intent: paymentId,
      amount: 3_000,
      currency: 'usd',
      metadata: { reference: first.reference },
    });

    const rest = await adapter.createRefund(refundRequest(paymentId, { amount: 7_000n }));
    expect(rest).toMatchObject({ status: 'succeeded', amount: 7_000n });
    const listed = await localstripe.client.refunds.list({ payment_intent: paymentId });
    expect(listed.data.map((r) => r.amount).sort()).toEqual([3_000, 7_000]);
  });

  it('refuses a refund of a payment it does not know, and reading a refund it does not know', async () => {
    await expectRefused(adapter.createRefund(refundRequest('pi_doesNotExist')));
    await expectRefused(adapter.getRefund('re_doesNotExist'));
  });

  // What localstripe does not do like Stripe, pinned so that a change of the emulator shows;
  // the fake below covers each of them as Stripe does it.
  describe('where localstripe differs from Stripe', () => {
    it('refuses the `reason` parameter (400 "Unexpected reason")', async () => {
      const paymentId = await chargedPayment(5_000n);
      await expectRefused(
        adapter.createRefund(refundRequest(paymentId, { reason: 'requested_by_customer' })),
      );
    });

    it('ignores Idempotency-Key: the same key refunds twice', async () => {
      const paymentId = await chargedPayment(5_000n);
      const r = refundRequest(paymentId, { amount: 1_000n });
      const once = await adapter.createRefund(r);
      const twice = await adapter.createRefund(r);
      expect(twice.id).not.toBe(once.id);
      const listed = await localstripe.client.refunds.list({ payment_intent: paymentId });
      expect(listed.data).toHaveLength(2);
    });

    it('accepts a refund beyond what the payment has left', async () => {
      const paymentId = await chargedPayment(5_000n);
      const over = await adapter.createRefund(refundRequest(paymentId, { amount: 6_000n }));
      expect(over).toMatchObject({ status: 'succeeded', amount: 6_000n });
    });

    it('has no disputes: its answer is not Stripe JSON, so the adapter treats it as transient', async () => {
      await expectTransient(adapter.getDisputeStatus('dp_any'), Stripe.errors.StripeAPIError);
      await expectTransient(
        adapter.submitDisputeEvidence('dp_any', 'Delivered on time.'),
        Stripe.errors.StripeAPIError,
      );
    });
  });
});

describe('refunds and disputes against a fake of Stripe’s wire format', () => {
  let fake: FakeStripeCases;
  let adapter: StripeCardProvider;

  beforeAll(async () => {
    fake = await FakeStripeCases.start();
    adapter = new StripeCardProvider({
      secretKey: fake.secretKey,
      webhookSecret: WEBHOOK_SECRET,
      api: fake.api,
    });
  });
  afterAll(async () => fake?.close());

  it('sends payment_intent, amount, reason, metadata[reference] and our idempotency key', async () => {
    const paymentId = fake.addPayment(10_000);
    const r = refundRequest(paymentId, { amount: 2_500n, reason: 'duplicate' });
    const refund = await adapter.createRefund(r);
    expect(refund).toEqual({
      id: expect.stringMatching(/^re_fake/),
      status: 'succeeded',
      amount: 2_500n,
      currency: 'USD',
      failureReason: null,
    });
    const [sent] = fake.requestsTo('POST', /^\/v1\/refunds$/).slice(-1);
    expect(sent!.headers['idempotency-key']).toBe(r.idempotencyKey);
    expect(sent!.form).toEqual({
      payment_intent: paymentId,
      amount: '2500',
      reason: 'duplicate',
      metadata: { reference: r.reference },
    });
  });

  it('answers the first refund to a retry with the same key: one refund at Stripe', async () => {
    const paymentId = fake.addPayment(10_000);
    const r = refundRequest(paymentId, { amount: 4_000n });
    const before = fake.requestsTo('POST', /^\/v1\/refunds$/).length;
    const once = await adapter.createRefund(r);
    const again = await adapter.createRefund(r);
    expect(again).toEqual(once);
    expect(fake.requestsTo('POST', /^\/v1\/refunds$/)).toHaveLength(before + 2);
    expect([...fake.refunds.values()].filter((x) => x.payment_intent === paymentId)).toHaveLength(
      1,
    );
  });

  it('reads a refund accepted pending that the card network fails later', async () => {
    const paymentId = fake.addPayment(10_000, 'fails_later');
    const refund = await adapter.createRefund(refundRequest(paymentId, { amount: 10_000n }));
    expect(refund).toMatchObject({ status: 'pending', failureReason: null });
    expect(await adapter.getRefund(refund.id)).toEqual({
      ...refund,
      status: 'failed',
      failureReason: 'expired_or_canceled_card',
    });
  });

  it('reads a refund that stays pending', async () => {
    const paymentId = fake.addPayment(10_000, 'pending');
    const refund = await adapter.createRefund(refundRequest(paymentId));
    expect((await adapter.getRefund(refund.id)).status).toBe('pending');
  });

  it('cancels a refund that waits on the customer (refunds.cancel); any other stands as it is', async () => {
    const waiting = await adapter.createRefund(
      refundRequest(fake.addPayment(10_000, 'requires_action')),
    );
    expect(waiting.status).toBe('pending');
    expect(await adapter.cancelRefund(waiting.id)).toMatchObject({
      id: waiting.id,
      status: 'failed',
    });
    expect(fake.requestsTo('POST', new RegExp(`^/v1/refunds/${waiting.id}/cancel$`))).toHaveLength(
      1,
    );
    // Stripe refuses to cancel a pending or a succeeded refund: the adapter answers it as it is.
    const pending = await adapter.createRefund(refundRequest(fake.addPayment(10_000, 'pending')));
    expect(await adapter.cancelRefund(pending.id)).toMatchObject({ status: 'pending' });
    const paid = await adapter.createRefund(refundRequest(fake.addPayment(10_000)));
    expect(await adapter.cancelRefund(paid.id)).toMatchObject({ status: 'succeeded' });
    await expectRefused(adapter.cancelRefund('re_missing'));
  });

  it('refuses more than is left, a payment fully refunded, and unknown objects', async () => {
    const paymentId = fake.addPayment(5_000);
    await adapter.createRefund(refundRequest(paymentId, { amount: 3_000n }));
    await expectRefused(adapter.createRefund(refundRequest(paymentId, { amount: 2_001n })));
    await adapter.createRefund(refundRequest(paymentId, { amount: 2_000n }));
    await expectRefused(adapter.createRefund(refundRequest(paymentId, { amount: 1n })));
    await expectRefused(adapter.createRefund(refundRequest('pi_doesNotExist')));
    await expectRefused(adapter.getRefund('re_doesNotExist'));
    // Not even sent: Stripe takes a positive integer of minor units only.
    const sent = fake.requests.length;
    await expectRefused(adapter.createRefund(refundRequest(paymentId, { amount: 0n })));
    expect(fake.requests).toHaveLength(sent);
  });

  it('keeps a 5xx or a 429 transient and a 400 a refusal; a retry after a 5xx refunds once', async () => {
    const paymentId = fake.addPayment(10_000);
    const r = refundRequest(paymentId, { amount: 1_000n });
    fake.failNext(1, 503);
    await expectTransient(adapter.createRefund(r), Stripe.errors.StripeAPIError);
    fake.failNext(1, 429);
    await expectTransient(adapter.createRefund(r), Stripe.errors.StripeRateLimitError);
    expect((await adapter.createRefund(r)).status).toBe('succeeded');
    expect([...fake.refunds.values()].filter((x) => x.payment_intent === paymentId)).toHaveLength(
      1,
    );
    fake.failNext(1, 400);
    await expectRefused(adapter.createRefund(refundRequest(paymentId)));

    const disputeId = fake.addDispute(paymentId, 'needs_response');
    fake.failNext(1, 500);
    await expectTransient(adapter.getDisputeStatus(disputeId), Stripe.errors.StripeAPIError);
    fake.failNext(1, 429);
    await expectTransient(
      adapter.submitDisputeEvidence(disputeId, 'Delivered.'),
      Stripe.errors.StripeRateLimitError,
    );
    fake.failNext(1, 400);
    await expectRefused(adapter.getDisputeStatus(disputeId));
  });

  it.each<[FakeDisputeStatus, string]>([
    ['warning_needs_response', 'needs_response'],
    ['needs_response', 'needs_response'],
    ['warning_under_review', 'under_review'],
    ['under_review', 'under_review'],
    ['won', 'won'],
    ['warning_closed', 'won'],
    ['prevented', 'won'],
    ['lost', 'lost'],
    ['appeal_needs_response', 'lost'],
    ['appeal_under_review', 'lost'],
  ])('reads a dispute %s as %s', async (status, expected) => {
    const disputeId = fake.addDispute(fake.addPayment(2_000), status);
    expect(await adapter.getDisputeStatus(disputeId)).toBe(expected);
  });

  it('refuses a dispute it does not know', async () => {
    await expectRefused(adapter.getDisputeStatus('dp_doesNotExist'));
    await expectRefused(adapter.submitDisputeEvidence('dp_doesNotExist', 'text'));
  });

  it('submits evidence as uncategorized text with submit=true; a retry replays it', async () => {
    const disputeId = fake.addDispute(fake.addPayment(2_000), 'needs_response');
    const text = 'The parcel was delivered on 3 March; tracking attached.';
    await adapter.submitDisputeEvidence(disputeId, text);
    const updates = fake.requestsTo('POST', new RegExp(`^/v1/disputes/${disputeId}$`));
    expect(updates).toHaveLength(1);
    expect(updates[0]!.form).toEqual({ evidence: { uncategorized_text: text }, submit: 'true' });
    expect(updates[0]!.headers['idempotency-key']).toEqual(expect.stringContaining(disputeId));
    expect(await adapter.getDisputeStatus(disputeId)).toBe('under_review');
    expect(fake.disputeObject(disputeId).evidence_details.submission_count).toBe(1);

    // The answer was lost and the activity retries: the same key, the first answer.
    await adapter.submitDisputeEvidence(disputeId, text);
    expect(fake.disputeObject(disputeId).evidence_details.submission_count).toBe(1);
    // Other evidence for a dispute under review is Stripe's refusal.
    await expectRefused(adapter.submitDisputeEvidence(disputeId, 'Something else.'));
  });

  it('refuses evidence for a closed dispute', async () => {
    const disputeId = fake.addDispute(fake.addPayment(2_000), 'lost');
    await expectRefused(adapter.submitDisputeEvidence(disputeId, 'Too late.'));
  });
});

describe('refund and dispute events', () => {
  let fake: FakeStripeCases;
  let adapter: StripeCardProvider;
  let paymentId: string;

  beforeAll(async () => {
    fake = await FakeStripeCases.start();
    adapter = new StripeCardProvider({
      secretKey: fake.secretKey,
      webhookSecret: WEBHOOK_SECRET,
      api: fake.api,
    });
    paymentId = fake.addPayment(10_000, 'pending');
  });
  afterAll(async () => fake?.close());

  const signed = (body: string, secret = WEBHOOK_SECRET) => ({
    [STRIPE_SIGNATURE_HEADER]: adapter.client.webhooks.generateTestHeaderString({
      payload: body,
      secret,
    }),
  });
  const parse = (body: string) => adapter.parseCaseEvent(body, signed(body));

  async function refundObject(status: 'pending' | 'succeeded' | 'failed', reference = 'ref-1') {
    const refund = await adapter.createRefund(refundRequest(paymentId, { amount: 10n, reference }));
    fake.refunds.get(refund.id)!.status = status;
    return fake.refundObject(refund.id);
  }

  it.each([
    ['refund.updated', 'succeeded', 'succeeded'],
    ['refund.updated', 'pending', 'pending'],
    ['refund.updated', 'failed', 'failed'],
    ['refund.created', 'pending', 'pending'],
    ['refund.failed', 'failed', 'failed'],
    ['charge.refund.updated', 'succeeded', 'succeeded'],
    ['charge.refund.updated', 'failed', 'failed'],
  ] as const)('reads %s of a %s refund as %s', async (type, status, expected) => {
    const object = await refundObject(status, 'f2a1c0de-0000-4000-8000-000000000001');
    const body = fake.eventBody(type, object);
    expect(parse(body)).toEqual({
      kind: 'refund',
      id: JSON.parse(body).id,
      refundId: object.id,
      status: expected,
      reference: 'f2a1c0de-0000-4000-8000-000000000001',
    });
    // The payment events' reader ignores it.
    expect(adapter.parseEvent(body, signed(body))).toBeNull();
  });

  it('reads a refund made elsewhere (no reference) with a null reference', async () => {
    const object = { ...(await refundObject('succeeded')), metadata: {} };
    expect(parse(fake.eventBody('refund.updated', object))).toMatchObject({ reference: null });
  });

  it('reads charge.dispute.created with amount, currency, payment, reason and due date', () => {
    const disputeId = fake.addDispute(paymentId, 'needs_response', 4_000);
    const body = fake.eventBody('charge.dispute.created', fake.disputeObject(disputeId));
    expect(parse(body)).toEqual({
      kind: 'dispute',
      id: JSON.parse(body).id,
      change: 'created',
      disputeId,
      paymentId,
      amount: 4_000n,
      currency: 'USD',
      reason: 'fraudulent',
      status: 'needs_response',
      evidenceDueBy: new Date(1_800_000_000 * 1000).toISOString(),
    });
    expect(adapter.parseEvent(body, signed(body))).toBeNull();
  });

  it.each([
    ['charge.dispute.closed', 'won', 'won'],
    ['charge.dispute.closed', 'lost', 'lost'],
    ['charge.dispute.closed', 'warning_closed', 'won'],
    ['charge.dispute.updated', 'under_review', 'under_review'],
  ] as const)('reads %s of a %s dispute as %s', (type, status, expected) => {
    const disputeId = fake.addDispute(paymentId, status);
    const body = fake.eventBody(type, fake.disputeObject(disputeId));
    expect(parse(body)).toMatchObject({
      kind: 'dispute',
      change: type.slice('charge.dispute.'.length),
      disputeId,
      status: expected,
    });
    expect(adapter.parseEvent(body, signed(body))).toBeNull();
  });

  it('takes a dispute without a due date, or with an expanded PaymentIntent', () => {
    const disputeId = fake.addDispute(paymentId, 'needs_response');
    const object = fake.disputeObject(disputeId);
    const body = fake.eventBody('charge.dispute.created', {
      ...object,
      payment_intent: { id: paymentId, object: 'payment_intent' },
      evidence_details: { ...object.evidence_details, due_by: null },
    });
    expect(parse(body)).toMatchObject({ paymentId, evidenceDueBy: null });
  });

  it('is null for a bad signature, another secret, a tampered body or no header', async () => {
    const body = fake.eventBody('refund.updated', await refundObject('succeeded'));
    expect(parse(body)).not.toBeNull();
    expect(adapter.parseCaseEvent(body, signed(body, 'whsec_another'))).toBeNull();
    expect(adapter.parseCaseEvent(body, { [STRIPE_SIGNATURE_HEADER]: 't=1,v1=00' })).toBeNull();
    expect(adapter.parseCaseEvent(body.replace('succeeded', 'failed'), signed(body))).toBeNull();
    expect(adapter.parseCaseEvent(body, {})).toBeNull();
  });

  it('is null for an unrelated event, and the payment events are left to parseEvent', () => {
    const customer = fake.eventBody('customer.created', { id: 'cus_1', object: 'customer' });
    expect(parse(customer)).toBeNull();
    const intent = fake.eventBody('payment_intent.succeeded', {
      id: 'pi_1',
      object: 'payment_intent',
      status: 'succeeded',
      metadata: { reference: 'r' },
    });
    expect(parse(intent)).toBeNull();
    expect(adapter.parseEvent(intent, signed(intent))).toMatchObject({ status: 'succeeded' });
  });

  it('is null, never an error, for a malformed refund object', async () => {
    const refund = await refundObject('succeeded');
    const malformed: Array<[string, unknown]> = [
      ['refund.updated', null],
      ['refund.updated', 'text'],
      ['refund.updated', { ...refund, id: 42 }],
      ['refund.updated', { ...refund, status: 'sideways' }],
      ['refund.updated', { ...refund, status: 'toString' }],
      ['refund.updated', { ...refund, object: 'charge' }],
    ];
    for (const [type, object] of malformed) {
      const body = fake.eventBody(type, object);
      expect([type, parse(body)]).toEqual([type, null]);
    }
    const noData = JSON.stringify({ id: 'evt_x', object: 'event', type: 'refund.updated' });
    expect(parse(noData)).toBeNull();
  });

  it('reads a malformed dispute object as unreadable, never an error, saying what', () => {
    const disputeId = fake.addDispute(paymentId, 'needs_response');
    const dispute = fake.disputeObject(disputeId);
    const malformed: Array<[string, unknown, string]> = [
      ['charge.dispute.created', { ...dispute, amount: '4000' }, 'amount 4000'],
      ['charge.dispute.created', { ...dispute, amount: 12.5 }, 'amount 12.5'],
      ['charge.dispute.created', { ...dispute, currency: 'eur' }, 'currency eur'],
      ['charge.dispute.created', { ...dispute, currency: 7 }, 'currency 7'],
      ['charge.dispute.created', { ...dispute, payment_intent: null }, 'no payment intent'],
      ['charge.dispute.created', { ...dispute, status: 'sideways' }, 'status sideways'],
    ];
    for (const [type, object, why] of malformed) {
      const body = fake.eventBody(type, object);
      expect(parse(body)).toMatchObject({
        kind: 'unreadable_dispute',
        change: 'created',
        disputeId,
        why,
      });
    }
    const noId = fake.eventBody('charge.dispute.closed', { ...dispute, id: undefined });
    expect(parse(noId)).toMatchObject({
      kind: 'unreadable_dispute',
      change: 'closed',
      disputeId: JSON.parse(noId).id,
      paymentId,
      why: 'no dispute id',
    });
    expect(parse(fake.eventBody('charge.dispute.created', null))).toBeNull();
  });

  it('subscribes to case events distinct from the payment events', () => {
    for (const type of STRIPE_CASE_EVENT_TYPES) {
      expect(STRIPE_CARD_EVENT_TYPES as readonly string[]).not.toContain(type);
    }
  });
});
