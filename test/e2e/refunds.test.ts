import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { randomUUID } from 'node:crypto';
import { insertTransaction } from '../../src/db/transactions';
import { setWalletActive } from '../../src/db/wallets';
import { paymentSyncs } from '../../src/intake/notifications';
import { workflowIds } from '../../src/workflows/ids';
import { moneyOutUpdates } from '../../src/workflows/money-out-shared';
import {
  assertLedgerInvariant,
  balanceOf,
  eventsOf as eventsOfPayment,
  fundWallet,
  ledgerLegs,
  systemBalance,
  writtenFor,
} from '../support/database';
import { createTestApp } from '../support/engine';
import { clientFor, createUserWithWallet, type ApiClient } from '../support/http';
import { awaitRoomInWindow } from '../support/rate-limit';
import { reply, useWalletClient } from '../support/client';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { app, api, live } = useTestApp(engine, {
  currency: 'USD',
  settings: { feeBps: { card: 150 } },
});
const client = useWalletClient(engine, app);
const { api: other } = useTestApp(engine, { currency: 'USD' });

const DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const refundOf = (id: string) => `/api/v1/transactions/${id}/refund`;

const NOT_A_DEPOSIT = { detail: 'Only a completed card deposit can be refunded' };
const EXCEEDS = { detail: 'Refund amount exceeds the refundable amount' };

const eventsOf = (transactionId: string) => eventsOfPayment(engine.pool, transactionId);
const providerClearing = () => systemBalance(engine.pool, app.id, 'provider_clearing_card', 'USD');
const sagaOf = (id: string) => engine.temporal.workflow.getHandle(workflowIds.refund(id));

/** A wallet credited `amount` by a completed card deposit paid with `method`. */
async function deposited(amount: number, method = 'pm_card_visa', client: ApiClient = api) {
  const { walletId } = await createUserWithWallet(client);
  const res = await client.post(DEPOSIT, {
    wallet_id: walletId,
    amount,
    payment_method_id: method,
  });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: 'completed', amount_refunded: 0 });
  return { walletId, depositId: res.body.id as string, paymentId: res.body.provider_reference };
}

/** The sandbox's refunds of a card payment. */
const sandboxRefunds = (paymentId: string) =>
  engine.pool.any(sql.type(
    z.object({ id: z.string(), amount: z.bigint(), status: z.string(), reference: z.string() }),
  )`
    SELECT id, amount, status, reference FROM sandbox_card_refunds
    WHERE payment_id = ${paymentId} ORDER BY created_at`);

/**
 * Whether the payment's event was written by the database transaction of its ledger `step`:
 * both read that transaction's `now()`, which no other transaction shares.
 */
const writtenTogether = (id: string, step: string) =>
  engine.pool.oneFirst(sql.type(z.object({ same: z.boolean() }))`
    SELECT (SELECT created_at FROM events WHERE transaction_id = ${id})
      = (SELECT created_at FROM ledger_transactions
         WHERE transaction_id = ${id} AND metadata->>'step' = ${step}) AS same`);

/** Every refund row of a deposit (none written by a decline). */
const refundRows = (depositId: string) =>
  engine.pool.any(sql.type(z.object({ id: z.string(), status: z.string(), amount: z.bigint() }))`
    SELECT id, status, amount FROM transactions
    WHERE parent_id = ${depositId} AND transaction_type = 'card_refund' ORDER BY created_at`);

describe('card refunds', () => {
  it('refunds a whole deposit: reserve, provider, settle, refund.completed; the deposit shows it', async () => {
    const { walletId, depositId, paymentId } = await deposited(100);
    const clearingBefore = await providerClearing();
    const res = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId } },
        body: {
          reason: 'requested_by_customer',
          metadata: { order: 'A-17' },
        },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      wallet_id: walletId,
      transaction_type: 'card_refund',
      status: 'completed',
      amount: 100,
      application_fee: 0,
      currency: 'USD',
      description: 'Card refund',
      source_transaction_id: depositId,
      provider_reference: expect.stringMatching(/^re_sandbox_/),
      reason: 'requested_by_customer',
      metadata: { order: 'A-17' },
    });
    const id = res.body.id as string;
    // The wallet pays back what it was credited; the fees stay paid.
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect((await providerClearing()) - clearingBefore).toBe(100_00n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([
      { step: 'reserve', legs: 2 },
      { step: 'settle', legs: 2 },
    ]);
    const events = await eventsOf(id);
    expect(events.map((e) => e.type)).toEqual(['refund.completed']);
    expect(events[0]!.data).toMatchObject({
      id,
      status: 'completed',
      amount: 100,
      source_transaction_id: depositId,
      provider_reference: res.body.provider_reference,
    });
    // The event was written by the settle's database transaction.
    expect(await writtenTogether(id, 'settle')).toBe(true);
    expect(await sandboxRefunds(paymentId)).toMatchObject([
      { id: res.body.provider_reference, amount: 100_00n, status: 'succeeded', reference: id },
    ]);
    expect(await sagaOf(id).result()).toBe('completed');

    const deposit = await reply(
      client.raw.GET('/api/v1/transactions/{transaction_id}', {
        params: { path: { transaction_id: depositId } },
      }),
    );
    expect(deposit.body).toMatchObject({ status: 'completed', amount_refunded: 100 });
    const refund = await reply(
      client.raw.GET('/api/v1/transactions/{transaction_id}', {
        params: { path: { transaction_id: id } },
      }),
    );
    expect(refund.body).toMatchObject({ status: 'completed', source_transaction_id: depositId });
    expect(refund.body).not.toHaveProperty('amount_refunded');
    const listed = await reply(
      client.raw.GET('/api/v1/transactions/', { params: { query: { wallet_id: walletId } } }),
    );
    expect(listed.body.data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: depositId, amount_refunded: 100 }),
        expect.objectContaining({ id, source_transaction_id: depositId }),
      ]),
    );
    const timeline = await reply(
      client.raw.GET('/api/v1/transactions/{transaction_id}/timeline', {
        params: { path: { transaction_id: id } },
      }),
    );
    expect(timeline.body).toMatchObject({
      workflow_id: workflowIds.refund(id),
      workflow_type: 'cardRefundWorkflow',
      status: 'completed',
    });
    expect(timeline.body.steps).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'sendMoneyOut',
          provider_reference: res.body.provider_reference,
        }),
      ]),
    );
    // The saga's three steps are local activities, all in the one workflow task.
    const steps = timeline.body.steps as { name: string; kind: string; status: string }[];
    expect(steps.filter((step) => step.kind === 'activity')).toEqual(
      ['reserveMoneyOut', 'sendMoneyOut', 'settleMoneyOut'].map((name) =>
        expect.objectContaining({ name, status: 'completed' }),
      ),
    );
    const history = (await sagaOf(id).fetchHistory()).events ?? [];
    expect(history.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(1);
    expect(history.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(0);
    expect(history.flatMap((e) => e.markerRecordedEventAttributes?.markerName ?? [])).toEqual([
      'core_local_activity',
      'core_local_activity',
      'core_local_activity',
    ]);
    // A fully refunded deposit stays completed; a further refund is more than is left.
    const again = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId } },
        body: {},
      }),
    );
    expect(again.status).toBe(400);
    expect(again.body).toEqual(EXCEEDS);
    await assertLedgerInvariant(engine.pool);
  });

  it('refunds in parts, then the rest; never more than was credited', async () => {
    const { walletId, depositId } = await deposited(50);
    await fundWallet(engine.pool, walletId, 100_00n);
    const part = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId } },
        body: { amount: 20.25 },
      }),
    );
    expect(part.status).toBe(200);
    expect(part.body).toMatchObject({ status: 'completed', amount: 20.25, reason: null });
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/transactions/{transaction_id}', {
            params: { path: { transaction_id: depositId } },
          }),
        )
      ).body.amount_refunded,
    ).toBe(20.25);
    const over = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId } },
        body: { amount: 29.76 },
      }),
    );
    expect(over.status).toBe(400);
    expect(over.body).toEqual(EXCEEDS);
    const rest = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId } },
        body: {},
      }),
    );
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({ status: 'completed', amount: 29.75 });
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/transactions/{transaction_id}', {
            params: { path: { transaction_id: depositId } },
          }),
        )
      ).body.amount_refunded,
    ).toBe(50);
    expect(await balanceOf(engine.pool, walletId)).toBe(100_00n);
    expect((await refundRows(depositId)).map((r) => r.amount)).toEqual([20_25n, 29_75n]);
    await assertLedgerInvariant(engine.pool);
  });

  it('pm_card_refundFails: accepted, then failed; the wallet gets the amount back within seconds', async () => {
    const { walletId, depositId, paymentId } = await deposited(30, 'pm_card_refundFails');
    const res = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId } },
        body: { amount: 10 },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'pending',
      amount: 10,
      provider_reference: expect.stringMatching(/^re_sandbox_/),
    });
    const id = res.body.id as string;
    expect(await balanceOf(engine.pool, walletId)).toBe(20_00n);
    // A pending refund counts as refunded.
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/transactions/{transaction_id}', {
            params: { path: { transaction_id: depositId } },
          }),
        )
      ).body.amount_refunded,
    ).toBe(10);
    const started = Date.now();
    expect(await sagaOf(id).result()).toBe('failed');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/transactions/{transaction_id}', {
            params: { path: { transaction_id: id } },
          }),
        )
      ).body,
    ).toMatchObject({
      id,
      status: 'failed',
      transaction_type: 'card_refund',
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(30_00n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([
      { step: 'reserve', legs: 2 },
      { step: 'give_back', legs: 2 },
    ]);
    const events = await eventsOf(id);
    expect(events.map((e) => e.type)).toEqual(['refund.failed']);
    expect(events[0]!.data).toMatchObject({ id, status: 'failed', amount: 10 });
    expect(await writtenTogether(id, 'give_back')).toBe(true);
    expect(await sandboxRefunds(paymentId)).toMatchObject([
      { id: res.body.provider_reference, status: 'failed' },
    ]);
    // A failed refund counts nothing: all of the deposit is refundable again.
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/transactions/{transaction_id}', {
            params: { path: { transaction_id: depositId } },
          }),
        )
      ).body.amount_refunded,
    ).toBe(0);
    await assertLedgerInvariant(engine.pool);
  });

  it('is synced with the provider like a payout (the sync endpoint, the reconciliation)', async () => {
    expect(paymentSyncs.card_refund).toEqual({ workflow: 'refund', sync: moneyOutUpdates.sync });
    const { walletId, depositId } = await deposited(20, 'pm_card_refundFails');
    const res = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId } },
        body: {},
      }),
    );
    expect(res.body).toMatchObject({ status: 'pending', amount: 20 });
    // Past the sandbox's moment: asked now, the provider says failed (if the saga has not
    // asked it first); either way the answer is the refund's status, the money back.
    await sleep(1_100);
    const synced = await reply(
      client.raw.POST('/api/v1/transactions/sync/{reference_id}', {
        params: { path: { reference_id: res.body.provider_reference } },
      }),
    );
    expect(synced.status).toBe(200);
    expect(synced.body).toMatchObject({ status: 'failed', transaction_id: res.body.id });
    expect(await balanceOf(engine.pool, walletId)).toBe(20_00n);
    await assertLedgerInvariant(engine.pool);
  });

  it('answers 400 for what is not a completed card deposit; nothing written', async () => {
    const { walletId } = await createUserWithWallet(api);
    const declined = await reply(
      client.raw.POST(DEPOSIT, {
        body: {
          wallet_id: walletId,
          amount: 10,
          payment_method_id: 'pm_card_chargeDeclined',
        },
      }),
    );
    expect(declined.status).toBe(400);
    const [failed] = (
      await reply(
        client.raw.GET('/api/v1/transactions/', { params: { query: { wallet_id: walletId } } }),
      )
    ).body.data;
    expect(failed).toMatchObject({ status: 'failed', transaction_type: 'card_deposit' });
    const pending = await reply(
      client.raw.POST(DEPOSIT, {
        body: {
          wallet_id: walletId,
          amount: 10,
          payment_method_id: 'pm_card_authenticationRequired',
        },
      }),
    );
    expect(pending.body).toMatchObject({ status: 'pending' });
    await fundWallet(engine.pool, walletId, 50_00n);
    const { walletId: to } = await createUserWithWallet(api);
    const transfer = await reply(
      client.raw.POST('/api/v1/transactions/wallet/transfer', {
        body: {
          from_wallet_id: walletId,
          to_wallet_id: to,
          amount: 5,
        },
      }),
    );
    expect(transfer.status).toBe(200);
    for (const id of [failed.id, pending.body.id, transfer.body.id]) {
      const res = await reply(
        client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
          params: { path: { transaction_id: id } },
          body: { amount: 1 },
        }),
      );
      expect(res.status).toBe(400);
      expect(res.body).toEqual(NOT_A_DEPOSIT);
      expect(await refundRows(id)).toEqual([]);
    }
  });

  it('answers 400 when the wallet spent the money; nothing written', async () => {
    const { walletId, depositId } = await deposited(40);
    const { walletId: to } = await createUserWithWallet(api);
    const spent = await reply(
      client.raw.POST('/api/v1/transactions/wallet/transfer', {
        body: {
          from_wallet_id: walletId,
          to_wallet_id: to,
          amount: 35,
        },
      }),
    );
    expect(spent.status).toBe(200);
    const res = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId }, header: { 'Idempotency-Key': 'spent-1' } },
        body: {},
      }),
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'Insufficient funds' });
    expect(await refundRows(depositId)).toEqual([]);
    expect(await balanceOf(engine.pool, walletId)).toBe(5_00n);
    // What it holds can still be refunded.
    const some = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId } },
        body: { amount: 5 },
      }),
    );
    expect(some.body).toMatchObject({ status: 'completed', amount: 5 });
  });

  it('answers 403 for a disabled wallet or another application’s deposit, 404 for none', async () => {
    const { walletId, depositId } = await deposited(10);
    await setWalletActive(engine.pool, walletId, false);
    const disabled = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId } },
        body: {},
      }),
    );
    expect(disabled.status).toBe(403);
    expect(disabled.body).toEqual({ detail: 'Wallet is disabled' });
    const foreign = await other.post(refundOf(depositId), {});
    expect(foreign.status).toBe(403);
    expect(foreign.body).toEqual({
      detail: 'You do not have permission to access this transaction',
    });
    for (const id of ['7d0c9a62-3f7e-4b7e-9d36-1f0a4a7c2b11', 'not-an-id']) {
      const missing = await reply(
        client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
          params: { path: { transaction_id: id } },
          body: {},
        }),
      );
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual({ detail: 'Transaction not found' });
    }
    expect(await refundRows(depositId)).toEqual([]);
  });

  it('validates the body: 422 for an amount not above 0 or an unknown reason', async () => {
    const { depositId } = await deposited(10);
    for (const body of [{ amount: 0 }, { amount: -1 }, { reason: 'because' }, { metadata: 3 }]) {
      // Some of these bodies the typed client cannot send: raw HTTP.
      const res = await api.post(refundOf(depositId), body);
      expect(res.status).toBe(422);
    }
    expect(await refundRows(depositId)).toEqual([]);
  });

  it('forgets a refund’s merchant metadata with its user', async () => {
    const { walletId, depositId } = await deposited(10);
    const res = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId } },
        body: { metadata: { email: 'payer@example.com' } },
      }),
    );
    expect(res.body).toMatchObject({
      status: 'completed',
      metadata: { email: 'payer@example.com' },
    });
    const { user_id: userId } = await engine.pool.one(sql.type(z.object({ user_id: z.string() }))`
        SELECT user_id FROM wallets WHERE id = ${walletId}`);
    expect(
      (
        await reply(
          client.raw.DELETE('/api/v1/users/{user_id}/', { params: { path: { user_id: userId } } }),
        )
      ).status,
    ).toBe(200);
    const kept = await engine.pool.oneFirst(sql.type(z.object({ metadata: z.any() }))`
      SELECT metadata FROM transactions WHERE id = ${res.body.id}`);
    expect(kept).not.toHaveProperty('metadata');
    expect(kept).toMatchObject({ kind: 'refund', amount: '1000' });
    const merchant = await engine.pool.oneFirst(sql.type(z.object({ m: z.any() }))`
      SELECT merchant_metadata AS m FROM transactions WHERE id = ${res.body.id}`);
    expect(merchant).toEqual({});
  });

  it('limits refunds to 5 a minute per credential by default (429)', async () => {
    const limited = await createTestApp(engine.pool, { rateLimits: null, currency: 'USD' });
    const client = clientFor(engine.url, limited);
    const { walletId, depositId } = await deposited(10, 'pm_card_visa', client);
    await awaitRoomInWindow(engine.pool);
    for (let i = 0; i < 5; i += 1) {
      expect((await client.post(refundOf(depositId), { amount: 1 })).status).toBe(200);
    }
    const sixth = await client.post(refundOf(depositId), { amount: 1 });
    expect(sixth.status).toBe(429);
    expect(sixth.headers.get('retry-after')).toEqual(expect.any(String));
    expect(await balanceOf(engine.pool, walletId)).toBe(5_00n);
  });

  it('answers 503 in Live Mode without the Stripe keys, writing nothing', async () => {
    const { walletId } = await createUserWithWallet(live);
    await fundWallet(engine.pool, walletId, 10_00n);
    // A Live Mode deposit as the Stripe adapter would have written it.
    const depositId = randomUUID();
    await insertTransaction(engine.pool, {
      id: depositId,
      applicationId: app.id,
      mode: 'live',
      type: 'card_deposit',
      status: 'completed',
      currency: 'USD',
      amount: 10_00n,
      walletId,
      providerReference: 'pi_live_unconfigured',
    });
    const res = await live.post(refundOf(depositId), {});
    expect(res.status).toBe(503);
    expect(res.body.detail).toMatch(/not configured/);
    expect(await refundRows(depositId)).toEqual([]);
    expect(await balanceOf(engine.pool, walletId)).toBe(10_00n);
  });

  it('answers a retried request with the same refund (Idempotency-Key)', async () => {
    const { walletId, depositId } = await deposited(10);
    const key = { 'Idempotency-Key': `refund-${depositId}` };
    const first = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId }, header: key },
        body: { amount: 4 },
      }),
    );
    const second = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId }, header: key },
        body: { amount: 4 },
      }),
    );
    expect(first.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(await refundRows(depositId)).toHaveLength(1);
    expect(await balanceOf(engine.pool, walletId)).toBe(6_00n);
    expect(await writtenFor(engine.pool, first.body.id)).toBe(1 + 2 + 1);
  });

  it('answers a retried refund of all that was left, its first answer never stored, with that refund', async () => {
    const { walletId, depositId } = await deposited(10);
    const key = `lost-${depositId}`;
    const first = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId }, header: { 'Idempotency-Key': key } },
        body: {},
      }),
    );
    expect(first.status).toBe(200);
    // As if the first request had died after the refund moved but before its answer was stored.
    await engine.pool.query(sql.unsafe`
      UPDATE idempotency_keys SET response_status = NULL, response_body = NULL WHERE key = ${key}`);
    const retry = await reply(
      client.raw.POST('/api/v1/transactions/{transaction_id}/refund', {
        params: { path: { transaction_id: depositId }, header: { 'Idempotency-Key': key } },
        body: {},
      }),
    );
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(first.body);
    expect(await refundRows(depositId)).toHaveLength(1);
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
  });
});
