import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Caller } from '../domain/types';
import type { DatabasePool } from './pool';
import { pageTotal } from './pages';

/**
 * The webhook side of the events outbox (issue 10): the relay's claim of unrelayed events, one
 * delivery row per (event, subscription) and every attempt, and the events API's reads.
 */

const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const eventRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  type: z.string(),
  data: z.unknown(),
  created_at: z.string(),
});
export type EventRow = z.infer<typeof eventRow>;

const eventColumns = sql.fragment`id, application_id, mode, type, data, created_at`;

export const deliveryRow = z.object({
  event_id: z.string(),
  subscription_id: z.string(),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number(),
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
});
export type DeliveryRow = z.infer<typeof deliveryRow>;

const deliveryColumns = sql.fragment`event_id, subscription_id, status, attempts, last_status_code,
  last_error, next_attempt_at, delivered_at`;

export type DeliveryTarget = { eventId: string; subscriptionId: string };

/**
 * One relay step, in one database transaction: claims the oldest unrelayed events (rows another
 * relay holds are skipped, not waited for), hands their (event, active matching subscription)
 * pairs to `start`, writes a pending delivery for each, and marks the events relayed. When
 * `start` throws, nothing is marked and the same events are claimed again next time; `start`
 * must therefore be idempotent (a workflow id per delivery). Answers how many events it claimed.
 */
export async function relayEventBatch(
  pool: DatabasePool,
  limit: number,
  start: (targets: readonly DeliveryTarget[]) => Promise<void>,
): Promise<number> {
  return pool.transaction(async (trx) => {
    const ids = await trx.anyFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM events WHERE relayed_at IS NULL
      ORDER BY created_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED`);
    if (ids.length === 0) return 0;
    const targets = await trx.any(sql.type(
      z.object({ eventId: z.string(), subscriptionId: z.string() }),
    )`
      SELECT e.id AS "eventId", s.id AS "subscriptionId"
      FROM events e
      JOIN webhook_subscriptions s
        ON s.application_id = e.application_id AND s.mode = e.mode
       AND s.is_active AND e.type = ANY (s.events) AND s.created_at <= e.created_at
      WHERE e.id = ANY (${sql.array(ids, 'uuid')})
      ORDER BY e.created_at, e.id, s.id`);
    if (targets.length > 0) {
      await trx.query(sql.unsafe`
        INSERT INTO webhook_deliveries (event_id, subscription_id)
        SELECT * FROM unnest(${sql.array(
          targets.map((t) => t.eventId),
          'uuid',
        )}::uuid[], ${sql.array(
          targets.map((t) => t.subscriptionId),
          'uuid',
        )}::uuid[])
        ON CONFLICT DO NOTHING`);
      await start(targets);
    }
    await trx.query(sql.unsafe`
      UPDATE events SET relayed_at = now() WHERE id = ANY (${sql.array(ids, 'uuid')})`);
    return ids.length;
  });
}

export async function findEvent(db: CommonQueryMethods, id: string): Promise<EventRow | null> {
  return db.maybeOne(sql.type(eventRow)`SELECT ${eventColumns} FROM events WHERE id = ${id}`);
}

/** A delivery attempt's outcome, as the attempt activity records it. */
export type AttemptRecord = {
  eventId: string;
  subscriptionId: string;
  attempt: number;
  url: string;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** `delivered`, `failed` (the last attempt), or `pending` with the next attempt's delay. */
  status: DeliveryStatus;
  retryInMs: number | null;
};

/**
 * Records one attempt and the delivery's state after it. Idempotent for a retried activity: the
 * same attempt number overwrites its row, and `attempts` never goes back.
 */
export async function recordDeliveryAttempt(
  pool: DatabasePool,
  a: AttemptRecord,
): Promise<DeliveryRow> {
  return pool.transaction(async (trx) => {
    const row = await upsertDelivery(trx, a.eventId, a.subscriptionId, {
      status: a.status,
      attempts: a.attempt,
      lastStatusCode: a.statusCode,
      lastError: a.error,
      retryInMs: a.status === 'pending' ? a.retryInMs : null,
    });
    await trx.query(sql.unsafe`
      INSERT INTO webhook_delivery_attempts
        (event_id, subscription_id, attempt, url, status_code, error, duration_ms)
      VALUES (${a.eventId}, ${a.subscriptionId}, ${a.attempt}, ${a.url}, ${a.statusCode},
              ${a.error}, ${Math.max(0, Math.round(a.durationMs))})
      ON CONFLICT (event_id, subscription_id, attempt) DO UPDATE SET
        url = excluded.url, status_code = excluded.status_code, error = excluded.error,
        attempted_at = now(), duration_ms = excluded.duration_ms`);
    return row;
  });
}

/** A delivery that stops without an attempt (its subscription disabled or deleted). */
export async function stopDelivery(
  pool: DatabasePool,
  target: DeliveryTarget,
  reason: string,
): Promise<DeliveryRow> {
  return upsertDelivery(pool, target.eventId, target.subscriptionId, {
    status: 'failed',
    lastError: reason,
    retryInMs: null,
  });
}

async function upsertDelivery(
  db: CommonQueryMethods,
  eventId: string,
  subscriptionId: string,
  s: {
    status: DeliveryStatus;
    attempts?: number;
    lastStatusCode?: number | null;
    lastError: string | null;
    retryInMs: number | null;
  },
): Promise<DeliveryRow> {
  const next =
    s.retryInMs === null
      ? sql.fragment`NULL::timestamptz`
      : sql.fragment`now() + ${s.retryInMs} * interval '1 millisecond'`;
  const delivered =
    s.status === 'delivered' ? sql.fragment`now()` : sql.fragment`NULL::timestamptz`;
  return db.one(sql.type(deliveryRow)`
    INSERT INTO webhook_deliveries AS d (event_id, subscription_id, status, attempts,
      last_status_code, last_error, next_attempt_at, delivered_at)
    VALUES (${eventId}, ${subscriptionId}, ${s.status}, ${s.attempts ?? 0},
      ${s.lastStatusCode ?? null}, ${s.lastError}, ${next}, ${delivered})
    ON CONFLICT (event_id, subscription_id) DO UPDATE SET
      status = excluded.status,
      attempts = greatest(d.attempts, excluded.attempts),
      last_status_code = CASE WHEN ${s.attempts === undefined}
        THEN d.last_status_code ELSE excluded.last_status_code END,
      last_error = excluded.last_error,
      next_attempt_at = excluded.next_attempt_at,
      delivered_at = coalesce(d.delivered_at, excluded.delivered_at),
      updated_at = now()
    RETURNING ${deliveryColumns}`);
}

export type AttemptRow = {
  attempt: number;
  url: string;
  status_code: number | null;
  error: string | null;
  attempted_at: string;
};

/** Every attempt of one delivery, oldest first. */
export async function listDeliveryAttempts(
  db: CommonQueryMethods,
  target: DeliveryTarget,
): Promise<readonly AttemptRow[]> {
  return db.any(sql.type(
    z.object({
      attempt: z.number(),
      url: z.string(),
      status_code: z.number().nullable(),
      error: z.string().nullable(),
      attempted_at: z.string(),
    }),
  )`
    SELECT attempt, url, status_code, error, attempted_at FROM webhook_delivery_attempts
    WHERE event_id = ${target.eventId} AND subscription_id = ${target.subscriptionId}
    ORDER BY attempt`);
}

export type EventWithDeliveries = EventRow & { deliveries: readonly DeliveryRow[] };

async function withDeliveries(
  db: CommonQueryMethods,
  events: readonly EventRow[],
): Promise<EventWithDeliveries[]> {
  if (events.length === 0) return [];
  const rows = await db.any(sql.type(deliveryRow)`
    SELECT ${deliveryColumns} FROM webhook_deliveries
    WHERE event_id = ANY (${sql.array(
      events.map((e) => e.id),
      'uuid',
    )})
    ORDER BY created_at, subscription_id`);
  return events.map((e) => ({ ...e, deliveries: rows.filter((d) => d.event_id === e.id) }));
}

/**
 * An event with its deliveries, whatever its application (the caller decides between 403 and
 * 404); another's deliveries are not read.
 */
export async function findEventWithDeliveries(
  db: CommonQueryMethods,
  caller: Caller,
  id: string,
): Promise<EventWithDeliveries | null> {
  const row = await findEvent(db, id);
  if (!row || row.application_id !== caller.applicationId || row.mode !== caller.mode) {
    return row && { ...row, deliveries: [] };
  }
  return (await withDeliveries(db, [row]))[0] ?? null;
}

/** The caller's events, newest first, optionally of one type, with their deliveries. */
export async function listCallerEvents(
  db: CommonQueryMethods,
  caller: Caller,
  filter: { type?: string | undefined },
  page: { limit: number; offset: number },
): Promise<{ rows: EventWithDeliveries[]; total: number }> {
  const where = sql.fragment`application_id = ${caller.applicationId} AND mode = ${caller.mode}
    AND (${filter.type ?? null}::text IS NULL OR type = ${filter.type ?? null}::text)`;
  const total = await pageTotal(db, sql.fragment`events`, where, page);
  const rows = await db.any(sql.type(eventRow)`
    SELECT ${eventColumns} FROM events WHERE ${where}
    ORDER BY created_at DESC, id LIMIT ${page.limit} OFFSET ${page.offset}`);
  return { rows: await withDeliveries(db, rows), total };
}
