import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

export type RateLimitHit = { count: number; retryAfterSeconds: number };

const hitRow = z.object({ count: z.number(), retryAfterSeconds: z.number() });
const window = sql.fragment`date_trunc('minute', now())`;
const counted = sql.fragment`ON CONFLICT (credential_id, category, window_start) DO UPDATE SET count = c.count + 1
  RETURNING c.count,
    greatest(1, ceil(extract(epoch FROM (c.window_start + interval '1 minute' - now()))))::int AS "retryAfterSeconds"`;

/**
 * Fixed one-minute windows per credential and category, counted in Postgres so that every API
 * process shares them. Returns the count after this request and the seconds left in the window.
 * With `versions` (a credential answered from memory, db/credential-cache.ts), the request is
 * counted only if the credential's and its application's rows are still those versions, and
 * null is returned if either changed.
 */
export async function hitRateLimit(
  db: CommonQueryMethods,
  credentialId: string,
  category: string,
): Promise<RateLimitHit>;
export async function hitRateLimit(
  db: CommonQueryMethods,
  credentialId: string,
  category: string,
  versions: { credential: string; application: string } | undefined,
): Promise<RateLimitHit | null>;
export async function hitRateLimit(
  db: CommonQueryMethods,
  credentialId: string,
  category: string,
  versions?: { credential: string; application: string },
): Promise<RateLimitHit | null> {
  if (!versions) {
    return db.one(sql.type(hitRow)`
      INSERT INTO rate_limit_counters AS c (credential_id, category, window_start, count)
      VALUES (${credentialId}, ${category}, ${window}, 1)
      ${counted}`);
  }
  return db.maybeOne(sql.type(hitRow)`
    INSERT INTO rate_limit_counters AS c (credential_id, category, window_start, count)
    SELECT cr.id, ${category}, ${window}, 1
    FROM credentials cr JOIN applications a ON a.id = cr.application_id
    WHERE cr.id = ${credentialId}
      AND cr.xmin = ${versions.credential}::xid AND a.xmin = ${versions.application}::xid
    ${counted}`);
}
