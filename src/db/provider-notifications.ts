import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

/**
 * What became of a provider's notification: handed on (`matched`), kept for the reconciliation
 * to retry (`unmatched`), one that moves no money (`ignored`), or money the engine could not move
 * (`unapplied`: kept for an operator, never purged; docs/operations.md).
 */
export type NotificationOutcome = 'matched' | 'unmatched' | 'ignored' | 'unapplied';

/** A provider's verified message as the engine read it: enough to deliver it again later. */
export type StoredNotification = {
  id: string;
  provider: string;
  /** Which payment workflows it can reach (`deposit`, `cardDeposit`, ...). */
  kind: string;
  mode: 'test' | 'live';
  paymentReference: string;
  /** Our transaction id as the provider's metadata carried it, or null. */
  reference: string | null;
  status: string;
  attempts: number;
};

/** Keeps a provider's notification as it came, verified, with what the engine made of it. */
export async function insertProviderNotification(
  db: CommonQueryMethods,
  n: {
    provider: string;
    kind: string;
    mode: 'test' | 'live';
    paymentReference: string;
    reference: string | null;
    status: string;
    transactionId: string | null;
    outcome: NotificationOutcome;
    body: unknown;
  },
): Promise<string> {
  const id = randomUUID();
  await db.query(sql.unsafe`
    INSERT INTO provider_notifications
      (id, provider, kind, mode, payment_reference, reference, status, transaction_id, outcome, body)
    VALUES (${id}, ${n.provider}, ${n.kind}, ${n.mode}, ${n.paymentReference}, ${n.reference},
      ${n.status}, ${n.transactionId}, ${n.outcome}, ${sql.jsonb(n.body as never)})`);
  return id;
}

const storedNotification = z.object({
  id: z.string(),
  provider: z.string(),
  kind: z.string(),
  mode: z.enum(['test', 'live']),
  paymentReference: z.string(),
  reference: z.string().nullable(),
  status: z.string(),
  attempts: z.number(),
});

/** Whether a notification is young enough for the reconciliation to retry (when unmatched). */
const stillRetried = (retentionHours: number) =>
  sql.fragment`received_at > now() - make_interval(hours => ${retentionHours})`;

/**
 * The unmatched notifications still worth another try (received within `retentionHours`),
 * oldest first, at most `limit`.
 */
export async function listUnmatchedNotifications(
  db: CommonQueryMethods,
  options: { retentionHours: number; limit: number },
): Promise<StoredNotification[]> {
  const rows = await db.any(sql.type(storedNotification)`
    SELECT id, provider, kind, mode, payment_reference AS "paymentReference", reference, status,
      attempts
    FROM provider_notifications
    WHERE outcome = 'unmatched' AND kind IS NOT NULL AND mode IS NOT NULL
      AND ${stillRetried(options.retentionHours)}
    ORDER BY received_at
    LIMIT ${options.limit}`);
  return [...rows];
}

/**
 * Deletes the notifications nobody needs any more; returns how many: an unmatched one once the
 * reconciliation has stopped retrying it (`retentionHours`), any other but `unapplied` after
 * `keepDays`: an operator settles those.
 */
export async function purgeProviderNotifications(
  db: CommonQueryMethods,
  options: { retentionHours: number; keepDays: number },
): Promise<number> {
  return db.oneFirst(sql.type(z.object({ n: z.number() }))`
    WITH gone AS (
      DELETE FROM provider_notifications
      WHERE (outcome = 'unmatched' AND NOT ${stillRetried(options.retentionHours)})
        OR (outcome <> 'unapplied' AND received_at < now() - make_interval(days => ${options.keepDays}))
      RETURNING 1)
    SELECT count(*)::int AS n FROM gone`);
}

/** Records another attempt at an unmatched notification and what came of it. */
export async function recordNotificationAttempt(
  db: CommonQueryMethods,
  id: string,
  result: { outcome: NotificationOutcome; transactionId: string | null },
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE provider_notifications
    SET outcome = ${result.outcome}, transaction_id = ${result.transactionId},
      attempts = attempts + 1, last_attempt_at = now()
    WHERE id = ${id} AND outcome = 'unmatched'`);
}

const notifiedPayment = z.object({
  id: z.string(),
  mode: z.enum(['test', 'live']),
  status: z.string(),
  providerReference: z.string().nullable(),
});

/**
 * The payment of `transactionType` a provider's message is about: the one with its reference,
 * else the one our transaction id (from the message's metadata) names; null when neither.
 */
export async function findNotifiedPayment(
  db: CommonQueryMethods,
  n: NotifiedPaymentKey,
): Promise<z.infer<typeof notifiedPayment> | null> {
  return db.maybeOne(notifiedPaymentQuery(n));
}

export type NotifiedPaymentKey = {
  transactionType: string;
  paymentReference: string;
  transactionId: string | null;
};

/**
 * Two index lookups, the reference's first (transactions_provider_reference_idx, then the
 * primary key): an `OR` of both, or the id compared as text, read every tenant's payments.
 */
export function notifiedPaymentQuery(n: NotifiedPaymentKey) {
  return sql.type(notifiedPayment)`
    SELECT id, mode, status, "providerReference" FROM (
      SELECT id, mode, status, provider_reference AS "providerReference", 0 AS rank
      FROM transactions
      WHERE provider_reference = ${n.paymentReference} AND transaction_type = ${n.transactionType}
      UNION ALL
      SELECT id, mode, status, provider_reference, 1
      FROM transactions
      WHERE id = ${n.transactionId}::uuid AND transaction_type = ${n.transactionType}
    ) found
    ORDER BY rank
    LIMIT 1`;
}
