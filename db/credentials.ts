import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Mode } from '../domain/types';

/**
 * Credentials are random (192 bits for the key, 256 for the secret), so a single SHA-256 is
 * the right hash at rest: nothing to brute-force, and cheap enough for every request. Only
 * hashes are stored; the API key hash is the lookup index and the secret hash is compared in
 * constant time.
 */
export function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

export function generateCredentialPair(mode: Mode): { apiKey: string; secretKey: string } {
  const tag = mode === 'test' ? 'test' : 'live';
  return {
    apiKey: `pk_${tag}_${randomBytes(24).toString('base64url')}`,
    secretKey: `sk_${tag}_${randomBytes(32).toString('base64url')}`,
  };
}

/** What `credentials list` shows of a key: enough to recognise it, not enough to use it. */
export function apiKeyHint(apiKey: string): string {
  return `${apiKey.slice(0, 12)}…${apiKey.slice(-4)}`;
}

export type CreatedCredential = {
  id: string;
  api_key: string;
  secret_key: string;
  mode: Mode;
  expires_at: string | null;
};

export async function createCredential(
  db: CommonQueryMethods,
  input: { applicationId: string; mode: Mode; expiresAt?: string | null },
): Promise<CreatedCredential> {
  const { apiKey, secretKey } = generateCredentialPair(input.mode);
  const row = await db.one(sql.type(
    z.object({ id: z.string(), expires_at: z.string().nullable() }),
  )`
    INSERT INTO credentials (id, application_id, mode, api_key_hash, api_key_hint, secret_hash, expires_at)
    VALUES (${randomUUID()}, ${input.applicationId}, ${input.mode}, ${sql.binary(sha256(apiKey))},
            ${apiKeyHint(apiKey)}, ${sql.binary(sha256(secretKey))}, ${input.expiresAt ?? null})
    RETURNING id, expires_at`);
  return {
    id: row.id,
    api_key: apiKey,
    secret_key: secretKey,
    mode: input.mode,
    expires_at: row.expires_at,
  };
}

export async function revokeCredential(
  db: CommonQueryMethods,
  apiKey: string,
): Promise<{ api_key: string; mode: Mode; status: 'revoked' } | null> {
  const row = await db.maybeOne(sql.type(
    z.object({ api_key_hint: z.string(), mode: z.enum(['test', 'live']) }),
  )`
    UPDATE credentials SET revoked_at = coalesce(revoked_at, now())
    WHERE api_key_hash = ${sql.binary(sha256(apiKey))}
    RETURNING api_key_hint, mode`);
  return row && { api_key: row.api_key_hint, mode: row.mode, status: 'revoked' };
}

const listedCredential = z.object({
  api_key: z.string(),
  mode: z.enum(['test', 'live']),
  status: z.enum(['active', 'revoked', 'expired']),
  last_used: z.string().nullable(),
  expires_at: z.string().nullable(),
  created_at: z.string(),
});

export async function listCredentials(db: CommonQueryMethods, applicationId: string) {
  return db.any(sql.type(listedCredential)`
    SELECT api_key_hint AS api_key, mode,
      CASE WHEN revoked_at IS NOT NULL THEN 'revoked'
           WHEN expires_at IS NOT NULL AND expires_at <= now() THEN 'expired'
           ELSE 'active' END AS status,
      last_used, expires_at, created_at
    FROM credentials WHERE application_id = ${applicationId}
    ORDER BY created_at, id`);
}

const authRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  secret_hash: z.instanceof(Buffer),
  revoked: z.boolean(),
  expired: z.boolean(),
  stale_last_used: z.boolean(),
  rate_limits: z.record(z.string(), z.number()),
});

export type AuthResult =
  | {
      ok: true;
      credentialId: string;
      applicationId: string;
      mode: Mode;
      rateLimits: Record<string, number>;
    }
  | { ok: false; reason: 'invalid' | 'revoked' | 'expired' };

// A stand-in compared against when the key is unknown, so that both paths cost the same.
const DUMMY_HASH = sha256('no such credential');

/** Authenticates an API key and secret; records `last_used` at most once a minute per credential. */
export async function authenticate(
  db: CommonQueryMethods,
  apiKey: string,
  secretKey: string,
): Promise<AuthResult> {
  const row = await db.maybeOne(sql.type(authRow)`
    SELECT c.id, c.application_id, c.mode, c.secret_hash,
      c.revoked_at IS NOT NULL AS revoked,
      (c.expires_at IS NOT NULL AND c.expires_at <= now()) AS expired,
      (c.last_used IS NULL OR c.last_used < now() - interval '1 minute') AS stale_last_used,
      a.rate_limits
    FROM credentials c JOIN applications a ON a.id = c.application_id
    WHERE c.api_key_hash = ${sql.binary(sha256(apiKey))}`);
  const matches = timingSafeEqual(row?.secret_hash ?? DUMMY_HASH, sha256(secretKey));
  if (!row || !matches) return { ok: false, reason: 'invalid' };
  if (row.revoked) return { ok: false, reason: 'revoked' };
  if (row.expired) return { ok: false, reason: 'expired' };
  if (row.stale_last_used) {
    await db.query(sql.unsafe`UPDATE credentials SET last_used = now() WHERE id = ${row.id}`);
  }
  return {
    ok: true,
    credentialId: row.id,
    applicationId: row.application_id,
    mode: row.mode,
    rateLimits: row.rate_limits,
  };
}
