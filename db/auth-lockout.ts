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

/**
 * Records one failed authentication; returns the seconds of the lockout it started, or null
 * when the address may still try. Failures older than the window are forgotten on the way.
 */
export async function recordFailure(
  db: CommonQueryMethods,
  scope: string,
  address: string,
  policy: LockoutPolicy = DEFAULT_LOCKOUT,
): Promise<number | null> {
  const window = `${policy.windowSeconds} seconds`;
  await db.query(sql.unsafe`
    DELETE FROM auth_failures
    WHERE scope = ${scope} AND address = ${address} AND failed_at <= now() - ${window}::interval`);
  await db.query(sql.unsafe`
    INSERT INTO auth_failures (scope, address) VALUES (${scope}, ${address})`);
  return db.maybeOneFirst(sql.type(z.object({ seconds: z.number() }))`
    WITH failures AS (
      SELECT count(*) AS n FROM auth_failures
      WHERE scope = ${scope} AND address = ${address} AND failed_at > now() - ${window}::interval)
    INSERT INTO auth_lockouts AS l (scope, address, locked_until)
    SELECT ${scope}, ${address}, now() + ${`${policy.lockSeconds} seconds`}::interval
    FROM failures WHERE n >= ${policy.limit}
    ON CONFLICT (scope, address) DO UPDATE SET locked_until = EXCLUDED.locked_until
    RETURNING ${policy.lockSeconds}::int AS seconds`);
}

/** Forgets an address's failures and lifts its lockout (a successful sign-in, an operator). */
export async function clear(db: CommonQueryMethods, scope: string, address: string): Promise<void> {
  await db.query(
    sql.unsafe`DELETE FROM auth_failures WHERE scope = ${scope} AND address = ${address}`,
  );
  await db.query(
    sql.unsafe`DELETE FROM auth_lockouts WHERE scope = ${scope} AND address = ${address}`,
  );
}
