import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Caller } from '../domain/types';
import { insertWithinCap } from './caps';
import { pageTotal } from './pages';

export const webhookSubscriptionRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  url: z.string(),
  events: z.array(z.string()).readonly(),
  is_active: z.boolean(),
  /** AES-256-GCM sealed `whsec_` secret, bound to the id (outbound/secret-box.ts). */
  secret_sealed: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type WebhookSubscriptionRow = z.infer<typeof webhookSubscriptionRow>;

const columns = sql.fragment`id, application_id, mode, url, events, is_active, secret_sealed, created_at, updated_at`;

/**
 * Inserts a subscription; with `cap` (config `caps.webhookSubscriptions`), only while the
 * application and mode hold fewer (db/caps.ts, CapReachedError).
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

/** Edits in place; the secret is never touched here. Null when the row is gone. */
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
