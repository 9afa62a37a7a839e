import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { prepare } from './pool';

export type RateLimitHit = { count: number; retryAfterSeconds: number };
/** The row versions (`xmin`) of a credential and its application (src/cache/credential-cache.ts). */
export type RowVersions = { credential: string; application: string };

const hitRow = z.object({ count: z.number(), retryAfterSeconds: z.number() });
const window = sql.fragment`date_trunc('minute', now())`;
/** The seconds left in the window of counter `c`: when a refused request may try again. */
const retryAfter = sql.fragment`greatest(1, ceil(extract(epoch FROM (c.window_start + interval '1 minute' - now()))))::int AS "retryAfterSeconds"`;
/** The upsert's tail that counts one request in a table of counters keyed by `key` (aliased `c`). */
function counted(key: 'credential_id' | 'admin_id' | 'subject') {
  return sql.fragment`ON CONFLICT (${sql.identifier([key])}, category, window_start) DO UPDATE SET count = c.count + 1
  RETURNING c.count, ${retryAfter}`;
}

/**
 * Fixed one-minute windows per credential and category, counted in Postgres so that every API
 * process shares them. With `versions` (a credential answered from memory), the request is counted
 * only if the credential's and its application's rows are still those versions; else null.
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
  versions: RowVersions | undefined,
): Promise<RateLimitHit | null>;
export async function hitRateLimit(
  db: CommonQueryMethods,
  credentialId: string,
  category: string,
  versions?: RowVersions,
): Promise<RateLimitHit | null> {
  const statement = prepare(sql.type(hitRow)`${countStatement(credentialId, category, versions)}`);
  return versions ? db.maybeOne(statement) : db.one(statement);
}

/**
 * The statement that counts a request (`hitRateLimit`), for a statement of its own or a CTE of
 * a larger one (src/db/idempotency.ts `countAndClaim`): it returns the count and the seconds left,
 * or no row when `versions` are no longer the rows' versions.
 */
export function countStatement(
  credentialId: string,
  category: string,
  versions: RowVersions | undefined,
) {
  if (!versions) {
    return sql.fragment`
      INSERT INTO rate_limit_counters AS c (credential_id, category, window_start, count)
      VALUES (${credentialId}, ${category}, ${window}, 1)
      ${counted('credential_id')}`;
  }
  return sql.fragment`
    INSERT INTO rate_limit_counters AS c (credential_id, category, window_start, count)
    SELECT cr.id, ${category}, ${window}, 1
    FROM credentials cr JOIN applications a ON a.id = cr.application_id
    WHERE cr.id = ${credentialId}
      AND cr.xmin = ${versions.credential}::xid AND a.xmin = ${versions.application}::xid
    ${counted('credential_id')}`;
}

/**
 * The subject a dashboard session's requests are counted under (`hitKeyedRateLimit`): the
 * application and mode, as one caller, whichever account sends them.
 */
export const sessionSubject = (owner: { applicationId: string; mode: string }): string =>
  `session:${owner.applicationId}:${owner.mode}`;

/** The tables of the callers that are not credentials, by the column that names the caller. */
const KEYED_COUNTERS = {
  admin_id: 'admin_rate_limit_counters',
  subject: 'throttle_counters',
} as const;

/**
 * The same windows for a caller that no credential names: an admin (`admin_id`), or a client
 * address or dashboard account (`subject`). Returns the count after this request.
 */
export async function hitKeyedRateLimit(
  db: CommonQueryMethods,
  key: keyof typeof KEYED_COUNTERS,
  value: string,
  category: string,
): Promise<RateLimitHit> {
  return db.one(sql.type(hitRow)`
    INSERT INTO ${sql.identifier([KEYED_COUNTERS[key]])} AS c (${sql.identifier([key])}, category, window_start, count)
    VALUES (${value}, ${category}, ${window}, 1)
    ${counted(key)}`);
}

/** Whose counters `takeRateLimit` counts in: a credential's, or a subject's (a session's). */
export type RateLimitKey = { credentialId: string } | { subject: string };

/**
 * Counts up to `want` of a caller's category at once, within its `limit` a minute: how many it
 * counted, and the seconds left in the window. A bulk payment paces its items by it.
 */
export async function takeRateLimit(
  db: CommonQueryMethods,
  key: RateLimitKey,
  category: string,
  want: number,
  limit: number,
): Promise<{ taken: number; retryAfterSeconds: number }> {
  const [table, column, value] =
    'credentialId' in key
      ? (['rate_limit_counters', 'credential_id', key.credentialId] as const)
      : ([KEYED_COUNTERS.subject, 'subject', key.subject] as const);
  const counters = sql.identifier([table]);
  const keyColumn = sql.identifier([column]);
  return db.transaction(async (trx) => {
    await trx.query(sql.unsafe`
      INSERT INTO ${counters} (${keyColumn}, category, window_start, count)
      VALUES (${value}, ${category}, ${window}, 0)
      ON CONFLICT (${keyColumn}, category, window_start) DO NOTHING`);
    return trx.one(sql.type(z.object({ taken: z.number(), retryAfterSeconds: z.number() }))`
      UPDATE ${counters} c SET count = c.count + g.taken
      FROM (
        SELECT greatest(0, least(${want}::int, ${limit}::int - count)) AS taken
        FROM ${counters}
        WHERE ${keyColumn} = ${value} AND category = ${category}
          AND window_start = ${window}
        FOR UPDATE
      ) g
      WHERE c.${keyColumn} = ${value} AND c.category = ${category}
        AND c.window_start = ${window}
      RETURNING g.taken, ${retryAfter}`);
  });
}
