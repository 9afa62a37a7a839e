import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Caller } from '../domain/types';

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

async function tryClaim(
  db: CommonQueryMethods,
  caller: Caller,
  key: string,
  requestHash: Buffer,
): Promise<ClaimResult | null> {
  const row = await db.maybeOne(sql.type(keyRow)`
    WITH claimed AS (
      INSERT INTO idempotency_keys (application_id, mode, key, request_hash)
      VALUES (${caller.applicationId}, ${caller.mode}, ${key}, ${sql.binary(requestHash)})
      ON CONFLICT (application_id, mode, key) DO UPDATE
        SET request_hash = EXCLUDED.request_hash, response_status = NULL, response_body = NULL,
            created_at = now(), completed_at = NULL
        WHERE idempotency_keys.created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
      RETURNING request_hash, response_status, response_body, true AS fresh, created_at
    )
    SELECT * FROM claimed
    UNION ALL
    SELECT request_hash, response_status, response_body, false AS fresh, created_at FROM idempotency_keys
      WHERE application_id = ${caller.applicationId} AND mode = ${caller.mode} AND key = ${key}
        AND NOT EXISTS (SELECT 1 FROM claimed)
    LIMIT 1`);
  if (!row) return null;
  if (row.fresh) return { kind: 'claimed', claimedAt: row.created_at };
  if (!row.request_hash.equals(requestHash)) return { kind: 'mismatch' };
  if (row.response_status === null) return { kind: 'in_progress', claimedAt: row.created_at };
  return { kind: 'replay', status: row.response_status, body: row.response_body };
}

/** Stores the first response; later writers of the same result change nothing. */
export async function completeIdempotencyKey(
  db: CommonQueryMethods,
  caller: Caller,
  key: string,
  status: number,
  body: unknown,
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE idempotency_keys
    SET response_status = ${status}, response_body = ${sql.jsonb(body as never)}, completed_at = now()
    WHERE application_id = ${caller.applicationId} AND mode = ${caller.mode} AND key = ${key}
      AND response_status IS NULL`);
}
