import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { listReconciliationRuns } from '../../src/db/reconciliation';
import { signMonimeNotification } from '../../src/providers/monime';
import { reconciliationWorkflow } from '../../src/workflows/reconciliation';
import { workflowIds } from '../../src/workflows/ids';
import {
  assertLedgerInvariant,
  balanceOf,
  eventsOf,
  ledgerTransactionCount,
} from '../support/database';
import type { TestApp, TestEngine } from '../support/engine';
import { sandboxWebhookSecret } from '../../src/crypto/secret-box';
import type { FakeMonimeServer } from '../support/fake-monime';
import { clientFor, createUserWithWallet, type ApiClient } from '../support/http';
import { startMonimeEngine } from '../support/live-monime';

/**
 * Inbound notifications that heal themselves, end to end: the real API, worker and
 * Temporal, the live adapter against the fake Monime server, which echoes the metadata the
 * engine sent (our transaction id) in its signed notifications as Monime does.
 */

const SECRET = 'live-webhook-secret-for-healing-tests';
const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const WEBHOOK = '/api/v1/webhooks/providers/mobile-money';
// Real servers on a shared machine: jest's 5-second default is too tight under load.
jest.setTimeout(60_000);

let monime: FakeMonimeServer;
let engine: TestEngine;
let app: TestApp;
let live: ApiClient;

beforeAll(async () => {
  ({ monime, engine, app, live } = await startMonimeEngine(SECRET, { MONIME_TIMEOUT_MS: '300' }));
});
afterAll(async () => {
  await engine?.close();
  await monime?.close();
});

/** Sends the fake's signed notification about a payment code, as Monime would. */
function notify(codeId: string) {
  const note = monime.notificationFor(codeId);
  return clientFor(engine.url, null).request('POST', WEBHOOK, {
    raw: note.rawBody,
    headers: note.headers,
  });
}

/** The payment code the fake created for a deposit of `amount` SLE cents (unique per test). */
function codeFor(amount: number) {
  return monime.codes.find(
    (c) => (c.metadata as { deposit_amount?: string }).deposit_amount === String(amount),
  );
}

const notificationsOf = (codeId: string) =>
  engine.pool.any(sql.type(
    z.object({ outcome: z.string(), transaction_id: z.string().nullable(), attempts: z.number() }),
  )`
    SELECT outcome, transaction_id, attempts FROM provider_notifications
    WHERE payment_reference = ${codeId} ORDER BY received_at`);

const transactionRow = (id: string) =>
  engine.pool.maybeOne(
    sql.type(
      z.object({ status: z.string(), provider_reference: z.string().nullable() }),
    )`SELECT status, provider_reference FROM transactions WHERE id = ${id}`,
  );

describe('a notification for a payment whose creation call failed', () => {
  it('finds the deposit from the metadata, stores its reference and credits the wallet once', async () => {
    const { walletId } = await createUserWithWallet(live);
    // The provider creates the code but its answer is lost; the retry is refused: the
    // deposit's workflow gives up without ever learning the code.
    monime.failNext(1, 'timeout');
    monime.failNext(1, 400);
    const refused = await live.post(DEPOSIT, { wallet_id: walletId, amount: 4_321 });
    expect(refused.status).toBe(400);
    const code = codeFor(4_321)!;
    expect(code).toBeDefined();
    const transactionId = (code.metadata as { reference: string }).reference;
    expect(await transactionRow(transactionId)).toBeNull();
    const closed = await engine.temporal.workflow
      .getHandle(workflowIds.deposit(transactionId))
      .result();
    expect(closed).toBe('failed');

    // The payer paid the code all the same; Monime's notification carries our metadata.
    monime.markCompleted(code.id);
    const delivered = await notify(code.id);
    expect(delivered.status).toBe(200);
    expect(delivered.body).toEqual({
      received: true,
      transaction_id: transactionId,
      status: 'completed',
    });

    expect(await transactionRow(transactionId)).toEqual({
      status: 'completed',
      provider_reference: code.id,
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(4_321n);
    expect(await ledgerTransactionCount(engine.pool, transactionId)).toBe(1);
    expect((await eventsOf(engine.pool, transactionId)).map((e) => e.type)).toEqual([
      'deposit.completed',
    ]);
    // The same idempotency key answered the same code: the provider holds one code.
    expect(monime.codesFor(workflowIds.deposit(transactionId))).toHaveLength(1);
    expect(await notificationsOf(code.id)).toEqual([
      { outcome: 'matched', transaction_id: transactionId, attempts: 1 },
    ]);

    // Sent again: nothing moves twice.
    const again = await notify(code.id);
    expect(again.body).toMatchObject({ transaction_id: transactionId, status: 'completed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(4_321n);
    expect(await ledgerTransactionCount(engine.pool, transactionId)).toBe(1);
    await assertLedgerInvariant(engine.pool);
  });
});

describe('a notification that matches no payment yet', () => {
  it('is kept and answered 200, then matched by the reconciliation once the payment exists', async () => {
    const { walletId } = await createUserWithWallet(live);
    // The code is created on the first attempt, whose answer is lost; the next two attempts
    // time out too: the deposit has no record while its workflow retries.
    monime.failNext(3, 'timeout');
    const opening = live.post(DEPOSIT, { wallet_id: walletId, amount: 6_123 });
    let code = codeFor(6_123);
    while (!code) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      code = codeFor(6_123);
    }
    const transactionId = (code.metadata as { reference: string }).reference;
    monime.markCompleted(code.id);
    const early = await notify(code.id);
    expect(early.status).toBe(200);
    expect(early.body).toEqual({ received: true, transaction_id: null, status: null });
    expect(await notificationsOf(code.id)).toEqual([
      { outcome: 'unmatched', transaction_id: null, attempts: 1 },
    ]);

    const opened = await opening;
    expect(opened.status).toBe(200);
    expect(opened.body.transaction_id).toBe(transactionId);
    expect(await transactionRow(transactionId)).toEqual({
      status: 'pending',
      provider_reference: code.id,
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);

    // A grace period of an hour: the deposit itself is not synced; the kept notification is.
    const workflowId = `reconciliation-test-${randomUUID()}`;
    const result = await engine.temporal.workflow.execute(reconciliationWorkflow, {
      workflowId,
      taskQueue: engine.config.temporal.taskQueue,
      args: [{ graceSeconds: 3600 }],
    });
    expect(result.changes.map((c) => c.transaction_id)).not.toContain(transactionId);
    expect(result.notificationsMatched).toBeGreaterThanOrEqual(1);

    expect(await notificationsOf(code.id)).toEqual([
      { outcome: 'matched', transaction_id: transactionId, attempts: 2 },
    ]);
    expect(await transactionRow(transactionId)).toMatchObject({ status: 'completed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(6_123n);
    expect(await ledgerTransactionCount(engine.pool, transactionId)).toBe(1);
    expect((await eventsOf(engine.pool, transactionId)).map((e) => e.type)).toEqual([
      'deposit.completed',
    ]);
    const runs = await listReconciliationRuns(engine.pool);
    expect(runs.find((r) => r.workflow_id === workflowId)).toMatchObject({
      notifications_matched: result.notificationsMatched,
    });

    // Matched notifications are not retried again.
    const next = await engine.temporal.workflow.execute(reconciliationWorkflow, {
      workflowId: `reconciliation-test-${randomUUID()}`,
      taskQueue: engine.config.temporal.taskQueue,
      args: [{ graceSeconds: 3600 }],
    });
    expect(next.notificationsMatched).toBe(0);
    expect((await notificationsOf(code.id))[0]!.attempts).toBe(2);
    await assertLedgerInvariant(engine.pool);
  });

  it('keeps a notification naming no payment at all, answered 200, and moves nothing', async () => {
    const body = JSON.stringify({
      event: 'payment_code.completed',
      data: { id: `pmc-unknown-${randomUUID()}`, status: 'completed', metadata: {} },
    });
    const reply = await clientFor(engine.url, null).request('POST', WEBHOOK, {
      raw: body,
      headers: {
        'content-type': 'application/json',
        'monime-signature': signMonimeNotification(SECRET, body),
      },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ received: true, transaction_id: null, status: null });
    const id = (JSON.parse(body) as { data: { id: string } }).data.id;
    expect(await notificationsOf(id)).toEqual([
      { outcome: 'unmatched', transaction_id: null, attempts: 1 },
    ]);
  });
});

describe('duplicate and out-of-order notifications', () => {
  it('settle a deposit once: processing, completed twice, then a late failed change nothing more', async () => {
    const { walletId } = await createUserWithWallet(live);
    const res = await live.post(DEPOSIT, { wallet_id: walletId, amount: 2_500 });
    expect(res.status).toBe(200);
    const transactionId = res.body.transaction_id as string;
    const codeId = res.body.payment_code.result.id as string;

    monime.setStatus(codeId, 'processing');
    const processing = await notify(codeId);
    expect(processing.body).toEqual({
      received: true,
      transaction_id: transactionId,
      status: 'pending',
    });

    monime.markCompleted(codeId);
    const completed = await notify(codeId);
    const duplicate = await notify(codeId);
    expect(completed.body.status).toBe('completed');
    expect(duplicate.body.status).toBe('completed');

    // Out of order: a failure reported after the completion.
    monime.markFailed(codeId);
    const late = await notify(codeId);
    expect(late.status).toBe(200);
    expect(late.body).toEqual({
      received: true,
      transaction_id: transactionId,
      status: 'completed',
    });

    expect(await balanceOf(engine.pool, walletId)).toBe(2_500n);
    expect(await ledgerTransactionCount(engine.pool, transactionId)).toBe(1);
    // The provider's books now say failed: nothing moves, but the contradiction is sent.
    expect((await eventsOf(engine.pool, transactionId)).map((e) => e.type)).toEqual([
      'deposit.completed',
      'payment.contradicted',
    ]);
    expect((await live.get(`/api/v1/transactions/${transactionId}`)).body.status).toBe('completed');
    expect((await notificationsOf(codeId)).map((n) => n.outcome)).toEqual([
      'matched',
      'matched',
      'matched',
      'matched',
    ]);
    await assertLedgerInvariant(engine.pool);
  });

  it('a failed notification first fails the deposit; a late completed one credits nothing', async () => {
    const { walletId } = await createUserWithWallet(live);
    const res = await live.post(DEPOSIT, { wallet_id: walletId, amount: 3_100 });
    const transactionId = res.body.transaction_id as string;
    const codeId = res.body.payment_code.result.id as string;
    monime.markFailed(codeId);
    expect((await notify(codeId)).body.status).toBe('failed');
    monime.markCompleted(codeId);
    expect((await notify(codeId)).body.status).toBe('failed');
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect(await ledgerTransactionCount(engine.pool, transactionId)).toBe(0);
    // Paid at the provider after the deposit failed: kept and sent, never credited.
    const events = await eventsOf(engine.pool, transactionId);
    expect(events.map((e) => e.type)).toEqual(['deposit.failed', 'payment.contradicted']);
    expect(events[1]!.data).toMatchObject({
      id: transactionId,
      status: 'failed',
      provider: { status: 'completed', amount: expect.any(Number) },
    });
  });
});

describe('card provider events (Test Mode sandbox), through the same path', () => {
  const CARD_WEBHOOK = '/api/v1/webhooks/providers/card';

  /** An event signed by the sandbox card provider, as it would send it. */
  function cardEvent(paymentId: string, status: string, type: string, reference: string) {
    const body = JSON.stringify({
      id: `evt_${paymentId}_${status}_${randomUUID()}`,
      type,
      data: { object: { id: paymentId, status, metadata: { reference } } },
    });
    return clientFor(engine.url, null).request('POST', CARD_WEBHOOK, {
      raw: body,
      headers: {
        'content-type': 'application/json',
        'sandbox-signature': signMonimeNotification(sandboxWebhookSecret(engine.config), body),
      },
    });
  }

  it('a failure reported after the charge, and the charge again, change nothing', async () => {
    const testApi = clientFor(engine.url, app, 'test');
    const { walletId } = await createUserWithWallet(testApi);
    const res = await testApi.post('/api/v1/transactions/wallet/card-deposit', {
      wallet_id: walletId,
      amount: 100,
      payment_method_id: 'pm_card_visa',
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    const transactionId = res.body.id as string;
    const paymentId = res.body.provider_reference as string;
    const credited = await balanceOf(engine.pool, walletId);
    expect(credited).toBeGreaterThan(0n);

    const late = await cardEvent(
      paymentId,
      'failed',
      'payment_intent.payment_failed',
      transactionId,
    );
    expect(late.status).toBe(200);
    expect(late.body).toEqual({
      received: true,
      transaction_id: transactionId,
      status: 'completed',
    });
    const again = await cardEvent(
      paymentId,
      'succeeded',
      'payment_intent.succeeded',
      transactionId,
    );
    expect(again.body).toEqual({
      received: true,
      transaction_id: transactionId,
      status: 'completed',
    });

    expect(await balanceOf(engine.pool, walletId)).toBe(credited);
    expect(await ledgerTransactionCount(engine.pool, transactionId)).toBe(1);
    expect((await eventsOf(engine.pool, transactionId)).map((e) => e.type)).toEqual([
      'deposit.completed',
    ]);
    expect((await notificationsOf(paymentId)).map((n) => n.outcome)).toEqual([
      'matched',
      'matched',
    ]);
  });

  it('keeps an event about a payment no deposit knows, answered 200', async () => {
    const paymentId = `pi_unknown_${randomUUID().replace(/-/g, '')}`;
    const reply = await cardEvent(paymentId, 'succeeded', 'payment_intent.succeeded', randomUUID());
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ received: true, transaction_id: null, status: null });
    expect(await notificationsOf(paymentId)).toEqual([
      { outcome: 'unmatched', transaction_id: null, attempts: 1 },
    ]);
  });
});
