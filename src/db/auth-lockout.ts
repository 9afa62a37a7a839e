import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

/**
 * Failed authentications per scope (`admin_api`, the dashboard's sign-in, ...) and client
 * address, counted in Postgres so that every API process shares them: `limit` failures within
 * `windowSeconds` lock the address out of that scope for `lockSeconds`, whatever it sends then.
 */
export type LockoutPolicy = { limit: number; windowSeconds: number; lockSeconds: number };

export const DEFAULT_LOCKOUT: LockoutPolicy = {
  limit: 5,
  windowSeconds: 15 * 60,
  lockSeconds: 15 * 60,
};

const seconds = z.object({ seconds: z.number().nullable() });
const windowOf = (policy: LockoutPolicy) => `${policy.windowSeconds} seconds`;

/** Seconds until the address may try again, or null when it is not locked out. */
export async function lockedUntil(
  db: CommonQueryMethods,
  scope: string,
  address: string,
): Promise<number | null> {
  return db.maybeOneFirst(sql.type(z.object({ seconds: z.number() }))`
    SELECT greatest(1, ceil(extract(epoch FROM (locked_until - now()))))::int AS seconds
    FROM auth_lockouts
    WHERE scope = ${scope} AND address = ${address} AND locked_until > now()`);
}

/** An attempt admitted (its id, to settle), or the seconds the address must wait. */
export type Admission = { attempt: string } | { retryAfter: number };

/**
 * Admits one authentication attempt, counted as a failure before it is checked, under a lock of
 * the scope and address, so never more than `limit` are checked in a window, concurrent ones
 * included. Refused while locked out, or while failures and attempts in flight fill the window.
 */
export async function admitAttempt(
  db: CommonQueryMethods,
  scope: string,
  address: string,
  policy: LockoutPolicy = DEFAULT_LOCKOUT,
): Promise<Admission> {
  return db.transaction(async (trx) => {
    // Attempts from one address queue here; another address's rarely shares the key.
    await trx.query(sql.unsafe`
      SELECT pg_advisory_xact_lock(hashtextextended(${`${scope}\n${address}`}, 0))`);
    const locked = await lockedUntil(trx, scope, address);
    if (locked !== null) return { retryAfter: locked };
    // A statement after the lock: it sees every attempt admitted before this one.
    const full = await trx.oneFirst(sql.type(seconds)`
      WITH counted AS (
        SELECT failed_at FROM auth_failures
        WHERE scope = ${scope} AND address = ${address}
          AND failed_at > now() - ${windowOf(policy)}::interval)
      SELECT CASE WHEN count(*) >= ${policy.limit} THEN greatest(1, ceil(extract(epoch FROM
        (min(failed_at) + ${windowOf(policy)}::interval - now()))))::int END AS seconds
      FROM counted`);
    if (full !== null) return { retryAfter: full };
    await trx.query(sql.unsafe`
      DELETE FROM auth_failures
      WHERE scope = ${scope} AND address = ${address}
        AND failed_at <= now() - ${windowOf(policy)}::interval`);
    const attempt = await trx.oneFirst(sql.type(z.object({ id: z.string() }))`
      INSERT INTO auth_failures (scope, address) VALUES (${scope}, ${address})
      RETURNING id::text`);
    return { attempt };
  });
}

/**
 * Settles an admitted attempt. A success forgets that attempt alone: the address's other
 * failures stay, so that one valid account cannot reset the count between guesses. A failure
 * stays counted; returns the seconds of the lockout it started, or null.
 */
export async function settleAttempt(
  db: CommonQueryMethods,
  scope: string,
  address: string,
  attempt: string,
  failed: boolean,
  policy: LockoutPolicy = DEFAULT_LOCKOUT,
): Promise<number | null> {
  if (!failed) {
    await db.query(sql.unsafe`DELETE FROM auth_failures WHERE id = ${attempt}::bigint`);
    return null;
  }
  return db.maybeOneFirst(sql.type(z.object({ seconds: z.number() }))`
    WITH failures AS (
      SELECT count(*) AS n FROM auth_failures
      WHERE scope = ${scope} AND address = ${address}
        AND failed_at > now() - ${windowOf(policy)}::interval)
    INSERT INTO auth_lockouts AS l (scope, address, locked_until)
    SELECT ${scope}, ${address}, now() + ${`${policy.lockSeconds} seconds`}::interval
    FROM failures WHERE n >= ${policy.limit}
    ON CONFLICT (scope, address) DO UPDATE SET locked_until = EXCLUDED.locked_until
    RETURNING ${policy.lockSeconds}::int AS seconds`);
}

/** Forgets an address's failures and lifts its lockout (an operator). */
export async function clear(db: CommonQueryMethods, scope: string, address: string): Promise<void> {
  await db.query(
    sql.unsafe`DELETE FROM auth_failures WHERE scope = ${scope} AND address = ${address}`,
  );
  await db.query(
    sql.unsafe`DELETE FROM auth_lockouts WHERE scope = ${scope} AND address = ${address}`,
  );
}
