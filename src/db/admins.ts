import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { apiKeyHint, sha256 } from './credentials';
import { hitKeyedRateLimit, type RateLimitHit } from './rate-limit';

/**
 * Platform admins: the operators, not applications. One credential each, in the same two
 * headers as the applications', told apart by its prefix and hashed the same way (SHA-256 of
 * random values; the secret compared in constant time).
 */
export const ADMIN_API_KEY_PREFIX = 'pk_admin_';

export type CreatedAdmin = {
  admin: { id: string; name: string };
  api_key: string;
  secret_key: string;
};

export async function createAdmin(db: CommonQueryMethods, name: string): Promise<CreatedAdmin> {
  const apiKey = `${ADMIN_API_KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
  const secretKey = `sk_admin_${randomBytes(32).toString('base64url')}`;
  const row = await db.one(sql.type(z.object({ id: z.string(), name: z.string() }))`
    INSERT INTO admins (id, name, api_key_hash, api_key_hint, secret_hash)
    VALUES (${randomUUID()}, ${name}, ${sql.binary(sha256(apiKey))}, ${apiKeyHint(apiKey)},
            ${sql.binary(sha256(secretKey))})
    RETURNING id, name`);
  return { admin: row, api_key: apiKey, secret_key: secretKey };
}

const listedAdmin = z.object({
  id: z.string(),
  name: z.string(),
  api_key: z.string(),
  status: z.enum(['active', 'revoked']),
  last_used: z.string().nullable(),
  created_at: z.string(),
});

export async function listAdmins(db: CommonQueryMethods) {
  return db.any(sql.type(listedAdmin)`
    SELECT id, name, api_key_hint AS api_key,
      CASE WHEN revoked_at IS NULL THEN 'active' ELSE 'revoked' END AS status,
      last_used, created_at
    FROM admins ORDER BY created_at, id`);
}

/** Revokes an admin's credential, by the admin's id or by its API key; null when none matches. */
export async function revokeAdmin(
  db: CommonQueryMethods,
  which: { id: string } | { apiKey: string },
): Promise<{ id: string; name: string; status: 'revoked' } | null> {
  const match =
    'id' in which
      ? sql.fragment`id = ${which.id}`
      : sql.fragment`api_key_hash = ${sql.binary(sha256(which.apiKey))}`;
  const row = await db.maybeOne(sql.type(z.object({ id: z.string(), name: z.string() }))`
    UPDATE admins SET revoked_at = coalesce(revoked_at, now()) WHERE ${match}
    RETURNING id, name`);
  return row && { ...row, status: 'revoked' };
}

const authRow = z.object({
  id: z.string(),
  secret_hash: z.instanceof(Buffer),
  revoked: z.boolean(),
  stale_last_used: z.boolean(),
});

const DUMMY_HASH = sha256('no such admin');

export type AdminAuthResult =
  { ok: true; adminId: string } | { ok: false; reason: 'invalid' | 'revoked' };

/** Authenticates an admin's key and secret; records `last_used` at most once a minute. */
export async function authenticateAdmin(
  db: CommonQueryMethods,
  apiKey: string,
  secretKey: string,
): Promise<AdminAuthResult> {
  const row = await db.maybeOne(sql.type(authRow)`
    SELECT id, secret_hash, revoked_at IS NOT NULL AS revoked,
      (last_used IS NULL OR last_used < now() - interval '1 minute') AS stale_last_used
    FROM admins WHERE api_key_hash = ${sql.binary(sha256(apiKey))}`);
  const matches = timingSafeEqual(row?.secret_hash ?? DUMMY_HASH, sha256(secretKey));
  if (!row || !matches) return { ok: false, reason: 'invalid' };
  if (row.revoked) return { ok: false, reason: 'revoked' };
  if (row.stale_last_used) {
    await db.query(sql.unsafe`UPDATE admins SET last_used = now() WHERE id = ${row.id}`);
  }
  return { ok: true, adminId: row.id };
}

/**
 * Fixed one-minute windows per admin and category, in Postgres like the applications' (an
 * admin is not a row of `credentials`, so its counters have their own table).
 */
export async function hitAdminRateLimit(
  db: CommonQueryMethods,
  adminId: string,
  category: string,
): Promise<RateLimitHit> {
  return hitKeyedRateLimit(db, 'admin_id', adminId, category);
}
