import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import type { Caller } from '../domain/types';
import { countStatement, type RateLimitHit, type RowVersions } from './rate-limit';
import { jsonbValue, prepare } from './pool';

export const IDEMPOTENCY_TTL_HOURS = 24;

const keyRow = z.object({
  request_hash: z.instanceof(Buffer),
  response_status: z.number().nullable(),
  response_body: z.unknown(),
  fresh: z.boolean(),
  created_at: z.string(),
});

/**
 * `claimedAt` identifies this use of the key: ids derived from the key include it, so that a
 * key reused after 24 hours starts a new payment instead of finding the old one.
 */
export type ClaimResult =
  | { kind: 'claimed'; claimedAt: string }
  | { kind: 'mismatch' }
  | { kind: 'in_progress'; claimedAt: string }
  | { kind: 'replay'; status: number; body: unknown };

/**
 * Lock first: claims the key before anything else happens. A key older than 24 hours is
 * taken over as new. A concurrent duplicate sees the row the first one inserted.
 */
export async function claimIdempotencyKey(
  db: CommonQueryMethods,
  caller: Caller,
  key: string,
  requestHash: Buffer,
): Promise<ClaimResult> {
  // A claim that races an insert committed after this statement's snapshot finds no row; the
  // next attempt sees it.
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const result = await tryClaim(db, caller, key, requestHash);
    if (result) return result;
  }
  throw new Error('idempotency key could not be claimed or read');
}

/**
 * The CTEs `claimed` (this request's claim, if it takes the key) and `found` (that claim, or
 * else the key's existing row), made only where `admitted` holds.
 */
function claimCtes(caller: Caller, key: string, requestHash: Buffer, admitted: FragmentSqlToken) {
  return sql.fragment`
    claimed AS (
      INSERT INTO idempotency_keys (application_id, mode, key, request_hash)
      SELECT ${caller.applicationId}::uuid, ${caller.mode}::text, ${key}::text,
        ${sql.binary(requestHash)}::bytea
      WHERE ${admitted}
      ON CONFLICT (application_id, mode, key) DO UPDATE
        SET request_hash = EXCLUDED.request_hash, response_status = NULL, response_body = NULL,
            created_at = now(), completed_at = NULL
        WHERE idempotency_keys.created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
      RETURNING request_hash, response_status, response_body, true AS fresh, created_at
    ),
    found AS (
      SELECT * FROM claimed
      UNION ALL
      SELECT request_hash, response_status, response_body, false AS fresh, created_at
      FROM idempotency_keys
      WHERE application_id = ${caller.applicationId} AND mode = ${caller.mode} AND key = ${key}
        AND NOT EXISTS (SELECT 1 FROM claimed) AND ${admitted}
      LIMIT 1
    )`;
}

function claimResult(row: z.infer<typeof keyRow>, requestHash: Buffer): ClaimResult {
  if (row.fresh) return { kind: 'claimed', claimedAt: row.created_at };
  if (!row.request_hash.equals(requestHash)) return { kind: 'mismatch' };
  if (row.response_status === null) return { kind: 'in_progress', claimedAt: row.created_at };
  return { kind: 'replay', status: row.response_status, body: row.response_body };
}

async function tryClaim(
  db: CommonQueryMethods,
  caller: Caller,
  key: string,
  requestHash: Buffer,
): Promise<ClaimResult | null> {
  const row = await db.maybeOne(
    prepare(sql.type(keyRow)`
      WITH ${claimCtes(caller, key, requestHash, sql.fragment`true`)}
      SELECT * FROM found`),
  );
  return row && claimResult(row, requestHash);
}

const countedKeyRow = z.object({
  count: z.number(),
  retryAfterSeconds: z.number(),
  request_hash: z.instanceof(Buffer).nullable(),
  response_status: z.number().nullable(),
  response_body: z.unknown(),
  fresh: z.boolean().nullable(),
  created_at: z.string().nullable(),
});

/**
 * Counts a request against its rate limit and, within `limit`, claims its key as
 * `claimIdempotencyKey` does, in one statement. Null when `versions` changed (nothing counted or
 * claimed); `claim` is null over the limit, or when it raced another's insert (settled there).
 */
export async function countAndClaim(
  db: CommonQueryMethods,
  counting: { credentialId: string; category: string; versions: RowVersions | undefined },
  limit: number,
  caller: Caller,
  key: string,
  requestHash: Buffer,
): Promise<{ hit: RateLimitHit; claim: ClaimResult | null } | null> {
  const admitted = sql.fragment`(SELECT count FROM hit) <= ${limit}`;
  const row = await db.maybeOne(
    prepare(sql.type(countedKeyRow)`
      WITH hit AS (${countStatement(counting.credentialId, counting.category, counting.versions)}),
      ${claimCtes(caller, key, requestHash, admitted)}
      SELECT hit.count, hit."retryAfterSeconds", found.* FROM hit LEFT JOIN found ON true`),
  );
  if (!row) return null;
  const { count, retryAfterSeconds, request_hash, fresh, created_at } = row;
  const hit = { count, retryAfterSeconds };
  if (request_hash === null || fresh === null || created_at === null) return { hit, claim: null };
  return { hit, claim: claimResult({ ...row, request_hash, fresh, created_at }, requestHash) };
}

/** One use of an Idempotency-Key: whose key it is, and when this use of it was claimed. */
export type KeyUse = { applicationId: string; mode: string; key: string; claimedAt?: string };

/** Stores the first response; later writers of the same result change nothing. */
export async function completeIdempotencyKey(
  db: CommonQueryMethods,
  caller: Caller,
  key: string,
  status: number,
  body: unknown,
): Promise<void> {
  await db.query(sql.unsafe`UPDATE idempotency_keys SET ${answerOf(status, body)}
    WHERE ${unanswered({ applicationId: caller.applicationId, mode: caller.mode, key })}`);
}

/**
 * `completeIdempotencyKey` as a part of another statement's WITH (its `body` JSON or a jsonb
 * expression), so a money step stores the answer in the transaction that writes the payment.
 * Only the use claimed at `claimedAt` is answered: a key taken over after 24 hours is another's.
 */
export function answerKeyPart(
  use: KeyUse,
  status: number,
  body: unknown,
  guard?: FragmentSqlToken,
): FragmentSqlToken {
  return sql.fragment`key_answered AS (
    UPDATE idempotency_keys SET ${answerOf(status, body)} WHERE ${unanswered(use)}${
      guard ? sql.fragment` AND ${guard}` : sql.fragment``
    })`;
}

function answerOf(status: number, body: unknown): FragmentSqlToken {
  return sql.fragment`response_status = ${status},
    response_body = ${jsonbValue(body)}, completed_at = now()`;
}

/** The key's row while it has no answer; `claimedAt` is the claim's time to the millisecond. */
function unanswered(use: KeyUse): FragmentSqlToken {
  return sql.fragment`application_id = ${use.applicationId} AND mode = ${use.mode}
    AND key = ${use.key} AND response_status IS NULL${
      use.claimedAt === undefined
        ? sql.fragment``
        : sql.fragment` AND date_trunc('milliseconds', created_at) = ${use.claimedAt}::timestamptz`
    }`;
}
