import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Caller } from '../domain/types';
import { insertWithinCap } from './caps';
import { pageTotal } from './pages';
import type { DatabasePool, DatabaseTransactionConnection } from './pool';

export const webhookSubscriptionRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  url: z.string(),
  events: z.array(z.string()).readonly(),
  is_active: z.boolean(),
  /** AES-256-GCM sealed `whsec_` secret, bound to the id (src/crypto/secret-box.ts). */
  secret_sealed: z.string(),
  /** The secret a rotation replaced, sealed bound to `previousSecretBinding(id)`, until expiry. */
  previous_secret_sealed: z.string().nullable(),
  previous_secret_expires_at: z.string().nullable(),
  /** The first failed attempt since the last 2xx or since it was turned on again. */
  failing_since: z.string().nullable(),
  disabled_reason: z.enum(['failing']).nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type WebhookSubscriptionRow = z.infer<typeof webhookSubscriptionRow>;

const columns = sql.fragment`id, application_id, mode, url, events, is_active, secret_sealed,
  previous_secret_sealed, previous_secret_expires_at, failing_since, disabled_reason,
  created_at, updated_at`;

/** What the previous secret is sealed bound to: never the value the current one is bound to. */
export const previousSecretBinding = (id: string) => `${id}:previous`;

/** Why a delivery stopped when its subscription was turned off as failing. */
export const TURNED_OFF = 'Subscription turned off: every delivery failed for 72 hours';

/** How long every delivery failed before the subscription is turned off (docs/api.md, Webhooks). */
export const FAILING_FOR_MS = 72 * 60 * 60 * 1000;

/**
 * Inserts a subscription; with `cap` (config `caps.webhookSubscriptions`), only while the
 * application and mode hold fewer (src/db/caps.ts, CapReachedError).
 */
export async function insertWebhookSubscription(
  db: CommonQueryMethods,
  caller: Caller,
  input: {
    id: string;
    url: string;
    events: readonly string[];
    is_active: boolean;
    secret_sealed: string;
  },
  cap?: number,
): Promise<WebhookSubscriptionRow> {
  const insert = (trx: CommonQueryMethods) =>
    trx.one(sql.type(webhookSubscriptionRow)`
      INSERT INTO webhook_subscriptions (id, application_id, mode, url, events, is_active, secret_sealed)
      VALUES (${input.id}, ${caller.applicationId}, ${caller.mode}, ${input.url},
              ${sql.array(input.events, 'text')}, ${input.is_active}, ${input.secret_sealed})
      RETURNING ${columns}`);
  return cap === undefined
    ? insert(db)
    : insertWithinCap(db, 'webhook_subscriptions', caller, cap, insert);
}

/** A subscription by id, whatever its application: the caller decides between 403 and 404. */
export async function findWebhookSubscription(
  db: CommonQueryMethods,
  id: string,
): Promise<WebhookSubscriptionRow | null> {
  return db.maybeOne(
    sql.type(webhookSubscriptionRow)`SELECT ${columns} FROM webhook_subscriptions WHERE id = ${id}`,
  );
}

export async function listWebhookSubscriptions(
  db: CommonQueryMethods,
  caller: Caller,
  page: { limit: number; offset: number },
): Promise<{ rows: readonly WebhookSubscriptionRow[]; total: number }> {
  const where = sql.fragment`application_id = ${caller.applicationId} AND mode = ${caller.mode}`;
  const total = await pageTotal(db, sql.fragment`webhook_subscriptions`, where, page);
  const rows = await db.any(sql.type(webhookSubscriptionRow)`
    SELECT ${columns} FROM webhook_subscriptions WHERE ${where}
    ORDER BY created_at, id LIMIT ${page.limit} OFFSET ${page.offset}`);
  return { rows, total };
}

/**
 * A delivery's subscription as an attempt reads it, with the delivery's own status in the same
 * round trip (`failed` before an attempt: it was stopped, by the subscription turned off).
 */
export async function findSubscriptionForDelivery(
  db: CommonQueryMethods,
  target: { eventId: string; subscriptionId: string; redelivery?: number },
): Promise<(WebhookSubscriptionRow & { delivery_status: string | null }) | null> {
  return db.maybeOne(sql.type(
    webhookSubscriptionRow.extend({ delivery_status: z.string().nullable() }),
  )`
    SELECT ${columns}, (
      SELECT d.status FROM webhook_deliveries d
      WHERE d.event_id = ${target.eventId} AND d.subscription_id = ${target.subscriptionId}
        AND d.redelivery = ${target.redelivery ?? 0}) AS delivery_status
    FROM webhook_subscriptions WHERE id = ${target.subscriptionId}`);
}

/** The caller's active subscriptions that select events of `type`, oldest first. */
export async function listActiveSubscriptionsFor(
  db: CommonQueryMethods,
  caller: Caller,
  type: string,
): Promise<readonly WebhookSubscriptionRow[]> {
  return db.any(sql.type(webhookSubscriptionRow)`
    SELECT ${columns} FROM webhook_subscriptions
    WHERE application_id = ${caller.applicationId} AND mode = ${caller.mode} AND is_active
      AND ${type} = ANY (events)
    ORDER BY created_at, id`);
}

/**
 * Edits in place; the secret is never touched here. Null when the row is gone. Turning it on
 * clears why it was turned off and starts the failing clock again.
 */
export async function updateWebhookSubscription(
  db: CommonQueryMethods,
  id: string,
  changes: { url?: string; events?: readonly string[]; is_active?: boolean },
): Promise<WebhookSubscriptionRow | null> {
  return db.maybeOne(sql.type(webhookSubscriptionRow)`
    UPDATE webhook_subscriptions SET
      url = coalesce(${changes.url ?? null}::text, url),
      events = coalesce(${changes.events ? sql.array(changes.events, 'text') : null}::text[], events),
      is_active = coalesce(${changes.is_active ?? null}::boolean, is_active),
      disabled_reason = CASE WHEN ${changes.is_active ?? null}::boolean THEN NULL
        ELSE disabled_reason END,
      failing_since = CASE WHEN ${changes.is_active ?? null}::boolean AND NOT is_active THEN NULL
        ELSE failing_since END,
      updated_at = now()
    WHERE id = ${id}
    RETURNING ${columns}`);
}

/**
 * Replaces a sealed secret by the same secret sealed anew (a legacy value bound to its id), only
 * while the row still holds `previous`, so a concurrent change is never overwritten.
 */
export async function resealWebhookSecret(
  db: CommonQueryMethods,
  id: string,
  previous: string,
  next: string,
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE webhook_subscriptions SET secret_sealed = ${next}
    WHERE id = ${id} AND secret_sealed = ${previous}`);
}

export async function deleteWebhookSubscription(db: CommonQueryMethods, id: string): Promise<void> {
  await db.query(sql.unsafe`DELETE FROM webhook_subscriptions WHERE id = ${id}`);
}

/**
 * A new secret; the one it replaces is kept (sealed by the caller) until `previousExpiresInS`
 * seconds from now, or dropped at once when that is 0. Null when the row is gone or no longer
 * holds `was` (another rotation came first: read it again).
 */
export async function rotateWebhookSecret(
  db: CommonQueryMethods,
  id: string,
  sealed: { was: string; current: string; previous: string },
  previousExpiresInS: number,
): Promise<WebhookSubscriptionRow | null> {
  const keep = previousExpiresInS > 0;
  return db.maybeOne(sql.type(webhookSubscriptionRow)`
    UPDATE webhook_subscriptions SET
      secret_sealed = ${sealed.current},
      previous_secret_sealed = ${keep ? sealed.previous : null},
      previous_secret_expires_at = ${
        keep ? sql.fragment`now() + ${previousExpiresInS} * interval '1 second'` : null
      },
      updated_at = now()
    WHERE id = ${id} AND secret_sealed = ${sealed.was}
    RETURNING ${columns}`);
}

/** Erases every previous secret past its expiry (or only `id`'s); answers how many. */
export async function eraseExpiredPreviousSecrets(
  db: CommonQueryMethods,
  id?: string,
): Promise<number> {
  const result = await db.query(sql.unsafe`
    UPDATE webhook_subscriptions
    SET previous_secret_sealed = NULL, previous_secret_expires_at = NULL
    WHERE previous_secret_expires_at <= now() AND (${id ?? null}::uuid IS NULL OR id = ${id ?? null}::uuid)`);
  return result.rowCount;
}

/**
 * After a delivery attempt: a 2xx stops the failing clock; a failure starts it, and turns the
 * subscription off (`failing`) once it has run for FAILING_FOR_MS. Answers whether it did.
 */
export async function noteDeliveryOutcome(
  db: DatabasePool | DatabaseTransactionConnection,
  id: string,
  ok: boolean,
): Promise<{ disabled: boolean }> {
  if (ok) {
    await db.query(sql.unsafe`
      UPDATE webhook_subscriptions SET failing_since = NULL
      WHERE id = ${id} AND failing_since IS NOT NULL`);
    return { disabled: false };
  }
  return db.transaction(async (trx) => {
    const row = await trx.maybeOne(sql.type(z.object({ disabled: z.boolean() }))`
    UPDATE webhook_subscriptions s SET
      failing_since = coalesce(s.failing_since, now()),
      is_active = NOT off.due,
      disabled_reason = CASE WHEN off.due THEN 'failing' ELSE s.disabled_reason END,
      updated_at = CASE WHEN off.due THEN now() ELSE s.updated_at END
    FROM (SELECT coalesce(s2.failing_since <= now() - ${FAILING_FOR_MS} * interval '1 millisecond',
                          false) AS due
          FROM webhook_subscriptions s2 WHERE s2.id = ${id}) off
    WHERE s.id = ${id} AND s.is_active
    RETURNING off.due AS disabled`);
    const disabled = row?.disabled ?? false;
    if (disabled) {
      // Its deliveries still waiting stop here, so turning it on again sends nothing by itself.
      await trx.query(sql.unsafe`
      UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL,
        last_error = ${TURNED_OFF}, updated_at = now()
      WHERE subscription_id = ${id} AND status = 'pending'`);
    }
    return { disabled };
  });
}
