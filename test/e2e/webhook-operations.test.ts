import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'slonik';
import { WebhookVerificationError } from 'standardwebhooks';
import { z } from 'zod';
import { createMaintenanceActivities } from '../../src/activities/maintenance';
import { TURNED_OFF } from '../../src/db/webhook-subscriptions';
import { REFUSED_ADDRESS_ERROR } from '../../src/outbound/webhook-post';
import { webhookDeliveryId } from '../../src/workflows/ids';
import { mockLookup } from '../support/dns';
import { createTestApp } from '../support/engine';
import { clientFor, createFundedWallet, createUserWithWallet, transfer } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { pollUntil } from '../support/wait';
import { startReceiver, verify, type Receiver, type Received } from '../support/webhook-receiver';

/**
 * Webhook operations (docs/api.md, Webhooks): redelivery, the test send, rotation with
 * an overlap, attempt histories and failing endpoints turned off, against a loopback receiver that
 * verifies with `standardwebhooks`. Only loopback addresses are ever contacted.
 */

const engine = useTestEngine({ env: { WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32' } });
const { app, api } = useTestApp(engine);
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterEach(async () => {
  await engine.pool.query(
    sql.unsafe`DELETE FROM webhook_subscriptions WHERE application_id = ${app.id}`,
  );
  receiver.answer(() => 200);
});
jest.setTimeout(120_000);
afterAll(async () => receiver?.close());

const SUBSCRIPTIONS = '/api/v1/webhooks/subscriptions';

type Subscription = { id: string; secret: string; url: string };
type Attempt = {
  attempted_at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
};
type Delivery = {
  subscription_id: string;
  status: string;
  attempts: number;
  last_error: string | null;
  history: Attempt[];
};

async function subscribe(path: string, events = ['transfer.completed']): Promise<Subscription> {
  const res = await api.post(SUBSCRIPTIONS, { url: receiver.url(path), events, is_active: true });
  expect(res.status).toBe(201);
  return res.body as Subscription;
}

/** A completed transfer's `transfer.completed` event id. */
async function newEvent(): Promise<string> {
  const from = (await createFundedWallet(api, engine.pool, 100_000n)).walletId;
  const to = (await createUserWithWallet(api)).walletId;
  const id = (await transfer(api, from, to, 1.25)).id as string;
  return engine.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM events WHERE transaction_id = ${id} AND type = 'transfer.completed'`);
}

async function deliveriesOf(eventId: string): Promise<Delivery[]> {
  const res = await api.get(`/api/v1/events/${eventId}`);
  expect(res.status).toBe(200);
  return res.body.deliveries as Delivery[];
}

/** Waits until the event has `count` deliveries to `subscriptionId` and all satisfy `done`. */
async function waitForDeliveries(
  eventId: string,
  subscriptionId: string,
  count: number,
  done: (d: Delivery) => boolean,
): Promise<Delivery[]> {
  const found = await pollUntil(
    async () => (await deliveriesOf(eventId)).filter((d) => d.subscription_id === subscriptionId),
    (ds) => ds.length === count && ds.every(done),
    { timeoutMs: 30_000, intervalMs: 50 },
  );
  if (!found || found.length !== count || !found.every(done)) {
    throw new Error(`deliveries not done: ${JSON.stringify(found)}`);
  }
  return found;
}

const deliveryCount = () =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
    WHERE e.application_id = ${app.id}`);

const arrivals = (path: string, eventId: string) =>
  receiver.received.filter((r) => r.path === path && r.payload?.id === eventId);

const accepts = (secret: string, request: Received) => {
  try {
    verify(secret, request);
    return true;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return false;
    throw error;
  }
};

describe('POST /api/v1/events/{event_id}/redeliver', () => {
  it('sends the event again to one subscription as a new delivery with its own attempts and workflow', async () => {
    const sub = await subscribe('/again');
    const eventId = await newEvent();
    await waitForDeliveries(eventId, sub.id, 1, (d) => d.status === 'delivered');

    const res = await api.post(`/api/v1/events/${eventId}/redeliver`, {
      subscription_id: sub.id,
    });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ id: eventId, type: 'transfer.completed', mode: 'test' });
    expect(res.body.deliveries).toHaveLength(2);
    expect(res.body.deliveries[1]).toMatchObject({ subscription_id: sub.id });

    const [original, again] = await waitForDeliveries(
      eventId,
      sub.id,
      2,
      (d) => d.status === 'delivered',
    );
    expect(original!.history).toHaveLength(1);
    expect(again).toMatchObject({ attempts: 1, last_error: null });
    expect(again!.history).toEqual([
      {
        attempted_at: expect.any(String),
        status_code: 200,
        duration_ms: expect.any(Number),
        error: null,
      },
    ]);
    // Its own workflow, beside the original's.
    const handle = engine.temporal.workflow.getHandle(webhookDeliveryId(eventId, sub.id, 1));
    expect(await handle.result()).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(webhookDeliveryId(eventId, sub.id, 1)).not.toBe(webhookDeliveryId(eventId, sub.id));
    const got = arrivals('/again', eventId);
    expect(got).toHaveLength(2);
    for (const r of got) expect(accepts(sub.secret, r)).toBe(true);
  });

  it('without a subscription, sends to every active one that selects the type, and no other', async () => {
    const a = await subscribe('/all-a');
    const b = await subscribe('/all-b');
    const eventId = await newEvent();
    await waitForDeliveries(eventId, a.id, 1, (d) => d.status === 'delivered');
    await waitForDeliveries(eventId, b.id, 1, (d) => d.status === 'delivered');
    await subscribe('/all-other', ['deposit.completed']);
    const off = await subscribe('/all-off');
    await api.request('PATCH', `${SUBSCRIPTIONS}/${off.id}`, { body: { is_active: false } });
    // Created after the event: the relay did not send it, a redelivery to all does.
    const later = await subscribe('/all-later');

    const res = await api.post(`/api/v1/events/${eventId}/redeliver`, {});
    expect(res.status).toBe(202);
    const targets = (res.body.deliveries as Delivery[]).map((d) => d.subscription_id);
    expect(targets.sort()).toEqual([a.id, a.id, b.id, b.id, later.id].sort());
    await waitForDeliveries(eventId, a.id, 2, (d) => d.status === 'delivered');
    await waitForDeliveries(eventId, later.id, 1, (d) => d.status === 'delivered');
    expect(arrivals('/all-later', eventId)).toHaveLength(1);
    expect(arrivals('/all-other', eventId)).toHaveLength(0);
    expect(arrivals('/all-off', eventId)).toHaveLength(0);
  });

  it('refuses an event older than 30 days, unknown or others’ events and subscriptions, writing nothing', async () => {
    const sub = await subscribe('/refused');
    const eventId = await newEvent();
    await waitForDeliveries(eventId, sub.id, 1, (d) => d.status === 'delivered');
    const before = await deliveryCount();
    const redeliver = (id: string, body: object = {}, client = api) =>
      client.post(`/api/v1/events/${id}/redeliver`, body);

    expect(await redeliver(randomUUID())).toMatchObject({
      status: 404,
      body: { detail: 'Event not found' },
    });
    expect((await redeliver('not-a-uuid')).status).toBe(404);
    expect(await redeliver(eventId, { subscription_id: randomUUID() })).toMatchObject({
      status: 404,
      body: { detail: 'Webhook subscription not found' },
    });
    const other = clientFor(engine.url, await createTestApp(engine.pool));
    expect((await redeliver(eventId, {}, other)).status).toBe(403);
    expect((await redeliver(eventId, {}, clientFor(engine.url, app, 'live'))).status).toBe(403);
    const othersSub = await other.post(SUBSCRIPTIONS, {
      url: receiver.url('/theirs'),
      events: ['transfer.completed'],
    });
    expect((await redeliver(eventId, { subscription_id: othersSub.body.id })).status).toBe(403);
    const unselected = await subscribe('/unselected', ['deposit.completed']);
    expect(await redeliver(eventId, { subscription_id: unselected.id })).toMatchObject({
      status: 400,
      body: { detail: 'Webhook subscription does not select events of type transfer.completed' },
    });
    await api.request('PATCH', `${SUBSCRIPTIONS}/${sub.id}`, { body: { is_active: false } });
    expect(await redeliver(eventId, { subscription_id: sub.id })).toMatchObject({
      status: 400,
      body: { detail: 'Webhook subscription is disabled' },
    });
    await api.request('PATCH', `${SUBSCRIPTIONS}/${sub.id}`, { body: { is_active: true } });
    await engine.pool.query(sql.unsafe`
      UPDATE events SET created_at = now() - interval '30 days 1 minute' WHERE id = ${eventId}`);
    expect(await redeliver(eventId, { subscription_id: sub.id })).toMatchObject({
      status: 400,
      body: { detail: 'Event is older than 30 days and can no longer be redelivered' },
    });
    expect((await redeliver(eventId)).status).toBe(400);
    expect(await deliveryCount()).toBe(before);
    expect(arrivals('/refused', eventId)).toHaveLength(1);
  });

  it('sends one event to one subscription at most 5 times in 24 hours; the 6th is 429, nothing sent', async () => {
    const sub = await subscribe('/capped');
    const spare = await subscribe('/spare');
    const eventId = await newEvent();
    await waitForDeliveries(eventId, sub.id, 1, (d) => d.status === 'delivered');
    const redeliver = (body: object) => api.post(`/api/v1/events/${eventId}/redeliver`, body);
    for (let i = 0; i < 5; i += 1) {
      expect((await redeliver({ subscription_id: sub.id })).status).toBe(202);
    }
    await waitForDeliveries(eventId, sub.id, 6, (d) => d.status === 'delivered');
    const before = await deliveryCount();
    const refused = await redeliver({ subscription_id: sub.id });
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(24 * 3600 - 120);
    expect(retryAfter).toBeLessThanOrEqual(24 * 3600);
    expect(refused.body).toEqual({
      detail: `The event was already redelivered 5 times to webhook subscription ${sub.id} in the last 24 hours, the most allowed: retry in ${retryAfter} seconds`,
    });
    // To every subscription: the capped one refuses the call, so the other gets nothing either.
    expect((await redeliver({})).status).toBe(429);
    expect(await deliveryCount()).toBe(before);
    // Another subscription has its own count.
    expect((await redeliver({ subscription_id: spare.id })).status).toBe(202);
    await waitForDeliveries(eventId, spare.id, 2, (d) => d.status === 'delivered');
    expect(arrivals('/capped', eventId)).toHaveLength(6);
    // A day after the first redelivery, one more is allowed.
    await engine.pool.query(sql.unsafe`
      UPDATE webhook_deliveries SET created_at = now() - interval '1 day 1 minute'
      WHERE event_id = ${eventId} AND subscription_id = ${sub.id} AND redelivery = 1`);
    expect((await redeliver({ subscription_id: sub.id })).status).toBe(202);
    expect((await redeliver({ subscription_id: sub.id })).status).toBe(429);
    await waitForDeliveries(eventId, sub.id, 7, (d) => d.status === 'delivered');
  });

  it('lists the event’s latest 50 deliveries, oldest first', async () => {
    const sub = await subscribe('/many');
    const eventId = await newEvent();
    await waitForDeliveries(eventId, sub.id, 1, (d) => d.status === 'delivered');
    await engine.pool.query(sql.unsafe`
      INSERT INTO webhook_deliveries (event_id, subscription_id, redelivery, status, attempts,
        last_error, created_at)
      SELECT ${eventId}, ${sub.id}, n, 'failed', n, 'stored ' || n, now() + n * interval '1 second'
      FROM generate_series(1, 60) AS n`);
    const shown = await deliveriesOf(eventId);
    expect(shown).toHaveLength(50);
    expect(shown.map((d) => d.attempts)).toEqual(Array.from({ length: 50 }, (_, i) => i + 11));
    const listed = await api.get('/api/v1/events?per_page=100');
    const inList = (listed.body.data as { id: string; deliveries: Delivery[] }[]).find(
      (e) => e.id === eventId,
    );
    expect(inList!.deliveries).toEqual(shown);
  });
});

describe('each delivery’s history', () => {
  it('lists every attempt oldest first, and only the last 25', async () => {
    receiver.answer((r) =>
      r.path === '/flaky' && receiver.received.filter((x) => x.path === '/flaky').length === 1
        ? 503
        : 200,
    );
    const sub = await subscribe('/flaky');
    const eventId = await newEvent();
    const [d] = await waitForDeliveries(eventId, sub.id, 1, (x) => x.status === 'delivered');
    expect(d!.attempts).toBe(2);
    expect(d!.history).toEqual([
      {
        attempted_at: expect.any(String),
        status_code: 503,
        duration_ms: expect.any(Number),
        error: 'http_status',
      },
      {
        attempted_at: expect.any(String),
        status_code: 200,
        duration_ms: expect.any(Number),
        error: null,
      },
    ]);
    expect(Date.parse(d!.history[1]!.attempted_at)).toBeGreaterThan(
      Date.parse(d!.history[0]!.attempted_at),
    );

    // Thirty attempts stored: the history shows the last 25, oldest first.
    await engine.pool.query(sql.unsafe`
      INSERT INTO webhook_delivery_attempts
        (event_id, subscription_id, redelivery, attempt, url, status_code, error, duration_ms,
         attempted_at)
      SELECT ${eventId}, ${sub.id}, 0, n, 'http://127.0.0.1/x', 500 + n, 'HTTP ' || (500 + n), n,
             now() + n * interval '1 second'
      FROM generate_series(3, 30) AS n`);
    const [long] = await deliveriesOf(eventId);
    expect(long!.history).toHaveLength(25);
    expect(long!.history.map((a) => a.duration_ms)).toEqual(
      Array.from({ length: 25 }, (_, i) => i + 6),
    );
  });
});

describe('POST /api/v1/webhooks/subscriptions/{id}/test', () => {
  it('signs and posts a webhook.test event once and answers the outcome', async () => {
    const sub = await subscribe('/test-send');
    const deliveriesBefore = await deliveryCount();
    const ok = await api.post(`${SUBSCRIPTIONS}/${sub.id}/test`, {});
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({
      delivered: true,
      status_code: 200,
      duration_ms: expect.any(Number),
      error: null,
    });
    const [got, ...more] = receiver.received.filter((r) => r.path === '/test-send');
    expect(more).toEqual([]);
    expect(verify(sub.secret, got!)).toMatchObject({
      type: 'webhook.test',
      mode: 'test',
      data: { subscription_id: sub.id },
    });

    receiver.answer(() => 500);
    const failed = await api.post(`${SUBSCRIPTIONS}/${sub.id}/test`, {});
    expect(failed.body).toEqual({
      delivered: false,
      status_code: 500,
      duration_ms: expect.any(Number),
      error: 'http_status',
    });
    // A test send is not a delivery: no event, no delivery row, no failing clock.
    expect(await deliveryCount()).toBe(deliveriesBefore);
    const failing = await engine.pool.oneFirst(
      sql.type(
        z.object({ failing_since: z.string().nullable() }),
      )`SELECT failing_since FROM webhook_subscriptions WHERE id = ${sub.id}`,
    );
    expect(failing).toBeNull();
    expect((await api.post(`${SUBSCRIPTIONS}/${randomUUID()}/test`, {})).status).toBe(404);
    const other = clientFor(engine.url, await createTestApp(engine.pool));
    expect((await other.post(`${SUBSCRIPTIONS}/${sub.id}/test`, {})).status).toBe(403);
  });

  it('answers a category, never the socket’s error, and the delivery history reads the same', async () => {
    const closed = await startReceiver();
    const url = closed.url('/gone');
    await closed.close();
    const res = await api.post(SUBSCRIPTIONS, { url, events: ['transfer.completed'] });
    expect(res.status).toBe(201);
    const sub = res.body as Subscription;
    const tested = await api.post(`${SUBSCRIPTIONS}/${sub.id}/test`, {});
    expect(tested.body).toEqual({
      delivered: false,
      status_code: null,
      duration_ms: expect.any(Number),
      error: 'connection_refused',
    });
    const eventId = await newEvent();
    const [d] = await waitForDeliveries(eventId, sub.id, 1, (x) => x.attempts >= 1);
    expect(d).toMatchObject({ status: 'pending', last_error: 'connection_refused' });
    expect(d!.history[0]).toMatchObject({ status_code: null, error: 'connection_refused' });
    const stored = await engine.pool.anyFirst(sql.type(z.object({ error: z.string() }))`
      SELECT error FROM webhook_delivery_attempts WHERE subscription_id = ${sub.id}`);
    expect(stored.length).toBeGreaterThanOrEqual(1);
    expect(new Set(stored)).toEqual(new Set(['connection_refused']));
  });
});

describe('the SSRF guard on the new paths', () => {
  it('refuses a URL resolving to a forbidden address on a test send and on a redelivery, never connecting', async () => {
    const internal = await startReceiver('127.0.0.2');
    const spy = mockLookup((host) =>
      host === 'rebind.test' ? [{ address: '127.0.0.2', family: 4 }] : undefined,
    );
    try {
      const sub = await subscribe('/guarded');
      const eventId = await newEvent();
      await waitForDeliveries(eventId, sub.id, 1, (d) => d.status === 'delivered');
      await engine.pool.query(sql.unsafe`
        UPDATE webhook_subscriptions SET url = ${`http://rebind.test:${internal.port}/hook`}
        WHERE id = ${sub.id}`);

      const tested = await api.post(`${SUBSCRIPTIONS}/${sub.id}/test`, {});
      expect(tested.body).toEqual({
        delivered: false,
        status_code: null,
        duration_ms: expect.any(Number),
        error: REFUSED_ADDRESS_ERROR,
      });
      const again = await api.post(`/api/v1/events/${eventId}/redeliver`, {
        subscription_id: sub.id,
      });
      expect(again.status).toBe(202);
      const [, refused] = await waitForDeliveries(eventId, sub.id, 2, (d) => d.attempts >= 1);
      expect(refused).toMatchObject({ status: 'pending', last_error: REFUSED_ADDRESS_ERROR });
      expect(refused!.history[0]).toMatchObject({
        status_code: null,
        error: REFUSED_ADDRESS_ERROR,
      });

      // A literal internal address is refused the same way.
      await engine.pool.query(sql.unsafe`
        UPDATE webhook_subscriptions SET url = ${internal.url('/hook')} WHERE id = ${sub.id}`);
      const literal = await api.post(`${SUBSCRIPTIONS}/${sub.id}/test`, {});
      expect(literal.body).toMatchObject({ delivered: false, error: REFUSED_ADDRESS_ERROR });
      await api.request('DELETE', `${SUBSCRIPTIONS}/${sub.id}`);
      expect(internal.connections()).toBe(0);
      expect(internal.received).toEqual([]);
      expect(spy).toHaveBeenCalledWith('rebind.test', expect.anything(), expect.any(Function));
    } finally {
      spy.mockRestore();
      await internal.close();
    }
  });
});

describe('POST /api/v1/webhooks/subscriptions/{id}/rotate-secret', () => {
  const sealedOf = (id: string) =>
    engine.pool.one(sql.type(
      z.object({
        secret_sealed: z.string(),
        previous_secret_sealed: z.string().nullable(),
        previous_secret_expires_at: z.string().nullable(),
      }),
    )`SELECT secret_sealed, previous_secret_sealed, previous_secret_expires_at
      FROM webhook_subscriptions WHERE id = ${id}`);

  it('signs with both secrets until the previous one expires, then with the new one only, and erases it', async () => {
    const sub = await subscribe('/rotated');
    const res = await api.post(`${SUBSCRIPTIONS}/${sub.id}/rotate-secret`, {
      previous_secret_expires_in: 3,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: sub.id,
      url: sub.url,
      events: ['transfer.completed'],
      is_active: true,
      disabled_reason: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const fresh = res.body.secret as string;
    expect(fresh).not.toBe(sub.secret);
    expect((await api.get(`${SUBSCRIPTIONS}/${sub.id}`)).body.secret).toBeUndefined();
    const stored = await sealedOf(sub.id);
    expect(stored.previous_secret_sealed).toMatch(/^v2\./);
    expect(JSON.stringify(stored)).not.toContain(sub.secret.slice(6));
    expect(JSON.stringify(stored)).not.toContain(fresh.slice(6));

    // During the overlap: a real delivery and a test send, each accepted with either secret.
    const eventId = await newEvent();
    await waitForDeliveries(eventId, sub.id, 1, (d) => d.status === 'delivered');
    expect((await api.post(`${SUBSCRIPTIONS}/${sub.id}/test`, {})).body.delivered).toBe(true);
    const during = receiver.received.filter((r) => r.path === '/rotated');
    expect(during).toHaveLength(2);
    for (const r of during) {
      expect(r.headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
      expect(accepts(fresh, r)).toBe(true);
      expect(accepts(sub.secret, r)).toBe(true);
    }

    await delay(Date.parse(stored.previous_secret_expires_at!) - Date.now() + 200);
    expect((await api.post(`${SUBSCRIPTIONS}/${sub.id}/test`, {})).body.delivered).toBe(true);
    const after = receiver.received.filter((r) => r.path === '/rotated').at(-1)!;
    expect(after.headers['webhook-signature']).toMatch(/^v1,\S+$/);
    expect(accepts(fresh, after)).toBe(true);
    expect(accepts(sub.secret, after)).toBe(false);
    // Erased when read past its expiry.
    expect(await sealedOf(sub.id)).toMatchObject({
      previous_secret_sealed: null,
      previous_secret_expires_at: null,
    });
  });

  it('the maintenance schedule erases previous secrets past their expiry, and keeps the others', async () => {
    const expiring = await subscribe('/expiring');
    const kept = await subscribe('/kept');
    for (const sub of [expiring, kept]) {
      expect((await api.post(`${SUBSCRIPTIONS}/${sub.id}/rotate-secret`, {})).status).toBe(200);
      const { previous_secret_expires_at: at } = await sealedOf(sub.id);
      // Default overlap: a day.
      expect(Date.parse(at!) - Date.now()).toBeGreaterThan(86_400_000 - 60_000);
    }
    await engine.pool.query(sql.unsafe`
      UPDATE webhook_subscriptions SET previous_secret_expires_at = now() - interval '1 second'
      WHERE id = ${expiring.id}`);
    const pruned = await createMaintenanceActivities({
      pool: engine.pool,
      config: engine.config,
    }).pruneExpiredRows();
    expect(pruned.webhookPreviousSecrets).toBeGreaterThanOrEqual(1);
    expect(await sealedOf(expiring.id)).toMatchObject({ previous_secret_sealed: null });
    expect((await sealedOf(kept.id)).previous_secret_sealed).toMatch(/^v2\./);
  });

  it('with 0 keeps no previous secret; out of range is 422 and changes nothing', async () => {
    const sub = await subscribe('/no-overlap');
    const before = await sealedOf(sub.id);
    for (const value of [-1, 604_801, 1.5, '60']) {
      const bad = await api.post(`${SUBSCRIPTIONS}/${sub.id}/rotate-secret`, {
        previous_secret_expires_in: value,
      });
      expect(bad.status).toBe(422);
      expect(bad.body).toEqual({ detail: expect.any(String) });
    }
    expect(await sealedOf(sub.id)).toEqual(before);
    const res = await api.post(`${SUBSCRIPTIONS}/${sub.id}/rotate-secret`, {
      previous_secret_expires_in: 0,
    });
    expect(res.status).toBe(200);
    expect(await sealedOf(sub.id)).toMatchObject({
      previous_secret_sealed: null,
      previous_secret_expires_at: null,
    });
    await api.post(`${SUBSCRIPTIONS}/${sub.id}/test`, {});
    const got = receiver.received.filter((r) => r.path === '/no-overlap').at(-1)!;
    expect(accepts(res.body.secret as string, got)).toBe(true);
    expect(accepts(sub.secret, got)).toBe(false);
    expect((await api.post(`${SUBSCRIPTIONS}/${randomUUID()}/rotate-secret`, {})).status).toBe(404);
  });
});

describe('failing endpoints turned off', () => {
  const stateOf = (id: string) =>
    engine.pool.one(
      sql.type(
        z.object({
          is_active: z.boolean(),
          disabled_reason: z.string().nullable(),
          failing_since: z.string().nullable(),
        }),
      )`SELECT is_active, disabled_reason, failing_since FROM webhook_subscriptions WHERE id = ${id}`,
    );

  it('after 72 hours in which every delivery failed; turning it on again clears the reason and sends nothing', async () => {
    receiver.answer((r) => (r.path === '/down' ? 503 : 200));
    const sub = await subscribe('/down');
    const healthy = await subscribe('/up');
    const first = await newEvent();
    await waitForDeliveries(first, sub.id, 1, (d) => d.attempts >= 1);
    await waitForDeliveries(first, healthy.id, 1, (d) => d.status === 'delivered');
    const started = await stateOf(sub.id);
    expect(started).toMatchObject({ is_active: true, disabled_reason: null });
    expect(started.failing_since).not.toBeNull();
    expect((await stateOf(healthy.id)).failing_since).toBeNull();

    // A second event, still retrying when the subscription is turned off.
    const second = await newEvent();
    await waitForDeliveries(second, sub.id, 1, (d) => d.attempts >= 1);
    // 72 hours of failures have passed by the next failed attempt (5 seconds later).
    await engine.pool.query(sql.unsafe`
      UPDATE webhook_subscriptions SET failing_since = now() - interval '72 hours'
      WHERE id = ${sub.id}`);
    await pollUntil(
      () => stateOf(sub.id),
      (s) => !s.is_active,
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(await stateOf(sub.id)).toMatchObject({ is_active: false, disabled_reason: 'failing' });
    expect((await api.get(`${SUBSCRIPTIONS}/${sub.id}`)).body).toMatchObject({
      is_active: false,
      disabled_reason: 'failing',
    });
    expect(await stateOf(healthy.id)).toMatchObject({ is_active: true, disabled_reason: null });
    for (const e of [first, second]) {
      const [d] = await waitForDeliveries(e, sub.id, 1, (x) => x.status === 'failed');
      // Stopped when turned off, or by an attempt that found it off since.
      expect([TURNED_OFF, 'Subscription disabled']).toContain(d!.last_error);
    }

    const on = await api.request('PATCH', `${SUBSCRIPTIONS}/${sub.id}`, {
      body: { is_active: true },
    });
    expect(on.body).toMatchObject({ is_active: true, disabled_reason: null });
    expect(await stateOf(sub.id)).toEqual({
      is_active: true,
      disabled_reason: null,
      failing_since: null,
    });
    const sent = receiver.received.filter((r) => r.path === '/down').length;
    // Both deliveries' workflows end without another request.
    for (const e of [first, second]) {
      const handle = engine.temporal.workflow.getHandle(webhookDeliveryId(e, sub.id));
      expect(await handle.result()).toMatchObject({ status: 'stopped' });
    }
    expect(receiver.received.filter((r) => r.path === '/down')).toHaveLength(sent);
  });

  it('a 2xx stops the failing clock, and a subscription turned off by hand has no reason', async () => {
    let fail = true;
    receiver.answer((r) => (r.path === '/recovers' && fail ? 503 : 200));
    const sub = await subscribe('/recovers');
    const eventId = await newEvent();
    await waitForDeliveries(eventId, sub.id, 1, (d) => d.attempts >= 1);
    expect((await stateOf(sub.id)).failing_since).not.toBeNull();
    fail = false;
    await waitForDeliveries(eventId, sub.id, 1, (d) => d.status === 'delivered');
    expect(await stateOf(sub.id)).toEqual({
      is_active: true,
      disabled_reason: null,
      failing_since: null,
    });
    const off = await api.request('PATCH', `${SUBSCRIPTIONS}/${sub.id}`, {
      body: { is_active: false },
    });
    expect(off.body).toMatchObject({ is_active: false, disabled_reason: null });
  });
});
