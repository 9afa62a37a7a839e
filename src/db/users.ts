import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { Caller } from '../domain/types';
import { disputeIsOpen } from './disputes';
import { metadataContains, metadataMerge } from './metadata';
import { pageTotal } from './pages';

export const userRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  app_user_id: z.string(),
  name: z.string(),
  phone_number: z.string(),
  email: z.string().nullable(),
  username: z.string().nullable(),
  is_active: z.boolean(),
  metadata: z.record(z.string(), z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});
export type UserRow = z.infer<typeof userRow>;

const columns = sql.fragment`id, application_id, mode, app_user_id, name, phone_number, email, username, is_active, metadata, created_at, updated_at`;

/** The unique index that keeps an email to one user per application and mode. */
export const USERS_EMAIL_UNIQUE = 'users_email_unique';

export async function insertUser(
  db: CommonQueryMethods,
  caller: Caller,
  input: {
    app_user_id: string;
    name: string;
    phone_number: string;
    email: string | null;
    username: string | null;
    is_active: boolean;
    metadata?: Readonly<Record<string, string>>;
  },
): Promise<UserRow> {
  return db.one(sql.type(userRow)`
    INSERT INTO users (id, application_id, mode, app_user_id, name, phone_number, email, username, is_active, metadata)
    VALUES (${randomUUID()}, ${caller.applicationId}, ${caller.mode}, ${input.app_user_id}, ${input.name},
            ${input.phone_number}, ${input.email}, ${input.username}, ${input.is_active}, ${sql.jsonb(input.metadata ?? {})})
    RETURNING ${columns}`);
}

/** A user by id, whatever its application: the caller decides between 403 and 404. */
export async function findUser(db: CommonQueryMethods, id: string): Promise<UserRow | null> {
  return db.maybeOne(sql.type(userRow)`SELECT ${columns} FROM users WHERE id = ${id}`);
}

export async function lockUser(
  trx: DatabaseTransactionConnection,
  id: string,
): Promise<UserRow | null> {
  return trx.maybeOne(sql.type(userRow)`SELECT ${columns} FROM users WHERE id = ${id} FOR UPDATE`);
}

/**
 * Merges `patch` into the user's metadata in one statement (src/db/metadata.ts); null when the user
 * is gone or the merged metadata would break the key limit, which the caller tells apart.
 */
export async function mergeUserMetadata(
  db: CommonQueryMethods,
  id: string,
  patch: Readonly<Record<string, string | null>>,
): Promise<UserRow | null> {
  const merge = metadataMerge(patch);
  return db.maybeOne(sql.type(userRow)`
    UPDATE users SET metadata = ${merge.set}, updated_at = now()
    WHERE id = ${id} AND ${merge.fits}
    RETURNING ${columns}`);
}

/** The filters of the user list (docs/api.md, Metadata). */
export type UserFilter = {
  is_active?: boolean | undefined;
  /** Exact, case-insensitive (emails are unique so, src/db/migrations/0001_platform.sql). */
  email?: string | undefined;
  phone_number?: string | undefined;
  app_user_id?: string | undefined;
  /** Case-insensitive substring of the name, email, phone number or app_user_id. */
  q?: string | undefined;
  /** `metadata[KEY]=VALUE`: the user's metadata holds each pair exactly. */
  metadata?: Readonly<Record<string, string>> | undefined;
};

/** `text` as a LIKE pattern that matches it anywhere, its wildcards taken literally. */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export async function listUsers(
  db: CommonQueryMethods,
  caller: Caller,
  filter: UserFilter,
  page: { limit: number; offset: number },
): Promise<{ rows: readonly UserRow[]; total: number }> {
  const parts = [sql.fragment`application_id = ${caller.applicationId} AND mode = ${caller.mode}`];
  if (filter.is_active !== undefined) parts.push(sql.fragment`is_active = ${filter.is_active}`);
  if (filter.email !== undefined) {
    parts.push(sql.fragment`lower(email) = lower(${filter.email})`);
  }
  if (filter.phone_number !== undefined) {
    parts.push(sql.fragment`phone_number = ${filter.phone_number}`);
  }
  if (filter.app_user_id !== undefined) {
    parts.push(sql.fragment`app_user_id = ${filter.app_user_id}`);
  }
  if (filter.q !== undefined) {
    const pattern = containing(filter.q);
    parts.push(sql.fragment`(name ILIKE ${pattern} OR email ILIKE ${pattern}
      OR phone_number ILIKE ${pattern} OR app_user_id ILIKE ${pattern})`);
  }
  if (filter.metadata && Object.keys(filter.metadata).length > 0) {
    parts.push(metadataContains(sql.identifier(['metadata']), filter.metadata));
  }
  const where = sql.fragment`${sql.join(parts, sql.fragment` AND `)}`;
  const total = await pageTotal(db, sql.fragment`users`, where, page);
  const rows = await db.any(sql.type(userRow)`
    SELECT ${columns} FROM users WHERE ${where}
    ORDER BY created_at, id LIMIT ${page.limit} OFFSET ${page.offset}`);
  return { rows, total };
}

export async function setUserActive(
  trx: DatabaseTransactionConnection,
  id: string,
  active: boolean,
): Promise<void> {
  await trx.query(
    sql.unsafe`UPDATE users SET is_active = ${active}, updated_at = now() WHERE id = ${id}`,
  );
  await trx.query(
    sql.unsafe`UPDATE wallets SET is_active = ${active}, updated_at = now() WHERE user_id = ${id}`,
  );
}

/**
 * Why a user cannot be erased yet, or null: money in the wallet, a payment or a dispute still
 * open. The wallet is locked by a statement of its own, so the reads see what a money step
 * holding that lock committed (a dispute's opening takes it too).
 */
export async function blockerToDelete(
  trx: DatabaseTransactionConnection,
  userId: string,
): Promise<string | null> {
  const locked = await trx.any(sql.type(z.object({ id: z.string() }))`
    SELECT a.id FROM wallets w JOIN ledger_accounts a ON a.id = w.id
    WHERE w.user_id = ${userId}
    FOR NO KEY UPDATE OF a`);
  if (locked.length === 0) return null;
  const state = await trx.one(sql.type(
    z.object({ balance: z.bigint(), open_payments: z.number(), open_disputes: z.number() }),
  )`
    SELECT a.balance,
      (SELECT count(*)::int FROM transactions t
        WHERE (t.wallet_id = w.id OR t.recipient_wallet_id = w.id) AND t.status IN ('pending', 'held')) AS open_payments,
      (SELECT count(*)::int FROM disputes d
        WHERE d.wallet_id = w.id AND ${disputeIsOpen}) AS open_disputes
    FROM wallets w JOIN ledger_accounts a ON a.id = w.id
    WHERE w.user_id = ${userId}`);
  if (state.balance !== 0n) return 'The user cannot be deleted while their wallet holds money';
  if (state.open_payments > 0) {
    return 'The user cannot be deleted while an escrow hold or a payment is still open';
  }
  if (state.open_disputes > 0) {
    return 'The user cannot be deleted while a dispute of their wallet is still open';
  }
  return null;
}

/**
 * Erases the user and the personal data kept of them outside their row (docs/temporal-codec.md,
 * Deleting a user); their payments keep amounts and ids, as the ledger must add up. The wallet,
 * its payout account and identity documents go with the user (ON DELETE CASCADE).
 */
export async function deleteUser(trx: DatabaseTransactionConnection, id: string): Promise<void> {
  const payments = sql.fragment`
    SELECT t.id, t.provider_reference FROM transactions t JOIN wallets w
      ON w.id = t.wallet_id OR w.id = t.recipient_wallet_id
    WHERE w.user_id = ${id}`;
  // Merchant metadata may hold personal data: it goes too, the disputes' included; a refund's
  // older rows kept it inside `metadata`, hence `- 'metadata'`.
  await trx.query(sql.unsafe`
    WITH payment AS (${payments}),
    notification AS (
      UPDATE provider_notifications SET body = '{}'::jsonb
      WHERE (transaction_id IN (SELECT id FROM payment)
          OR payment_reference IN (SELECT provider_reference FROM payment))
        AND body <> '{}'::jsonb
    ),
    sandbox_payout AS (
      UPDATE sandbox_mobile_money_payouts SET phone_number = '', updated_at = now()
      WHERE reference IN (SELECT id::text FROM payment) AND phone_number <> ''
    ),
    dispute AS (
      UPDATE disputes SET metadata = '{}'::jsonb, updated_at = now()
      WHERE wallet_id IN (SELECT id FROM wallets WHERE user_id = ${id}) AND metadata <> '{}'::jsonb
    )
    UPDATE transactions SET
      metadata = CASE WHEN metadata ? 'destination'
        THEN jsonb_set(metadata, '{destination}', '{}'::jsonb) - 'metadata' ELSE metadata END,
      merchant_metadata = '{}'::jsonb
    WHERE id IN (SELECT id FROM payment)
      AND (metadata ? 'destination' OR merchant_metadata <> '{}'::jsonb)`);
  await trx.query(sql.unsafe`DELETE FROM users WHERE id = ${id}`);
}
