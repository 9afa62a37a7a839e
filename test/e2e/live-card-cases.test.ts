import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import Stripe from 'stripe';
import { insertTransaction } from '../../src/db/transactions';
import {
  assertLedgerInvariant,
  balanceOf,
  eventsOf,
  ledgerLegs,
  systemBalance,
} from '../support/database';
import { clientFor, createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { LOCALSTRIPE_CARDS, startLocalstripe, type Localstripe } from '../support/localstripe';
import { increase, scrape, series } from '../support/metrics';

/**
 * Stripe's refund and dispute events, signed with the `stripe` package's test header, through the
 * card webhook into src/intake/card-cases.ts. The disputed deposits are real ones charged through
 * localstripe, which sends no refund or dispute events: the test sends them in Stripe's JSON.
 */

const WEBHOOK_SECRET = 'whsec_live_card_cases_test';
const DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const WEBHOOK = '/api/v1/webhooks/providers/card';

let localstripe: Localstripe;
beforeAll(async () => {
  localstripe = await startLocalstripe();
  await localstripe.reset();
});
const engine = useTestEngine(() => ({
  env: { ...localstripe.env(WEBHOOK_SECRET), API_METRICS_PORT: '0' },
}));
const { app, live } = useTestApp(engine, { currency: 'USD' });
afterAll(async () => localstripe?.stop());

let eventCount = 0;
function eventBody(type: string, object: unknown): string {
  eventCount += 1;
  return JSON.stringify({
    id: `evt_cases_${eventCount}`,
    object: 'event',
    api_version: Stripe.API_VERSION,
    created: Math.floor(Date.now() / 1000),
    livemode: true,
    type,
    data: { object },
  });
}

const refund = (id: string, status: string, reference: string | null) => ({
  id,
  object: 'refund',
  amount: 500,
  currency: 'usd',
  payment_intent: 'pi_refunded',
  status,
  metadata: reference ? { reference } : {},
});

const dispute = (id: string, paymentIntent: string, status: string, amount = 2_000) => ({
  id,
  object: 'dispute',
  amount,
  currency: 'usd',
  charge: 'ch_disputed',
  payment_intent: paymentIntent,
  reason: 'product_not_received',
  status,
  evidence_details: { due_by: 1_800_000_000, has_evidence: false, submission_count: 0 },
});

function post(body: string, secret = WEBHOOK_SECRET) {
  const signature = new Stripe('sk_test_any').webhooks.generateTestHeaderString({
    payload: body,
    secret,
  });
  return clientFor(engine.url, null).request('POST', WEBHOOK, {
    raw: body,
    headers: { 'stripe-signature': signature },
  });
}

const notificationsFor = (paymentReference: string) =>
  engine.pool.any(sql.unsafe`
    SELECT kind, mode, status, reference, transaction_id, outcome
    FROM provider_notifications WHERE payment_reference = ${paymentReference}
    ORDER BY received_at`);

/** A Live Mode card deposit charged through localstripe: its id and PaymentIntent id. */
async function liveDeposit(amount: number) {
  const { walletId } = await createUserWithWallet(live);
  const pm = await localstripe.createCard(LOCALSTRIPE_CARDS.succeeds);
  const res = await live.post(DEPOSIT, { wallet_id: walletId, amount, payment_method_id: pm });
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('completed');
  return {
    id: res.body.id as string,
    paymentIntent: res.body.provider_reference as string,
    walletId,
  };
}

describe('refund events', () => {
  it('refuses a bad signature (400) and keeps nothing', async () => {
    const body = eventBody('refund.updated', refund('re_badsig', 'succeeded', null));
    const res = await post(body, 'whsec_someone_else');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'Invalid event signature' });
    expect(await notificationsFor('re_badsig')).toEqual([]);
  });

  it('answers 200 to a signed event of a type it does not act on, and keeps nothing', async () => {
    for (const body of [
      eventBody('customer.created', { id: 'cus_unread', object: 'customer' }),
      eventBody('charge.dispute.funds_withdrawn', dispute('dp_unread', 'pi_x', 'needs_response')),
      // One it reads, but whose object lacks what the engine needs.
      eventBody('refund.updated', { id: 're_unread', object: 'refund', status: 'sideways' }),
    ]) {
      const res = await post(body);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true, transaction_id: null, status: null });
    }
    for (const reference of ['cus_unread', 'dp_unread', 're_unread']) {
      expect(await notificationsFor(reference)).toEqual([]);
    }
  });

  it('keeps an outcome for a refund it does not know as unmatched and answers 200', async () => {
    const reference = 'a1b2c3d4-0000-4000-8000-00000000beef';
    for (const [type, status, expected] of [
      ['refund.updated', 'succeeded', 'completed'],
      ['refund.failed', 'failed', 'failed'],
      ['charge.refund.updated', 'succeeded', 'completed'],
    ] as const) {
      const id = `re_unknown_${type.replace(/\./g, '_')}`;
      const res = await post(eventBody(type, refund(id, status, reference)));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true, transaction_id: null, status: null });
      expect(await notificationsFor(id)).toEqual([
        {
          kind: 'refund',
          mode: 'live',
          status: expected,
          reference,
          transaction_id: null,
          outcome: 'unmatched',
        },
      ]);
    }
  });

  it('keeps a pending refund only (ignored): it says nothing new', async () => {
    const res = await post(eventBody('refund.created', refund('re_pending', 'pending', null)));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, transaction_id: null, status: null });
    expect(await notificationsFor('re_pending')).toEqual([
      expect.objectContaining({ kind: 'refund', status: 'pending', outcome: 'ignored' }),
    ]);
  });

  it('never takes a refund event for a deposit: its reference names no refund', async () => {
    const deposit = await liveDeposit(12);
    const res = await post(eventBody('refund.updated', refund('re_wrong', 'failed', deposit.id)));
    expect(res.status).toBe(200);
    expect(res.body.transaction_id).toBeNull();
    expect((await notificationsFor('re_wrong'))[0]).toMatchObject({ outcome: 'unmatched' });
    expect((await live.get(`/api/v1/transactions/${deposit.id}`)).body.status).toBe('completed');
    expect(await balanceOf(engine.pool, deposit.walletId)).toBe(1_200n);
  });
});

describe('refund events reaching a refund record', () => {
  // The refund saga is not written yet: its record is inserted as the saga writes it (pending,
  // with Stripe's refund id once Stripe answered), so that the lookup is what is tested. With
  // no `refund-<id>` workflow running, the answer is the record's own status.
  async function refundRecord(mode: 'test' | 'live', providerReference: string | null) {
    const deposit = await liveDeposit(9);
    const row = await insertTransaction(engine.pool, {
      id: randomUUID(),
      applicationId: app.id,
      mode,
      type: 'card_refund',
      status: 'pending',
      currency: 'USD',
      amount: 400n,
      walletId: deposit.walletId,
      providerReference,
      parentId: deposit.id,
    });
    return row.id;
  }

  const statusOf = async (id: string) =>
    engine.pool.oneFirst(sql.unsafe`SELECT status FROM transactions WHERE id = ${id}`);

  it('finds our refund by Stripe’s refund id and hands it on (matched)', async () => {
    const id = await refundRecord('live', 're_ours');
    const res = await post(eventBody('refund.updated', refund('re_ours', 'succeeded', null)));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, transaction_id: id, status: 'pending' });
    expect(await notificationsFor('re_ours')).toEqual([
      {
        kind: 'refund',
        mode: 'live',
        status: 'completed',
        reference: null,
        transaction_id: id,
        outcome: 'matched',
      },
    ]);
  });

  it('keeps one whose refund id is not stored yet unmatched, for the reconciliation', async () => {
    const id = await refundRecord('live', null);
    const res = await post(eventBody('refund.failed', refund('re_not_stored', 'failed', id)));
    expect(res.status).toBe(200);
    expect(res.body.transaction_id).toBeNull();
    expect((await notificationsFor('re_not_stored'))[0]).toMatchObject({
      status: 'failed',
      reference: id,
      outcome: 'unmatched',
    });
  });

  /** The error lines logged about a provider reference. */
  const loggedAbout = (paymentReference: string) =>
    engine.logs
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.paymentReference === paymentReference);

  it('keeps one about a Test Mode refund unapplied, counted and logged: Stripe speaks for Live Mode only', async () => {
    const id = await refundRecord('test', 're_test_mode');
    const metricsBefore = await scrape(engine.metricsUrl!);
    const res = await post(eventBody('refund.updated', refund('re_test_mode', 'succeeded', null)));
    expect(res.status).toBe(200);
    expect(res.body.transaction_id).toBeNull();
    expect((await notificationsFor('re_test_mode'))[0]).toMatchObject({
      outcome: 'unapplied',
      transaction_id: id,
    });
    expect(await statusOf(id)).toBe('pending');
    const counted = series('provider_events_unapplied_total', {
      kind: 'refund',
      reason: 'other_mode',
    });
    expect(increase(metricsBefore, await scrape(engine.metricsUrl!), counted)).toBe(1);
    expect(loggedAbout('re_test_mode')).toEqual([
      expect.objectContaining({ level: 50, kind: 'refund', reason: 'other_mode' }),
    ]);
  });

  it('keeps one naming our refund under another Stripe refund id unapplied, counted and logged', async () => {
    const id = await refundRecord('live', 're_first');
    const metricsBefore = await scrape(engine.metricsUrl!);
    const res = await post(eventBody('refund.updated', refund('re_second', 'succeeded', id)));
    expect(res.status).toBe(200);
    expect(res.body.transaction_id).toBeNull();
    expect(await notificationsFor('re_second')).toEqual([
      expect.objectContaining({ reference: id, transaction_id: id, outcome: 'unapplied' }),
    ]);
    expect(await statusOf(id)).toBe('pending');
    const counted = series('provider_events_unapplied_total', {
      kind: 'refund',
      reason: 'other_payment',
    });
    expect(increase(metricsBefore, await scrape(engine.metricsUrl!), counted)).toBe(1);
    expect(loggedAbout('re_second')).toEqual([
      expect.objectContaining({ level: 50, kind: 'refund', reason: 'other_payment' }),
    ]);
  });
});

describe('dispute events', () => {
  /** Our Live Mode disputes of a deposit, as the API lists them. */
  const disputesOf = async (depositId: string) => {
    const res = await live.get(`/api/v1/disputes?transaction_id=${depositId}`);
    expect(res.status).toBe(200);
    return res.body.data as Array<Record<string, unknown>>;
  };

  it('opens the dispute on our Live Mode deposit found by its PaymentIntent, once', async () => {
    const deposit = await liveDeposit(20);
    const body = eventBody(
      'charge.dispute.created',
      dispute('dp_open', deposit.paymentIntent, 'needs_response', 1_500),
    );
    const res = await post(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      received: true,
      transaction_id: deposit.id,
      status: 'needs_response',
    });
    // A repeated event answers the same dispute and reserves nothing more.
    const again = await post(
      eventBody(
        'charge.dispute.created',
        dispute('dp_open', deposit.paymentIntent, 'needs_response', 1_500),
      ),
    );
    expect(again.body).toEqual(res.body);
    const [opened, ...more] = await disputesOf(deposit.id);
    expect(more).toEqual([]);
    expect(opened).toMatchObject({
      transaction_id: deposit.id,
      wallet_id: deposit.walletId,
      amount: 15,
      reserved_amount: 15,
      uncovered_amount: 0,
      reason: 'product_not_received',
      status: 'needs_response',
      evidence_due_by: new Date(1_800_000_000 * 1000).toISOString(),
    });
    expect(await balanceOf(engine.pool, deposit.walletId)).toBe(5_00n);
    expect(await notificationsFor('dp_open')).toContainEqual({
      kind: 'dispute',
      mode: 'live',
      status: 'needs_response',
      reference: deposit.paymentIntent,
      transaction_id: deposit.id,
      outcome: 'matched',
    });
    await assertLedgerInvariant(engine.pool);
  });

  it('closes it as won (the reserve back to the wallet) or lost; an update changes nothing', async () => {
    for (const status of ['won', 'lost'] as const) {
      const deposit = await liveDeposit(20);
      const id = `dp_${status}`;
      await post(
        eventBody('charge.dispute.created', dispute(id, deposit.paymentIntent, 'needs_response')),
      );
      const updated = await post(
        eventBody('charge.dispute.updated', dispute(id, deposit.paymentIntent, 'under_review')),
      );
      expect(updated.status).toBe(200);
      expect(updated.body).toEqual({ received: true, transaction_id: null, status: null });
      expect((await disputesOf(deposit.id))[0]).toMatchObject({ status: 'needs_response' });
      expect(await balanceOf(engine.pool, deposit.walletId)).toBe(0n);

      const res = await post(
        eventBody('charge.dispute.closed', dispute(id, deposit.paymentIntent, status)),
      );
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ received: true, transaction_id: deposit.id, status });
      expect((await disputesOf(deposit.id))[0]).toMatchObject({ status, reserved_amount: 20 });
      expect(await balanceOf(engine.pool, deposit.walletId)).toBe(status === 'won' ? 20_00n : 0n);
    }
    await assertLedgerInvariant(engine.pool);
  });

  it('opens a full chargeback (more than was credited): reserves the credit, the rest uncovered', async () => {
    const deposit = await liveDeposit(20);
    const reserveBefore = await systemBalance(
      engine.pool,
      app.id,
      'dispute_reserve',
      'USD',
      'live',
    );
    // The whole charge: the 20.00 credited and 0.89 of fees the payer paid.
    const res = await post(
      eventBody(
        'charge.dispute.created',
        dispute('dp_full', deposit.paymentIntent, 'needs_response', 20_89),
      ),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      received: true,
      transaction_id: deposit.id,
      status: 'needs_response',
    });
    const [opened, ...more] = await disputesOf(deposit.id);
    expect(more).toEqual([]);
    expect(opened).toMatchObject({
      transaction_id: deposit.id,
      wallet_id: deposit.walletId,
      amount: 20.89,
      reserved_amount: 20,
      uncovered_amount: 0.89,
      status: 'needs_response',
    });
    const id = opened!.id as string;
    expect(await balanceOf(engine.pool, deposit.walletId)).toBe(0n);
    expect(await systemBalance(engine.pool, app.id, 'dispute_reserve', 'USD', 'live')).toBe(
      reserveBefore + 20_00n,
    );
    expect(await ledgerLegs(engine.pool, id)).toEqual([{ step: 'reserve', legs: 2 }]);
    expect(await eventsOf(engine.pool, id)).toEqual([
      { type: 'dispute.created', data: expect.objectContaining({ amount: 20.89 }) },
    ]);
    expect((await live.get(`/api/v1/transactions/${id}`)).body).toMatchObject({
      transaction_type: 'dispute_reserve',
      status: 'completed',
      amount: 20,
    });
    expect((await notificationsFor('dp_full'))[0]).toMatchObject({ outcome: 'matched' });
    await assertLedgerInvariant(engine.pool);

    // Lost: the reserve goes to the provider; the uncovered part stays recorded.
    const closed = await post(
      eventBody('charge.dispute.closed', dispute('dp_full', deposit.paymentIntent, 'lost', 20_89)),
    );
    expect(closed.body).toEqual({ received: true, transaction_id: deposit.id, status: 'lost' });
    expect((await disputesOf(deposit.id))[0]).toMatchObject({
      status: 'lost',
      reserved_amount: 20,
      uncovered_amount: 0.89,
    });
    expect(await balanceOf(engine.pool, deposit.walletId)).toBe(0n);
  });

  it('reserves what the wallet still holds of a full chargeback, the rest uncovered', async () => {
    const deposit = await liveDeposit(20);
    const { walletId: elsewhere } = await createUserWithWallet(live);
    const moved = await live.post('/api/v1/transactions/wallet/transfer', {
      from_wallet_id: deposit.walletId,
      to_wallet_id: elsewhere,
      amount: 15,
    });
    expect(moved.status).toBe(200);
    const res = await post(
      eventBody(
        'charge.dispute.created',
        dispute('dp_spent', deposit.paymentIntent, 'needs_response', 20_89),
      ),
    );
    expect(res.body.status).toBe('needs_response');
    expect((await disputesOf(deposit.id))[0]).toMatchObject({
      amount: 20.89,
      reserved_amount: 5,
      uncovered_amount: 15.89,
    });
    expect(await balanceOf(engine.pool, deposit.walletId)).toBe(0n);
    await assertLedgerInvariant(engine.pool);
  });

  it('keeps a close of a dispute it does not know for an operator (unapplied), counted and logged', async () => {
    const deposit = await liveDeposit(20);
    const metricsBefore = await scrape(engine.metricsUrl!);
    const res = await post(
      eventBody('charge.dispute.closed', dispute('dp_unknown', deposit.paymentIntent, 'won')),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, transaction_id: null, status: null });
    expect((await notificationsFor('dp_unknown'))[0]).toMatchObject({
      outcome: 'unapplied',
      transaction_id: deposit.id,
    });
    expect(await balanceOf(engine.pool, deposit.walletId)).toBe(20_00n);
    const counted = series('provider_events_unapplied_total', {
      kind: 'dispute',
      reason: 'unknown_dispute',
    });
    expect(increase(metricsBefore, await scrape(engine.metricsUrl!), counted)).toBe(1);
    const logged = engine.logs
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.dispute === 'dp_unknown');
    expect(logged).toEqual([
      expect.objectContaining({ level: 50, reason: 'unknown_dispute', transactionId: deposit.id }),
    ]);
  });

  it('keeps a dispute about a payment not one of our deposits, or another currency, unapplied', async () => {
    const deposit = await liveDeposit(20);
    const metricsBefore = await scrape(engine.metricsUrl!);
    const stranger = await post(
      eventBody('charge.dispute.created', dispute('dp_stranger', 'pi_not_ours', 'needs_response')),
    );
    expect(stranger.status).toBe(200);
    expect(stranger.body).toEqual({ received: true, transaction_id: null, status: null });
    const leones = await post(
      eventBody('charge.dispute.created', {
        ...dispute('dp_sle', deposit.paymentIntent, 'needs_response'),
        currency: 'sle',
      }),
    );
    expect(leones.status).toBe(200);
    expect(leones.body.transaction_id).toBeNull();
    expect(await disputesOf(deposit.id)).toEqual([]);
    expect((await notificationsFor('dp_stranger'))[0]).toMatchObject({ outcome: 'unapplied' });
    expect((await notificationsFor('dp_sle'))[0]).toMatchObject({ outcome: 'unapplied' });
    expect(await balanceOf(engine.pool, deposit.walletId)).toBe(20_00n);
    const counted = series('provider_events_unapplied_total', {
      kind: 'dispute',
      reason: 'not_our_deposit',
    });
    expect(increase(metricsBefore, await scrape(engine.metricsUrl!), counted)).toBe(2);
  });

  it('keeps a dispute opening it cannot read (a currency it does not know) unapplied, counted and logged', async () => {
    const deposit = await liveDeposit(20);
    const metricsBefore = await scrape(engine.metricsUrl!);
    const res = await post(
      eventBody('charge.dispute.created', {
        ...dispute('dp_euros', deposit.paymentIntent, 'needs_response'),
        currency: 'eur',
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, transaction_id: null, status: null });
    expect(await notificationsFor('dp_euros')).toEqual([
      {
        kind: 'dispute',
        mode: 'live',
        status: 'needs_response',
        reference: deposit.paymentIntent,
        transaction_id: null,
        outcome: 'unapplied',
      },
    ]);
    expect(await disputesOf(deposit.id)).toEqual([]);
    expect(await balanceOf(engine.pool, deposit.walletId)).toBe(20_00n);
    const counted = series('provider_events_unapplied_total', {
      kind: 'dispute',
      reason: 'unreadable',
    });
    expect(increase(metricsBefore, await scrape(engine.metricsUrl!), counted)).toBe(1);
    const logged = engine.logs
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.dispute === 'dp_euros');
    expect(logged).toEqual([expect.objectContaining({ level: 50, reason: 'unreadable' })]);
  });
});
