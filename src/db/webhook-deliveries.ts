import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Caller } from '../domain/types';
import type { DatabasePool, DatabaseTransactionConnection } from './pool';
import { pageTotal } from './pages';

/**
 * The webhook side of the events outbox: the relay's claim of unrelayed events, one
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
  /** 0: the relay's delivery; 1 and up: redeliveries asked for, in order. */
  redelivery: z.number(),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number(),
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
});
export type DeliveryRow = z.infer<typeof deliveryRow>;

const deliveryColumns = sql.fragment`event_id, subscription_id, redelivery, status, attempts,
  last_status_code, last_error, next_attempt_at, delivered_at`;

/** One delivery; `redelivery` absent (workflows started before redeliveries existed) is 0. */
export type DeliveryTarget = { eventId: string; subscriptionId: string; redelivery?: number };

/**
 * One relay step, in one database transaction: claims the oldest unrelayed events (skipping rows
 * another relay holds) and hands their deliveries to `start`. When `start` throws nothing is marked
 * and the same events come again, so `start` must be idempotent (a workflow id per delivery).
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
export type AttemptRecord = DeliveryTarget & {
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
  /** Written in the same transaction, so readers never see the attempt without it. */
  also?: (trx: DatabaseTransactionConnection) => Promise<unknown>,
): Promise<DeliveryRow> {
  return pool.transaction(async (trx) => {
    const redelivery = a.redelivery ?? 0;
    const row = await upsertDelivery(trx, a, {
      status: a.status,
      attempts: a.attempt,
      lastStatusCode: a.statusCode,
      lastError: a.error,
      retryInMs: a.status === 'pending' ? a.retryInMs : null,
    });
    await trx.query(sql.unsafe`
      INSERT INTO webhook_delivery_attempts
        (event_id, subscription_id, redelivery, attempt, url, status_code, error, duration_ms)
      VALUES (${a.eventId}, ${a.subscriptionId}, ${redelivery}, ${a.attempt}, ${a.url},
              ${a.statusCode}, ${a.error}, ${Math.max(0, Math.round(a.durationMs))})
      ON CONFLICT (event_id, subscription_id, redelivery, attempt) DO UPDATE SET
        url = excluded.url, status_code = excluded.status_code, error = excluded.error,
        attempted_at = now(), duration_ms = excluded.duration_ms`);
    await also?.(trx);
    return row;
  });
}

/**
 * An attempt that its endpoint's bound sent back to Temporal's queue: `next_attempt_at` says
 * when it is now expected (the first attempt's included), while the delivery is pending.
 */
export async function deferDelivery(
  db: CommonQueryMethods,
  target: DeliveryTarget,
  inMs: number,
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE webhook_deliveries
    SET next_attempt_at = now() + ${inMs} * interval '1 millisecond', updated_at = now()
    WHERE event_id = ${target.eventId} AND subscription_id = ${target.subscriptionId}
      AND redelivery = ${target.redelivery ?? 0} AND status = 'pending'`);
}

/** A delivery that stops without an attempt (its subscription disabled or deleted). */
export async function stopDelivery(
  pool: DatabasePool,
  target: DeliveryTarget,
  reason: string,
): Promise<DeliveryRow> {
  return upsertDelivery(pool, target, {
    status: 'failed',
    lastError: reason,
    retryInMs: null,
  });
}

async function upsertDelivery(
  db: CommonQueryMethods,
  target: DeliveryTarget,
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
    INSERT INTO webhook_deliveries AS d (event_id, subscription_id, redelivery, status, attempts,
      last_status_code, last_error, next_attempt_at, delivered_at)
    VALUES (${target.eventId}, ${target.subscriptionId}, ${target.redelivery ?? 0}, ${s.status},
      ${s.attempts ?? 0}, ${s.lastStatusCode ?? null}, ${s.lastError}, ${next}, ${delivered})
    ON CONFLICT (event_id, subscription_id, redelivery) DO UPDATE SET
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
      AND redelivery = ${target.redelivery ?? 0}
    ORDER BY attempt`);
}

/** The attempts a delivery shows (docs/api.md, "Webhooks"). */
export const HISTORY_ATTEMPTS = 25;

/** The deliveries an event shows: its latest, so that redeliveries never grow the answer. */
export const EVENT_DELIVERIES = 50;

const historyEntry = z.object({
  attempted_at: z.string(),
  status_code: z.number().nullable(),
  duration_ms: z.number(),
  error: z.string().nullable(),
});
export type HistoryEntry = z.infer<typeof historyEntry>;

export type DeliveryWithHistory = DeliveryRow & { history: readonly HistoryEntry[] };
export type EventWithDeliveries = EventRow & { deliveries: readonly DeliveryWithHistory[] };

const deliveryWithHistory = deliveryRow.extend({ history: z.array(historyEntry) });

async function withDeliveries(
  db: CommonQueryMethods,
  events: readonly EventRow[],
): Promise<EventWithDeliveries[]> {
  if (events.length === 0) return [];
  const ids = sql.array(
    events.map((e) => e.id),
    'uuid',
  );
  // One statement, so that a delivery and its attempts come from one snapshot: an attempt
  // committed between two reads would show in the count and not in the history.
  const rows = await db.any(sql.type(deliveryWithHistory)`
    SELECT ${deliveryColumns}, COALESCE(h.history, '[]'::json) AS history FROM (
      SELECT *, row_number() OVER (PARTITION BY event_id
        ORDER BY created_at DESC, subscription_id DESC, redelivery DESC) AS nth
      FROM webhook_deliveries WHERE event_id = ANY (${ids})
    ) d
    LEFT JOIN LATERAL (
      SELECT json_agg(json_build_object(
          'attempted_at',
          to_char(a.attempted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'status_code', a.status_code, 'duration_ms', a.duration_ms, 'error', a.error)
        ORDER BY a.attempt) AS history
      FROM (
        SELECT * FROM webhook_delivery_attempts a
        WHERE a.event_id = d.event_id AND a.subscription_id = d.subscription_id
          AND a.redelivery = d.redelivery
        ORDER BY a.attempt DESC LIMIT ${HISTORY_ATTEMPTS}
      ) a
    ) h ON true
    WHERE nth <= ${EVENT_DELIVERIES}
    ORDER BY created_at, subscription_id, redelivery`);
  return events.map((e) => ({
    ...e,
    deliveries: rows.filter((d) => d.event_id === e.id),
  }));
}

/** Redeliveries of one event to one subscription in any 24 hours (docs/api.md, "Webhooks"). */
export const REDELIVERIES_PER_DAY = 5;

export type Redeliveries =
  | { targets: readonly Required<DeliveryTarget>[] }
  | { capped: { subscriptionId: string; retryAfterSeconds: number } };

/**
 * New deliveries of one event, numbered on per (event, subscription), started inside the same
 * transaction so that a failed start leaves none unattempted; one subscription capped: none.
 */
export async function insertRedeliveries(
  pool: CommonQueryMethods & Pick<DatabaseTransactionConnection, 'transaction'>,
  eventId: string,
  subscriptionIds: readonly string[],
  start: (targets: readonly Required<DeliveryTarget>[]) => Promise<void>,
): Promise<Redeliveries> {
  if (subscriptionIds.length === 0) return { targets: [] };
  return pool.transaction(async (trx) => {
    // Redeliveries of one event wait for each other, so two never take the same number.
    await trx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtext(${`redeliver:${eventId}`}))`);
    const subscriptions = sql.array(subscriptionIds, 'uuid');
    // Counted under the lock, so that racing requests cannot pass the cap together.
    const capped = await trx.maybeOne(sql.type(
      z.object({ subscriptionId: z.string(), retryAfterSeconds: z.number() }),
    )`
      SELECT subscription_id AS "subscriptionId", greatest(1, ceil(extract(epoch FROM
        min(created_at) + interval '1 day' - now())))::int AS "retryAfterSeconds"
      FROM webhook_deliveries
      WHERE event_id = ${eventId} AND subscription_id = ANY (${subscriptions})
        AND redelivery > 0 AND created_at > now() - interval '1 day'
      GROUP BY subscription_id HAVING count(*) >= ${REDELIVERIES_PER_DAY}
      ORDER BY subscription_id LIMIT 1`);
    if (capped) return { capped };
    const targets = await trx.any(sql.type(
      z.object({ eventId: z.string(), subscriptionId: z.string(), redelivery: z.number() }),
    )`
      INSERT INTO webhook_deliveries (event_id, subscription_id, redelivery)
      SELECT ${eventId}, s.id, coalesce(
        (SELECT max(redelivery) + 1 FROM webhook_deliveries d
         WHERE d.event_id = ${eventId} AND d.subscription_id = s.id), 1)
      FROM unnest(${subscriptions}::uuid[]) AS s (id)
      RETURNING event_id AS "eventId", subscription_id AS "subscriptionId", redelivery`);
    await start(targets);
    return { targets };
  });
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
