import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { WebhookVerificationError } from 'standardwebhooks';
import { z } from 'zod';
import { ensureWebhookRelay } from '../../src/activities/webhooks';
import { insertEvent } from '../../src/db/transaction-events';
import { listenForEvents } from '../../src/db/webhook-listener';
import { EVENT_TYPES } from '../../src/domain/events';
import { REFUSED_ADDRESS_ERROR } from '../../src/outbound/webhook-post';
import { webhookDeliveryId, webhookRelayId } from '../../src/workflows/ids';
import { maintenanceWorkflow } from '../../src/workflows/maintenance';
import { createTestApp } from '../support/engine';
import { clientFor, createFundedWallet, createUserWithWallet, transfer } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { onboardForPayouts } from '../support/payouts';
import { pollUntil, within } from '../support/wait';
import { startReceiver, verify, type Receiver, type Received } from '../support/webhook-receiver';
import { mockLookup } from '../support/dns';

/**
 * Webhook deliveries end to end: real money movements, the outbox relay, the delivery
 * workflows and a real merchant endpoint on loopback that verifies every request with the
 * `standardwebhooks` package. Only loopback addresses are ever contacted.
 */

const engine = useTestEngine({ env: { WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32' } });
const { app, api } = useTestApp(engine, {
  // A fee on every release, so the released event's application_fee is the record's.
  settings: { escrowFeeBps: 250, escrowFeeFixed: 10n },
});
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
});
// Each test subscribes for itself; what one leaves (a failure midway) must not reach the next.
afterEach(async () => {
  await engine.pool.query(
    sql.unsafe`DELETE FROM webhook_subscriptions WHERE application_id = ${app.id}`,
  );
  receiver.answer(() => 200);
});
// Deliveries wait for retries (seconds) and a worker restart.
jest.setTimeout(120_000);
afterAll(async () => receiver?.close());

const SUBSCRIPTIONS = '/api/v1/webhooks/subscriptions';
const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const SIMULATE = '/api/v1/testing/simulate-mobile-money-webhook';
const CASHOUT = '/api/v1/transactions/wallet/mobile-money-cashout';
const PAYOUT = '/api/v1/transactions/wallet/card-payout';

type Subscription = { id: string; secret: string };

async function subscribe(
  path: string,
  events: readonly string[],
  options: { is_active?: boolean; url?: string } = {},
): Promise<Subscription> {
  const res = await api.post(SUBSCRIPTIONS, {
    url: options.url ?? receiver.url(path),
    events,
    is_active: options.is_active ?? true,
  });
  expect(res.status).toBe(201);
  return res.body as Subscription;
}

const funded = async (minor = 100_000n): Promise<string> =>
  (await createFundedWallet(api, engine.pool, minor)).walletId;

/** A completed transfer between two new wallets; answers its id. */
async function newTransfer(amount = 1.25): Promise<string> {
  const to = (await createUserWithWallet(api)).walletId;
  return (await transfer(api, await funded(), to, amount)).id as string;
}

/** The outbox event of a payment, by kind. */
/** The event of `type` about `id`: a payment's, or a reconciliation run's or exception's. */
async function eventIdOf(id: string, type: string): Promise<string> {
  return engine.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM events WHERE type = ${type}
      AND (transaction_id = ${id} OR (transaction_id IS NULL AND data->>'id' = ${id}))`);
}

const forPayment = (path: string, type: string, transactionId: string) => (r: Received) =>
  r.path === path && r.payload?.type === type && r.payload?.data?.id === transactionId;

type Delivery = {
  subscription_id: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
};

async function deliveriesOf(eventId: string): Promise<Delivery[]> {
  const res = await api.get(`/api/v1/events/${eventId}`);
  expect(res.status).toBe(200);
  return res.body.deliveries as Delivery[];
}

/** Waits until the event's delivery to `subscriptionId` satisfies `done`. */
async function waitForDelivery(
  eventId: string,
  subscriptionId: string,
  done: (d: Delivery) => boolean,
  timeoutMs = 30_000,
): Promise<Delivery> {
  const found = await pollUntil(
    async () => (await deliveriesOf(eventId)).find((d) => d.subscription_id === subscriptionId),
    (d) => d !== undefined && done(d),
    { timeoutMs, intervalMs: 50 },
  );
  if (!found || !done(found)) throw new Error(`delivery not done: ${JSON.stringify(found)}`);
  return found;
}

async function attemptsOf(eventId: string, subscriptionId: string) {
  return engine.pool.any(sql.type(
    z.object({
      attempt: z.number(),
      status_code: z.number().nullable(),
      error: z.string().nullable(),
      attempted_at: z.string(),
    }),
  )`
    SELECT attempt, status_code, error, attempted_at FROM webhook_delivery_attempts
    WHERE event_id = ${eventId} AND subscription_id = ${subscriptionId} ORDER BY attempt`);
}

/** A mobile-money cashout the sandbox then settles `successful` or `failed`. */
async function cashout(outcome: 'successful' | 'failed'): Promise<string> {
  const res = await api.post(CASHOUT, {
    wallet_id: await funded(),
    amount: 2_000,
    phone_number: '+23276123456',
  });
  expect(res.status).toBe(200);
  const settled = await api.post(SIMULATE, { transaction_id: res.body.id, status: outcome });
  expect(settled.body.status).toBe(outcome === 'successful' ? 'completed' : 'failed');
  return res.body.id as string;
}

/**
 * A card payout from a wallet whose owner is onboarded (verified at once, a debit card): the
 * sandbox pays it at once, or, for exactly 40.40, accepts it and then fails it.
 */
async function cardPayout(amount: number): Promise<string> {
  const walletId = await funded();
  const onboarded = await onboardForPayouts(api, walletId);
  expect(onboarded.status).toBe(200);
  const res = await api.post(PAYOUT, { wallet_id: walletId, amount });
  expect(res.status).toBe(200);
  return res.body.id as string;
}

/** A refund of a card deposit: refunded at once, or (`pm_card_refundFails`) failed a moment later. */
async function cardRefund(method: string): Promise<string> {
  const { walletId } = await createUserWithWallet(api);
  const deposit = await api.post('/api/v1/transactions/wallet/card-deposit', {
    wallet_id: walletId,
    amount: 20,
    payment_method_id: method,
  });
  expect(deposit.body.status).toBe('completed');
  const res = await api.post(`/api/v1/transactions/${deposit.body.id}/refund`, { amount: 5 });
  expect(res.status).toBe(200);
  return res.body.id as string;
}

/**
 * A dispute of a card deposit, decided `outcome` (null: left open): answers the dispute's id,
 * which its events name (its `dispute_reserve` record has it).
 */
async function dispute(outcome: 'won' | 'lost' | null): Promise<string> {
  const { walletId } = await createUserWithWallet(api);
  const deposit = await api.post('/api/v1/transactions/wallet/card-deposit', {
    wallet_id: walletId,
    amount: 20,
    payment_method_id: 'pm_card_visa',
  });
  expect(deposit.body.status).toBe('completed');
  const opened = await api.post('/api/v1/testing/simulate-dispute', {
    transaction_id: deposit.body.id,
  });
  expect(opened.status).toBe(200);
  if (outcome) {
    const closed = await api.post('/api/v1/testing/simulate-dispute-outcome', {
      dispute_id: opened.body.id,
      status: outcome,
    });
    expect(closed.body.status).toBe(outcome);
  }
  return opened.body.id as string;
}

/** A completed card deposit whose sandbox record then says one cent more, and a run over it. */
async function reconciled(): Promise<{ depositId: string; runId: string }> {
  const from = new Date(Date.now() - 60_000).toISOString();
  const { walletId } = await createUserWithWallet(api);
  const deposit = await api.post('/api/v1/transactions/wallet/card-deposit', {
    wallet_id: walletId,
    amount: 20,
    payment_method_id: 'pm_card_visa',
  });
  expect(deposit.body.status).toBe('completed');
  const depositId = deposit.body.id as string;
  const simulated = await api.post('/api/v1/testing/simulate-provider-discrepancy', {
    transaction_id: depositId,
    kind: 'amount',
  });
  expect(simulated.status).toBe(200);
  const run = await api.post('/api/v1/reconciliation/runs', {
    provider: 'card',
    from,
    to: new Date().toISOString(),
  });
  expect(run.status).toBe(202);
  const runId = run.body.id as string;
  // Read from the database: the reconciliation routes' rate limit is small.
  await pollUntil(
    () =>
      engine.pool.oneFirst(sql.type(z.object({ status: z.string() }))`
        SELECT status FROM recon_runs WHERE id = ${runId}`),
    (status) => status !== 'running',
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  return { depositId, runId };
}

/** The open exception a run found about `depositId`. */
const exceptionOf = (depositId: string) =>
  engine.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM recon_exceptions WHERE transaction_id = ${depositId}`);

/**
 * Every event kind of docs/api.md and how to make its money movement: each answers the
 * transaction id of the payment the event must speak of.
 */
const MOVEMENTS: Record<string, () => Promise<string>> = {
  'transfer.completed': () => newTransfer(2.5),
  'escrow.held': async () => {
    const res = await api.post('/api/v1/escrow/hold', { wallet_id: await funded(), amount: 30 });
    expect(res.status).toBe(200);
    return res.body.id as string;
  },
  'escrow.released': async () => {
    const hold = await api.post('/api/v1/escrow/hold', { wallet_id: await funded(), amount: 12 });
    const recipient = (await createUserWithWallet(api)).walletId;
    const res = await api.post(`/api/v1/escrow/${hold.body.id}/release`, {
      recipient_wallet_id: recipient,
    });
    expect(res.status).toBe(200);
    return res.body.id as string;
  },
  'escrow.refunded': async () => {
    const hold = await api.post('/api/v1/escrow/hold', { wallet_id: await funded(), amount: 7 });
    const res = await api.post(`/api/v1/escrow/${hold.body.id}/refund`);
    expect(res.status).toBe(200);
    return res.body.id as string;
  },
  'deposit.completed': async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, { wallet_id: walletId, amount: 5_000 });
    const paid = await api.post(SIMULATE, {
      transaction_id: res.body.transaction_id,
      status: 'successful',
    });
    expect(paid.body.status).toBe('completed');
    return res.body.transaction_id as string;
  },
  'deposit.failed': async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, { wallet_id: walletId, amount: 700 });
    const failed = await api.post(SIMULATE, {
      transaction_id: res.body.transaction_id,
      status: 'failed',
    });
    expect(failed.body.status).toBe('failed');
    return res.body.transaction_id as string;
  },
  'cashout.completed': () => cashout('successful'),
  'cashout.failed': () => cashout('failed'),
  'payout.completed': () => cardPayout(25),
  'payout.failed': () => cardPayout(40.4),
  'dispute.created': () => dispute(null),
  'dispute.won': () => dispute('won'),
  'dispute.lost': () => dispute('lost'),
  'refund.completed': () => cardRefund('pm_card_visa'),
  'refund.failed': () => cardRefund('pm_card_refundFails'),
  'payment.contradicted': async () => {
    const id = await cashout('successful');
    // The provider's books later say the paid payout failed: it contradicts the engine.
    await engine.pool.query(sql.unsafe`
      UPDATE sandbox_mobile_money_payouts SET status = 'failed' WHERE reference = ${id}`);
    const told = await api.post(SIMULATE, { transaction_id: id, status: 'failed' });
    expect(told.body.status).toBe('completed');
    return id;
  },
  // A batch's event speaks of the batch (`data.id`), once its last item has ended.
  'batch.completed': async () => {
    const to = (await createUserWithWallet(api)).walletId;
    const made = await api.post(
      '/api/v1/batches',
      {
        kind: 'transfer',
        items: [{ from_wallet_id: await funded(), to_wallet_id: to, amount: 3 }],
      },
      { 'Idempotency-Key': randomUUID() },
    );
    expect(made.status).toBe(202);
    const id = made.body.id as string;
    const ended = await pollUntil(
      () => api.get(`/api/v1/batches/${id}`),
      (res) => res.body.status !== 'processing',
    );
    expect(ended.body).toMatchObject({ status: 'completed', succeeded: 1 });
    return id;
  },
  // A reconciliation event speaks of its run or exception (`data.id`), not of a payment.
  'reconciliation.run.completed': async () => (await reconciled()).runId,
  'reconciliation.exception.opened': async () => exceptionOf((await reconciled()).depositId),
  'reconciliation.exception.resolved': async () => {
    const id = await exceptionOf((await reconciled()).depositId);
    const res = await api.post(`/api/v1/reconciliation/exceptions/${id}/resolve`, {
      action: 'accept',
      note: 'Known: the sandbox was told to book one cent more',
    });
    expect(res.status).toBe(200);
    return id;
  },
  'reconciliation.exception.stale': async () => {
    const { depositId } = await reconciled();
    const id = await exceptionOf(depositId);
    // The run starts its exceptions' timers once it is completed: until the timer waits, the
    // advance is refused and changes nothing.
    const advanced = await pollUntil(
      () =>
        api.post('/api/v1/testing/advance-time', { transaction_id: depositId, seconds: 72 * 3600 }),
      (res) => res.status !== 400,
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(advanced.status).toBe(200);
    return id;
  },
};

describe('webhook deliveries', () => {
  it('covers every event kind: each is moved here', () => {
    expect(Object.keys(MOVEMENTS).sort()).toEqual([...EVENT_TYPES].sort());
  });

  it.each(Object.keys(MOVEMENTS))(
    'delivers %s for its money movement, signed so that standardwebhooks verifies it',
    async (type) => {
      const path = `/kinds/${type}`;
      const sub = await subscribe(path, EVENT_TYPES);
      const transactionId = await MOVEMENTS[type]!();
      const request = await receiver.waitFor(forPayment(path, type, transactionId));

      expect(verify(sub.secret, request)).toEqual(request.payload);
      const eventId = await eventIdOf(transactionId, type);
      expect(Object.keys(request.payload!).sort()).toEqual([
        'created_at',
        'data',
        'id',
        'mode',
        'type',
      ]);
      expect(request.payload).toMatchObject({ id: eventId, type, mode: 'test' });
      expect(request.headers['webhook-id']).toBe(eventId);
      expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(request.headers['content-type']).toBe('application/json');
      const record = type.startsWith('reconciliation.')
        ? null
        : await api.get(
            type.startsWith('dispute.')
              ? `/api/v1/disputes/${transactionId}`
              : type.startsWith('batch.')
                ? `/api/v1/batches/${transactionId}`
                : `/api/v1/transactions/${transactionId}`,
          );
      if (type.startsWith('batch.')) {
        // The Batch, ended, as the API answers it.
        expect(request.payload!.data).toEqual(record!.body);
      } else if (record === null) {
        // A Run or an Exception, as the reconciliation API answers it.
        expect(request.payload!.data).toMatchObject({
          id: transactionId,
          status: expect.any(String),
        });
      } else if (type.startsWith('dispute.')) {
        // The Dispute, as it was when its money moved.
        const { updated_at: _updated, status: _status, ...stable } = record.body;
        const status =
          type === 'dispute.created' ? 'needs_response' : type.slice('dispute.'.length);
        expect(request.payload!.data).toMatchObject({ ...stable, status });
      } else if (type.startsWith('deposit.')) {
        // A deposit's figures are SLE cents (docs/api.md), the record's as the deposit shows it.
        expect(request.payload!.data).toMatchObject({
          id: transactionId,
          status: record.body.status,
        });
      } else {
        // The Transaction record, amounts in the base currency's major units (its status and
        // updated_at as they were when the money moved).
        const { updated_at: _updated, status: _status, ...stable } = record.body;
        expect(request.payload!.data).toMatchObject(stable);
      }

      const delivery = await waitForDelivery(eventId, sub.id, (d) => d.status === 'delivered');
      expect(delivery).toEqual({
        subscription_id: sub.id,
        status: 'delivered',
        attempts: 1,
        last_status_code: 200,
        last_error: null,
        next_attempt_at: null,
        delivered_at: expect.any(String),
        history: [
          {
            attempted_at: expect.any(String),
            status_code: 200,
            duration_ms: expect.any(Number),
            error: null,
          },
        ],
      });
      expect(await attemptsOf(eventId, sub.id)).toEqual([
        { attempt: 1, status_code: 200, error: null, attempted_at: expect.any(String) },
      ]);
      // Once per subscription: one workflow, named after the pair.
      const handle = engine.temporal.workflow.getHandle(webhookDeliveryId(eventId, sub.id));
      expect(await handle.result()).toMatchObject({ status: 'delivered', attempts: 1 });
      expect(receiver.received.filter(forPayment(path, type, transactionId))).toHaveLength(1);
      await api.request('DELETE', `${SUBSCRIPTIONS}/${sub.id}`);
    },
  );

  it('keeps the secret on PATCH and rotates it when the subscription is recreated', async () => {
    const first = await subscribe('/rotate-a', ['transfer.completed']);
    const one = await newTransfer();
    const a = await receiver.waitFor(forPayment('/rotate-a', 'transfer.completed', one));
    expect(verify(first.secret, a)).toEqual(a.payload);

    const edited = await api.request('PATCH', `${SUBSCRIPTIONS}/${first.id}`, {
      body: { url: receiver.url('/rotate-b') },
    });
    expect(edited.status).toBe(200);
    const two = await newTransfer();
    const b = await receiver.waitFor(forPayment('/rotate-b', 'transfer.completed', two));
    expect(verify(first.secret, b)).toEqual(b.payload);

    expect((await api.request('DELETE', `${SUBSCRIPTIONS}/${first.id}`)).status).toBe(200);
    const second = await subscribe('/rotate-b', ['transfer.completed']);
    expect(second.secret).not.toBe(first.secret);
    const three = await newTransfer();
    const c = await receiver.waitFor(forPayment('/rotate-b', 'transfer.completed', three));
    expect(verify(second.secret, c)).toEqual(c.payload);
    expect(() => verify(first.secret, c)).toThrow(WebhookVerificationError);
    // The deleted subscription gets nothing of the third payment.
    const eventId = await eventIdOf(three, 'transfer.completed');
    expect((await deliveriesOf(eventId)).map((d) => d.subscription_id)).toEqual([second.id]);
    await api.request('DELETE', `${SUBSCRIPTIONS}/${second.id}`);
  });

  it('sends nothing to an inactive subscription, or to one of another kind', async () => {
    const inactive = await subscribe('/inactive', ['transfer.completed'], { is_active: false });
    const otherKind = await subscribe('/other-kind', ['escrow.held']);
    const active = await subscribe('/active', ['transfer.completed']);
    const id = await newTransfer();
    await receiver.waitFor(forPayment('/active', 'transfer.completed', id));
    const eventId = await eventIdOf(id, 'transfer.completed');
    await waitForDelivery(eventId, active.id, (d) => d.status === 'delivered');
    expect((await deliveriesOf(eventId)).map((d) => d.subscription_id)).toEqual([active.id]);
    expect(receiver.received.filter((r) => ['/inactive', '/other-kind'].includes(r.path))).toEqual(
      [],
    );
    for (const sub of [inactive, otherKind, active]) {
      await api.request('DELETE', `${SUBSCRIPTIONS}/${sub.id}`);
    }
  });

  it('retries a failing endpoint, then stops when the subscription is disabled meanwhile', async () => {
    receiver.answer((r) => (r.path === '/flaky' ? 503 : 200));
    const sub = await subscribe('/flaky', ['transfer.completed']);
    const id = await newTransfer();
    const eventId = await eventIdOf(id, 'transfer.completed');
    const pending = await waitForDelivery(eventId, sub.id, (d) => d.attempts >= 1);
    expect(pending).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_status_code: 503,
      last_error: 'http_status',
      delivered_at: null,
    });
    // The next attempt is due 5 seconds after the first (the retry schedule's first step).
    const [first] = await attemptsOf(eventId, sub.id);
    const due = Date.parse(pending.next_attempt_at!) - Date.parse(first!.attempted_at);
    expect(due).toBeGreaterThanOrEqual(4_900);
    expect(due).toBeLessThanOrEqual(6_000);

    const disabled = await api.request('PATCH', `${SUBSCRIPTIONS}/${sub.id}`, {
      body: { is_active: false },
    });
    expect(disabled.status).toBe(200);
    const handle = engine.temporal.workflow.getHandle(webhookDeliveryId(eventId, sub.id));
    expect(await handle.result()).toMatchObject({ status: 'stopped', attempts: 1 });
    expect((await deliveriesOf(eventId))[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error: 'Subscription disabled',
      next_attempt_at: null,
    });
    expect(receiver.received.filter((r) => r.path === '/flaky')).toHaveLength(1);
    receiver.answer(() => 200);
  });

  it('never contacts a URL that resolves to a refused address at delivery time', async () => {
    // A listening endpoint on another loopback address the allowlist does not cover.
    const internal = await startReceiver('127.0.0.2');
    // `rebind.test` answered public at subscription time; now it answers the internal address.
    const spy = mockLookup((host) =>
      host === 'rebind.test' ? [{ address: '127.0.0.2', family: 4 }] : undefined,
    );
    try {
      const byName = await subscribe('/rebind', ['transfer.completed']);
      const byLiteral = await subscribe('/literal', ['transfer.completed']);
      await engine.pool.query(sql.unsafe`
        UPDATE webhook_subscriptions SET url = ${`http://rebind.test:${internal.port}/hook`}
        WHERE id = ${byName.id}`);
      await engine.pool.query(sql.unsafe`
        UPDATE webhook_subscriptions SET url = ${internal.url('/hook')} WHERE id = ${byLiteral.id}`);
      const id = await newTransfer();
      const eventId = await eventIdOf(id, 'transfer.completed');
      for (const sub of [byName, byLiteral]) {
        const refused = await waitForDelivery(eventId, sub.id, (d) => d.attempts >= 1);
        expect(refused).toMatchObject({
          status: 'pending',
          last_status_code: null,
          last_error: REFUSED_ADDRESS_ERROR,
        });
        await api.request('DELETE', `${SUBSCRIPTIONS}/${sub.id}`);
      }
      expect(internal.connections()).toBe(0);
      expect(internal.received).toEqual([]);
      expect(spy).toHaveBeenCalledWith('rebind.test', expect.anything(), expect.any(Function));
    } finally {
      spy.mockRestore();
      await internal.close();
    }
  });
});

describe('the worker stopped while deliveries are pending', () => {
  it('delivers every event after a restart: duplicates allowed, none lost', async () => {
    let down = true;
    receiver.answer((r) => (r.path === '/kill' && down ? 503 : 200));
    const sub = await subscribe('/kill', ['transfer.completed']);
    const before = await Promise.all([newTransfer(), newTransfer(), newTransfer()]);
    const eventIds = await Promise.all(before.map((id) => eventIdOf(id, 'transfer.completed')));
    for (const eventId of eventIds) {
      await waitForDelivery(eventId, sub.id, (d) => d.attempts >= 1);
    }
    await engine.stopWorker();
    // Movements committed while no worker runs: events the relay has not seen yet.
    const wallet = await funded();
    for (let i = 0; i < 3; i += 1) {
      eventIds.push(
        await insertEvent(engine.pool, {
          applicationId: app.id,
          mode: 'test',
          type: 'transfer.completed',
          transactionId: null,
          data: { id: `offline-${i}`, wallet_id: wallet },
        }),
      );
    }
    down = false;
    await engine.startWorker();
    for (const eventId of eventIds) {
      const request = await receiver.waitFor(
        (r) => r.path === '/kill' && r.payload?.id === eventId && r.payload?.type !== undefined,
        60_000,
      );
      expect(verify(sub.secret, request)).toEqual(request.payload);
      await waitForDelivery(eventId, sub.id, (d) => d.status === 'delivered', 60_000);
    }
  });
});

describe('the outbox relay', () => {
  it('runs from the worker start-up, and the maintenance workflow starts it again once stopped', async () => {
    const relayId = webhookRelayId(engine.config.temporal.webhookTaskQueue);
    const relay = engine.temporal.workflow.getHandle(relayId);
    expect((await relay.describe()).status.name).toBe('RUNNING');
    await relay.terminate('operator stopped it');
    expect((await relay.describe()).status.name).toBe('TERMINATED');

    await engine.temporal.workflow.execute(maintenanceWorkflow, {
      workflowId: `maintenance-${randomUUID()}`,
      taskQueue: engine.config.temporal.maintenanceTaskQueue,
    });
    const again = await engine.temporal.workflow.getHandle(relayId).describe();
    expect(again.status.name).toBe('RUNNING');
    // And it relays: an event written now is delivered.
    const sub = await subscribe('/after-restart', ['transfer.completed']);
    const id = await newTransfer();
    const request = await receiver.waitFor(forPayment('/after-restart', 'transfer.completed', id));
    expect(verify(sub.secret, request)).toEqual(request.payload);
  });

  it('moves a relay still running on the money queue to the webhook queue, and relays from there', async () => {
    const { taskQueue, webhookTaskQueue } = engine.config.temporal;
    const relayId = webhookRelayId(webhookTaskQueue);
    await engine.temporal.workflow.getHandle(relayId).terminate('the test starts it elsewhere');
    const old = await engine.temporal.workflow.start('webhookRelayWorkflow', {
      workflowId: relayId,
      taskQueue,
    });

    await ensureWebhookRelay(engine.temporal, webhookTaskQueue);
    const oldRun = engine.temporal.workflow.getHandle(relayId, old.firstExecutionRunId);
    expect((await oldRun.describe()).status.name).toBe('TERMINATED');
    const moved = await engine.temporal.workflow.getHandle(relayId).describe();
    expect(moved).toMatchObject({ status: { name: 'RUNNING' }, taskQueue: webhookTaskQueue });
    // Once more: the relay on its queue is left running, not replaced.
    await ensureWebhookRelay(engine.temporal, webhookTaskQueue);
    expect((await engine.temporal.workflow.getHandle(relayId).describe()).runId).toBe(moved.runId);
    const sub = await subscribe('/moved-relay', ['transfer.completed']);
    const id = await newTransfer();
    const request = await receiver.waitFor(forPayment('/moved-relay', 'transfer.completed', id));
    expect(verify(sub.secret, request)).toEqual(request.payload);
    const delivery = await engine.temporal.workflow
      .getHandle(webhookDeliveryId(request.payload!.id, sub.id))
      .describe();
    expect(delivery.taskQueue).toBe(webhookTaskQueue);
  });

  it('an event no subscription selects is written relayed, without waking the relay; a selected one is left to it', async () => {
    const relayedOf = (eventId: string) =>
      engine.pool.one(sql.type(z.object({ relayed: z.boolean(), at_write: z.boolean() }))`
        SELECT relayed_at IS NOT NULL AS relayed, relayed_at = created_at AS at_write
        FROM events WHERE id = ${eventId}`);
    const databaseUrl = engine.config.database.url;
    if (!databaseUrl) throw new Error('the test engine has no database URL');
    const listener = await listenForEvents(databaseUrl);
    try {
      // Only a subscription of another kind, and an inactive one: nothing selects the event.
      const other = await subscribe('/unselected-other', ['escrow.held']);
      const inactive = await subscribe('/unselected-off', ['transfer.completed'], {
        is_active: false,
      });
      await listener.wait(0); // forget what came before
      const unselected = await eventIdOf(await newTransfer(), 'transfer.completed');
      expect(await relayedOf(unselected)).toEqual({ relayed: true, at_write: true });
      expect(await deliveriesOf(unselected)).toEqual([]);
      const woken = await within(
        listener.wait(1_000).then(() => 'notified'),
        900,
        'silent',
      );
      expect(woken).toBe('silent');

      const sub = await subscribe('/selected', ['transfer.completed']);
      const id = await newTransfer();
      const selected = await eventIdOf(id, 'transfer.completed');
      await receiver.waitFor(forPayment('/selected', 'transfer.completed', id));
      // Relayed by the relay, after the write: it started the delivery.
      expect(await relayedOf(selected)).toEqual({ relayed: true, at_write: false });
      expect((await deliveriesOf(selected)).map((d) => d.subscription_id)).toEqual([sub.id]);
      expect(receiver.received.filter((r) => r.path.startsWith('/unselected'))).toEqual([]);
      for (const s of [other, inactive, sub])
        await api.request('DELETE', `${SUBSCRIPTIONS}/${s.id}`);
    } finally {
      await listener.close();
    }
  });
});

describe('GET /api/v1/events', () => {
  it('lists the caller’s events in the page envelope, filtered by type; 403 for another’s', async () => {
    const id = await newTransfer();
    const eventId = await eventIdOf(id, 'transfer.completed');
    const page = await api.get<{ data: { id: string; type: string }[] }>(
      '/api/v1/events?type=transfer.completed&per_page=100',
    );
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ page: 1, per_page: 100, total: expect.any(Number) });
    expect(page.body.data.every((e) => e.type === 'transfer.completed')).toBe(true);
    expect(page.body.data.map((e) => e.id)).toContain(eventId);
    const one = await api.get(`/api/v1/events/${eventId}`);
    expect(one.body).toEqual({
      id: eventId,
      type: 'transfer.completed',
      created_at: expect.any(String),
      mode: 'test',
      data: expect.objectContaining({ id, amount: 1.25 }),
      deliveries: expect.any(Array),
    });

    const forbidden = { detail: 'You do not have permission to access this event' };
    const other = clientFor(engine.url, await createTestApp(engine.pool));
    const otherApp = await other.get(`/api/v1/events/${eventId}`);
    expect(otherApp).toMatchObject({ status: 403, body: forbidden });
    expect((await other.get('/api/v1/events')).body).toMatchObject({ data: [], total: 0 });
    const live = clientFor(engine.url, app, 'live');
    const otherMode = await live.get(`/api/v1/events/${eventId}`);
    expect(otherMode).toMatchObject({ status: 403, body: forbidden });
    expect(await api.get(`/api/v1/events/${randomUUID()}`)).toMatchObject({
      status: 404,
      body: { detail: 'Event not found' },
    });
    expect((await api.get('/api/v1/events/not-a-uuid')).body).toEqual({
      detail: 'Event not found',
    });
    expect((await api.get('/api/v1/events?type=nothing.happened')).status).toBe(422);
  });
});
