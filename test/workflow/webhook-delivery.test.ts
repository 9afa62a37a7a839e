import { createCipheriv, randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { sql } from 'slonik';
import { z } from 'zod';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import {
  createWebhookActivities,
  ENDPOINT_BUSY,
  type WebhookAttemptInput,
  type WebhookAttemptResult,
} from '../../src/activities/webhooks';
import { loadConfig } from '../../src/config';
import type { DatabasePool } from '../../src/db/pool';
import { insertEvent } from '../../src/db/transaction-events';
import {
  findWebhookSubscription,
  insertWebhookSubscription,
  updateWebhookSubscription,
} from '../../src/db/webhook-subscriptions';
import { MIN_DEFERRAL_MS } from '../../src/outbound/endpoint-gate';
import { newWebhookSecret, open, seal } from '../../src/crypto/secret-box';
import { webhookDeliveryId } from '../../src/workflows/ids';
import { webhookDeliveryWorkflow } from '../../src/workflows/webhook';
import { WEBHOOK_RETRY_WINDOW_MS, webhookRetryDelayMs } from '../../src/workflows/webhook-schedule';
import { createTestDatabase } from '../support/database';
import { createTestApp, type TestApp } from '../support/engine';
import { createTimeSkippingEnv, withWorker } from '../support/time-skipping';
import { startReceiver, verify, type Receiver } from '../support/webhook-receiver';
import { webhookDeliveryRetried, webhookDeliveryStopped } from './webhook-scenarios';

/**
 * The delivery workflow on the time-skipping server with its real attempt activity: a real
 * database, real signed POSTs to a loopback receiver. Days of retries pass in seconds.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let env: TestWorkflowEnvironment;
let pool: DatabasePool;
let receiver: Receiver;
let app: TestApp;
const key = randomBytes(32);
let config: ReturnType<typeof loadConfig>;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  const database = await createTestDatabase();
  pool = database.pool;
  config = loadConfig({
    DATABASE_URL: database.url,
    WEBHOOK_SECRET_KEY: key.toString('base64'),
    WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32',
  });
  receiver = await startReceiver();
  app = await createTestApp(pool);
});
afterAll(async () => {
  await receiver?.close();
  await pool?.end();
  await env?.teardown();
});
jest.setTimeout(120_000);

const caller = () => ({ applicationId: app.id, mode: 'test' as const, credentialId: '' });

async function pendingDelivery(path: string) {
  const secret = newWebhookSecret();
  const id = randomUUID();
  const subscription = await insertWebhookSubscription(pool, caller(), {
    id,
    url: receiver.url(path),
    events: ['transfer.completed'],
    is_active: true,
    secret_sealed: seal(key, secret, id),
  });
  const eventId = await insertEvent(pool, {
    applicationId: app.id,
    mode: 'test',
    type: 'transfer.completed',
    transactionId: null,
    data: { id: randomUUID(), amount: 12.5 },
  });
  return { secret, eventId, subscriptionId: subscription.id };
}

/** The real attempt activity, told first what the workflow clock says (for the receiver). */
function attemptsAt(onAttempt: (elapsedMs: number, input: WebhookAttemptInput) => Promise<void>) {
  const real = createWebhookActivities({ pool, config });
  let start: number | undefined;
  return {
    attemptWebhookDelivery: async (input: WebhookAttemptInput): Promise<WebhookAttemptResult> => {
      const now = await env.currentTimeMs();
      start ??= now;
      await onAttempt(now - start, input);
      return real.attemptWebhookDelivery(input);
    },
  };
}

async function deliver(target: { eventId: string; subscriptionId: string }, activities: object) {
  return withWorker(env, activities, async (taskQueue) => {
    const handle = await env.client.workflow.start(webhookDeliveryWorkflow, {
      workflowId: webhookDeliveryId(target.eventId, target.subscriptionId),
      taskQueue,
      args: [target],
    });
    return handle.result();
  });
}

const deliveryRow = (eventId: string) =>
  pool.one(sql.type(
    z.object({
      status: z.string(),
      attempts: z.number(),
      last_status_code: z.number().nullable(),
      last_error: z.string().nullable(),
      next_attempt_at: z.string().nullable(),
      delivered_at: z.string().nullable(),
    }),
  )`SELECT status, attempts, last_status_code, last_error, next_attempt_at, delivered_at
    FROM webhook_deliveries WHERE event_id = ${eventId}`);

const attemptRows = (eventId: string) =>
  pool.any(sql.type(z.object({ attempt: z.number(), status_code: z.number().nullable() }))`
    SELECT attempt, status_code FROM webhook_delivery_attempts WHERE event_id = ${eventId}
    ORDER BY attempt`);

describe('webhookDeliveryWorkflow', () => {
  it('keeps trying while the receiver is down for 60 minutes, then delivers once it is back', async () => {
    const target = await pendingDelivery('/down-an-hour');
    let down = true;
    receiver.answer((r) => (r.path === '/down-an-hour' && down ? 503 : 200));
    const result = await deliver(
      target,
      attemptsAt((elapsed) => {
        down = elapsed < HOUR;
        return Promise.resolve();
      }),
    );
    // 0 s, 5 s, 35 s, then 1, 2, 4, 8, 16, 32 minutes apart: the 9th attempt, 63 min 35 s in.
    expect(result).toMatchObject({ status: 'delivered', attempts: 9 });
    // (Plus the attempts' own real time, which the workflow clock also counts.)
    const span = result.lastAttemptAt - result.firstAttemptAt;
    expect(span).toBeGreaterThanOrEqual(63 * MINUTE + 35_000);
    expect(span).toBeLessThan(64 * MINUTE);
    const got = receiver.received.filter((r) => r.path === '/down-an-hour');
    expect(got).toHaveLength(9);
    for (const request of got) expect(verify(target.secret, request)).toEqual(request.payload);
    expect(await deliveryRow(target.eventId)).toEqual({
      status: 'delivered',
      attempts: 9,
      last_status_code: 200,
      last_error: null,
      next_attempt_at: null,
      delivered_at: expect.any(String),
    });
    expect((await attemptRows(target.eventId)).map((a) => a.status_code)).toEqual([
      ...Array(8).fill(503),
      200,
    ]);
  });

  it('marks the delivery failed after at least 72 hours of an endpoint that never recovers', async () => {
    const target = await pendingDelivery('/never');
    receiver.answer((r) => (r.path === '/never' ? 500 : 200));
    const result = await deliver(
      target,
      attemptsAt(() => Promise.resolve()),
    );
    const span = result.lastAttemptAt - result.firstAttemptAt;
    expect(result.status).toBe('failed');
    expect(span).toBeGreaterThanOrEqual(WEBHOOK_RETRY_WINDOW_MS);
    expect(span).toBeLessThan(WEBHOOK_RETRY_WINDOW_MS + HOUR);
    const rows = await attemptRows(target.eventId);
    expect(rows).toHaveLength(result.attempts);
    expect(rows.every((a) => a.status_code === 500)).toBe(true);
    expect(receiver.received.filter((r) => r.path === '/never')).toHaveLength(result.attempts);
    expect(await deliveryRow(target.eventId)).toEqual({
      status: 'failed',
      attempts: result.attempts,
      last_status_code: 500,
      last_error: 'http_status',
      next_attempt_at: null,
      delivered_at: null,
    });
  });

  it('uses the subscription as it is at each attempt: a new URL, then disabled stops it', async () => {
    const target = await pendingDelivery('/before-edit');
    receiver.answer(() => 503);
    const result = await deliver(
      target,
      attemptsAt(async (_elapsed, input) => {
        if (input.attempt === 2) {
          await updateWebhookSubscription(pool, target.subscriptionId, {
            url: receiver.url('/after-edit'),
          });
        }
        if (input.attempt === 3) {
          await updateWebhookSubscription(pool, target.subscriptionId, { is_active: false });
        }
      }),
    );
    expect(result).toMatchObject({ status: 'stopped', attempts: 2 });
    expect(receiver.received.filter((r) => r.path === '/before-edit')).toHaveLength(1);
    const edited = receiver.received.filter((r) => r.path === '/after-edit');
    expect(edited).toHaveLength(1);
    expect(verify(target.secret, edited[0]!)).toEqual(edited[0]!.payload);
    expect(await deliveryRow(target.eventId)).toMatchObject({
      status: 'failed',
      attempts: 2,
      last_error: 'Subscription disabled',
      next_attempt_at: null,
    });
    receiver.answer(() => 200);
  });

  it.each([
    [
      'the configured key cannot open',
      (id: string) => Promise.resolve(seal(randomBytes(32), newWebhookSecret(), id)),
    ],
    [
      'was sealed for another subscription (copied from it)',
      async () => {
        const donor = await pendingDelivery('/donor');
        return (await findWebhookSubscription(pool, donor.subscriptionId))!.secret_sealed;
      },
    ],
  ])(
    'fails an attempt whose secret %s, posts nothing, and keeps the schedule',
    async (_why, sealedFor) => {
      const target = await pendingDelivery('/unreadable-secret');
      await pool.query(sql.unsafe`
        UPDATE webhook_subscriptions SET secret_sealed = ${await sealedFor(target.subscriptionId)}
        WHERE id = ${target.subscriptionId}`);
      const attempt = createWebhookActivities({ pool, config }).attemptWebhookDelivery;
      expect(await attempt({ ...target, attempt: 1, retryInMs: 5_000 })).toMatchObject({
        status: 'pending',
        attempts: 1,
        statusCode: null,
        error: expect.stringContaining('cannot be read'),
      });
      expect(receiver.received.filter((r) => r.path === '/unreadable-secret')).toEqual([]);
      expect(await deliveryRow(target.eventId)).toMatchObject({
        status: 'pending',
        next_attempt_at: expect.any(String),
      });
    },
  );

  it('delivers with a secret sealed before binding (v1) and re-seals it bound to the subscription', async () => {
    const target = await pendingDelivery('/legacy-secret');
    const legacy = sealV1(key, target.secret);
    await pool.query(sql.unsafe`
      UPDATE webhook_subscriptions SET secret_sealed = ${legacy} WHERE id = ${target.subscriptionId}`);
    const attempt = createWebhookActivities({ pool, config }).attemptWebhookDelivery;
    expect(await attempt({ ...target, attempt: 1, retryInMs: 5_000 })).toMatchObject({
      status: 'delivered',
      attempts: 1,
      statusCode: 200,
    });
    const delivered = receiver.received.filter((r) => r.path === '/legacy-secret');
    expect(delivered).toHaveLength(1);
    expect(verify(target.secret, delivered[0]!)).toEqual(delivered[0]!.payload);
    const resealed = (await findWebhookSubscription(pool, target.subscriptionId))!.secret_sealed;
    expect(resealed).toMatch(/^v2\./);
    expect(open(key, resealed, target.subscriptionId)).toBe(target.secret);
    expect(() => open(key, resealed, randomUUID())).toThrow();
  });

  it('follows the retry schedule: three attempts within a minute, then doubling to an hour', () => {
    const waits = Array.from({ length: 12 }, (_, i) => webhookRetryDelayMs(i + 1));
    expect(waits.slice(0, 2).reduce((a, b) => a + b)).toBeLessThan(MINUTE);
    expect(waits).toEqual([
      5_000,
      30_000,
      MINUTE,
      2 * MINUTE,
      4 * MINUTE,
      8 * MINUTE,
      16 * MINUTE,
      32 * MINUTE,
      HOUR,
      HOUR,
      HOUR,
      HOUR,
    ]);
  });

  it('runs at most WEBHOOK_ATTEMPTS_PER_ENDPOINT attempts to one endpoint at once; the rest go back to the queue', async () => {
    const bound = 2;
    const deliveries = 6;
    const endpoint = await holdingEndpoint(bound);
    const first = await pendingDelivery('/held');
    const { subscriptionId } = first;
    await updateWebhookSubscription(pool, subscriptionId, { url: endpoint.url });
    const eventIds = [first.eventId];
    while (eventIds.length < deliveries) {
      eventIds.push(
        await insertEvent(pool, {
          applicationId: app.id,
          mode: 'test',
          type: 'transfer.completed',
          transactionId: null,
          data: { id: randomUUID(), amount: 1 },
        }),
      );
    }
    // As the relay writes them, before it starts their workflows.
    await pool.query(sql.unsafe`
      INSERT INTO webhook_deliveries (event_id, subscription_id)
      SELECT unnest(${sql.array(eventIds, 'uuid')}::uuid[]), ${subscriptionId}::uuid`);
    const bounded = createWebhookActivities({
      pool,
      config: { ...config, webhooks: { ...config.webhooks, attemptsPerEndpoint: bound } },
    });
    const attempt = (eventId: string, queueWhenBusy?: boolean) =>
      bounded.attemptWebhookDelivery({
        eventId,
        subscriptionId,
        attempt: 1,
        retryInMs: 5_000,
        queueWhenBusy,
      });
    const refusals: unknown[] = [];
    let queuedAnswer: unknown;
    // While two attempts are held, the refused ones say when they are expected, and a local
    // first attempt is handed back to be queued.
    endpoint.holdUntil(async () => {
      const waiting = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM webhook_deliveries
        WHERE event_id = ANY (${sql.array(eventIds, 'uuid')}) AND subscription_id = ${subscriptionId}
          AND status = 'pending' AND next_attempt_at IS NOT NULL`);
      if (waiting < deliveries - bound) return false;
      queuedAnswer ??= await attempt(eventIds[deliveries - 1]!, true);
      return true;
    });
    // Temporal's part: an attempt refused comes back (here soon) until it is made.
    const untilMade = async (eventId: string) => {
      for (;;) {
        try {
          return await attempt(eventId);
        } catch (error) {
          refusals.push(error);
          await delay(20);
        }
      }
    };
    try {
      const results = await Promise.all(eventIds.map(untilMade));
      expect(results.map((r) => [r.status, r.attempts])).toEqual(
        Array(deliveries).fill(['delivered', 1]),
      );
      expect(endpoint.mostAtOnce()).toBe(bound);
      expect(endpoint.sawHeldCondition()).toBe(true);
      expect(queuedAnswer).toEqual({
        status: 'queued',
        attempts: 0,
        statusCode: null,
        error: null,
      });
      expect(refusals.length).toBeGreaterThanOrEqual(deliveries - bound);
      for (const refusal of refusals) {
        expect(refusal).toBeInstanceOf(ApplicationFailure);
        const failure = refusal as ApplicationFailure;
        expect(failure.type).toBe(ENDPOINT_BUSY);
        expect(failure.nonRetryable).toBe(false);
        expect(failure.category).toBe(ApplicationFailureCategory.BENIGN);
        expect(failure.nextRetryDelay).toBeGreaterThanOrEqual(MIN_DEFERRAL_MS);
      }
      // Every event sent once, none lost, one attempt row each.
      expect(endpoint.received().sort()).toEqual([...eventIds].sort());
      for (const eventId of eventIds) {
        expect(await deliveryRow(eventId)).toMatchObject({
          status: 'delivered',
          attempts: 1,
          next_attempt_at: null,
        });
        expect(await attemptRows(eventId)).toEqual([{ attempt: 1, status_code: 200 }]);
      }
    } finally {
      await endpoint.close();
    }
  });

  it.each([webhookDeliveryRetried, webhookDeliveryStopped])(
    'plays the recorded scenario $name',
    async (scenario) => {
      const played = await withWorker(env, scenario.activities(), (taskQueue) =>
        scenario.play(env, taskQueue),
      );
      expect(played.result.status).toBe(
        scenario === webhookDeliveryRetried ? 'delivered' : 'stopped',
      );
    },
  );
});

/**
 * An endpoint that counts the requests it holds open at once: it answers 200 once `bound` are
 * open and `holdUntil`'s condition holds (the lone last ones after a short wait).
 */
async function holdingEndpoint(bound: number) {
  let open = 0;
  let most = 0;
  let sawCondition = false;
  let condition: () => Promise<boolean> = () => Promise.resolve(true);
  const ids: string[] = [];
  const waiting: (() => void)[] = [];
  const release = async () => {
    const until = Date.now() + 15_000;
    while (Date.now() < until && !(await condition())) await delay(50);
    sawCondition ||= await condition();
    condition = () => Promise.resolve(true);
    for (const answer of waiting.splice(0)) answer();
  };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      ids.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string }).id);
      open += 1;
      most = Math.max(most, open);
      waiting.push(() => {
        open -= 1;
        response.end('ok');
      });
      if (open >= bound) void release();
      else setTimeout(() => void (waiting.length > 0 && open < bound && release()), 2_000);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/held`,
    holdUntil: (check: () => Promise<boolean>) => {
      condition = check;
    },
    mostAtOnce: () => most,
    sawHeldCondition: () => sawCondition,
    received: () => [...ids],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The format of secrets sealed before they were bound to their subscription (no associated data). */
function sealV1(sealKey: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealKey, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', ...[iv, cipher.getAuthTag(), ciphertext].map((b) => b.toString('base64url'))].join(
    '.',
  );
}
