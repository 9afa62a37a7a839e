import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Mode } from '../domain/types';
import { insertWithinCap } from './caps';
import type { ExpiringMemory } from '../cache/bounded';
import { countAndClaim, type ClaimResult } from './idempotency';
import { hitRateLimit, type RateLimitHit, type RowVersions } from './rate-limit';

/**
 * Credentials are random (192 bits for the key, 256 for the secret), so one SHA-256 is the right
 * hash at rest: nothing to brute-force, and cheap for every request. Only hashes are stored; the
 * API key hash is the lookup index and the secret hash is compared in constant time.
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

/**
 * Creates a credential; with `cap` (config `caps.credentials`), only while the application and
 * mode hold fewer active ones (src/db/caps.ts, CapReachedError).
 */
export async function createCredential(
  db: CommonQueryMethods,
  input: { applicationId: string; mode: Mode; expiresAt?: string | null; cap?: number },
): Promise<CreatedCredential> {
  const { apiKey, secretKey } = generateCredentialPair(input.mode);
  const insert = (trx: CommonQueryMethods) =>
    trx.one(sql.type(z.object({ id: z.string(), expires_at: z.string().nullable() }))`
      INSERT INTO credentials (id, application_id, mode, api_key_hash, api_key_hint, secret_hash, expires_at)
      VALUES (${randomUUID()}, ${input.applicationId}, ${input.mode}, ${sql.binary(sha256(apiKey))},
              ${apiKeyHint(apiKey)}, ${sql.binary(sha256(secretKey))}, ${input.expiresAt ?? null})
      RETURNING id, expires_at`);
  const row =
    input.cap === undefined
      ? await insert(db)
      : await insertWithinCap(db, 'credentials', input, input.cap, insert);
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
): Promise<{
  id: string;
  application_id: string;
  api_key: string;
  mode: Mode;
  status: 'revoked';
} | null> {
  const row = await db.maybeOne(sql.type(
    z.object({
      id: z.string(),
      application_id: z.string(),
      api_key_hint: z.string(),
      mode: z.enum(['test', 'live']),
    }),
  )`
    UPDATE credentials SET revoked_at = coalesce(revoked_at, now())
    WHERE api_key_hash = ${sql.binary(sha256(apiKey))}
    RETURNING id, application_id, api_key_hint, mode`);
  if (!row) return null;
  const { api_key_hint: hint, ...rest } = row;
  return { ...rest, api_key: hint, status: 'revoked' };
}

const listedCredential = z.object({
  api_key: z.string(),
  mode: z.enum(['test', 'live']),
  status: z.enum(['active', 'revoked', 'expired']),
  last_used: z.string().nullable(),
  expires_at: z.string().nullable(),
  created_at: z.string(),
});

/** A credential as lists show it: its hint, never the key, and its status now. */
export const listedCredentialColumns = sql.fragment`api_key_hint AS api_key, mode,
  CASE WHEN revoked_at IS NOT NULL THEN 'revoked'
       WHEN expires_at IS NOT NULL AND expires_at <= now() THEN 'expired'
       ELSE 'active' END AS status,
  last_used, expires_at, created_at`;

/** The row schema of `listedCredentialColumns`, plus the credential's id. */
export const listedCredentialWithId = z.object({ id: z.string(), ...listedCredential.shape });

export async function listCredentials(db: CommonQueryMethods, applicationId: string) {
  return db.any(sql.type(listedCredential)`
    SELECT ${listedCredentialColumns}
    FROM credentials WHERE application_id = ${applicationId}
    ORDER BY created_at, id`);
}

const authRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  secret_hash: z.instanceof(Buffer),
  revoked: z.boolean(),
  expires_at: z.string().nullable(),
  last_used: z.string().nullable(),
  rate_limits: z.record(z.string(), z.number()),
  /** The row versions (`xmin`) of the credential and its application this was read from. */
  versions: z.object({ credential: z.string(), application: z.string() }),
});
/** A credential as authentication needs it; what src/cache/credential-cache.ts keeps. */
export type CredentialRecord = z.infer<typeof authRow>;

export type AuthRefusal = { ok: false; reason: 'invalid' | 'revoked' | 'expired' };
export type AuthResult =
  | {
      ok: true;
      credentialId: string;
      applicationId: string;
      mode: Mode;
      rateLimits: Record<string, number>;
      /** Set when answered from memory: what the request's rate-limit count must confirm. */
      unconfirmed?: CredentialRecord['versions'];
    }
  | AuthRefusal;

// A stand-in compared against when the key is unknown, so that both paths cost the same.
const DUMMY_HASH = sha256('no such credential');

/** How often `last_used` is written per credential, at most. */
const LAST_USED_EVERY_MS = 60_000;

function readCredential(db: CommonQueryMethods, keyHash: Buffer) {
  return db.maybeOne(sql.type(authRow)`
    SELECT c.id, c.application_id, c.mode, c.secret_hash, c.revoked_at IS NOT NULL AS revoked,
      c.expires_at, c.last_used, a.rate_limits,
      json_build_object('credential', c.xmin::text, 'application', a.xmin::text) AS versions
    FROM credentials c JOIN applications a ON a.id = c.application_id
    WHERE c.api_key_hash = ${sql.binary(keyHash)}`);
}

/** Why a record refuses this secret now, if it does (the secret compared in constant time). */
function refusal(row: CredentialRecord | null, secretKey: string, now: number) {
  const matches = timingSafeEqual(row?.secret_hash ?? DUMMY_HASH, sha256(secretKey));
  if (!row || !matches) return 'invalid';
  if (row.revoked) return 'revoked';
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now) return 'expired';
  return null;
}

/**
 * Authenticates an API key and secret; records `last_used` at most once a minute per credential.
 * A credential found in `cache` is not read again, but the result names the row versions the
 * caller must confirm (`authenticateAndCount` does); a refusal is always read from the database.
 */
export async function authenticate(
  db: CommonQueryMethods,
  apiKey: string,
  secretKey: string,
  cache?: ExpiringMemory<CredentialRecord>,
  { fromDatabase = false }: { fromDatabase?: boolean } = {},
): Promise<AuthResult> {
  const keyHash = sha256(apiKey);
  const cacheKey = keyHash.toString('hex');
  const now = Date.now();
  if (fromDatabase) cache?.forget(cacheKey);
  let row = cache?.get(cacheKey);
  // Memory may be older than a change that would now accept the credential: read it again.
  if (row && refusal(row, secretKey, now)) row = undefined;
  const cached = row !== undefined;
  row ??= (await readCredential(db, keyHash)) ?? undefined;
  const refused = refusal(row ?? null, secretKey, now);
  if (!row || refused) return { ok: false, reason: refused ?? 'invalid' };
  if (!cached) cache?.set(cacheKey, row);
  if (row.last_used === null || now - Date.parse(row.last_used) > LAST_USED_EVERY_MS) {
    // Written only over the version this record was read from, whose new version it then knows;
    // if the row changed meanwhile, the record is out of date and forgotten.
    row.last_used = new Date(now).toISOString();
    const written = await db.maybeOneFirst(sql.type(z.object({ xmin: z.string() }))`
      UPDATE credentials SET last_used = now()
      WHERE id = ${row.id} AND xmin = ${row.versions.credential}::xid
      RETURNING xmin::text`);
    if (written === null) {
      if (cached) return authenticate(db, apiKey, secretKey, cache, { fromDatabase: true });
      cache?.forget(cacheKey);
    } else {
      row.versions = { ...row.versions, credential: written };
    }
  }
  return {
    ok: true,
    credentialId: row.id,
    applicationId: row.application_id,
    mode: row.mode,
    rateLimits: row.rate_limits,
    ...(cached ? { unconfirmed: row.versions } : {}),
  };
}

/** An accepted credential, as `authenticate` answers it. */
export type Authenticated = Extract<AuthResult, { ok: true }>;

/**
 * An idempotency key to claim in the statement that counts its request (src/db/idempotency.ts
 * `countAndClaim`), if the count is within `limit`.
 */
export type Admission = { key: string; requestHash: Buffer; limit: number };

/**
 * Authenticates a request and counts it against its rate limit for `category`; the count confirms
 * an answer from memory, or counts nothing and the credential is read again. A key `admit` names is
 * claimed in the same statement (`claim` null: over the limit, or left to `claimIdempotencyKey`).
 */
export async function authenticateAndCount(
  db: CommonQueryMethods,
  apiKey: string,
  secretKey: string,
  category: string,
  cache?: ExpiringMemory<CredentialRecord>,
  admit?: (credential: Authenticated) => Admission | null,
): Promise<(Authenticated & { hit: RateLimitHit; claim?: ClaimResult | null }) | AuthRefusal> {
  const result = await authenticate(db, apiKey, secretKey, cache);
  if (!result.ok) return result;
  const counted = await count(db, result, category, result.unconfirmed, admit);
  if (counted) return { ...result, ...counted };
  const fresh = await authenticate(db, apiKey, secretKey, cache, { fromDatabase: true });
  if (!fresh.ok) return fresh;
  const recounted = await count(db, fresh, category, undefined, admit);
  if (!recounted) throw new Error('a request counted without row versions found no counter');
  return { ...fresh, ...recounted };
}

/** The count of `authenticateAndCount`, with its claim when `admit` names a key. */
async function count(
  db: CommonQueryMethods,
  credential: Authenticated,
  category: string,
  versions: RowVersions | undefined,
  admit: ((credential: Authenticated) => Admission | null) | undefined,
): Promise<{ hit: RateLimitHit; claim?: ClaimResult | null } | null> {
  const admission = admit?.(credential) ?? null;
  if (!admission) {
    const hit = await hitRateLimit(db, credential.credentialId, category, versions);
    return hit && { hit };
  }
  const { credentialId, applicationId, mode } = credential;
  return countAndClaim(
    db,
    { credentialId, category, versions },
    admission.limit,
    { applicationId, mode, credentialId },
    admission.key,
    admission.requestHash,
  );
}
