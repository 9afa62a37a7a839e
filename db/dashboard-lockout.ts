import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

/**
 * The per-address lockout of dashboard sign-in: `limit` failures from one address within
 * `windowSeconds` lock it out until `windowSeconds` after the last of them. Counted in Postgres,
 * so that every API process shares it.
 */
export type LockoutPolicy = { limit: number; windowSeconds: number };

/** Seconds until the address may try again, or null when it is not locked out. */
export async function lockedOutFor(
  db: CommonQueryMethods,
  address: string,
  policy: LockoutPolicy,
): Promise<number | null> {
  const row = await db.one(sql.type(
    z.object({ failures: z.number(), wait: z.number().nullable() }),
  )`
    SELECT count(*)::int AS failures,
      ceil(extract(epoch FROM max(failed_at) + make_interval(secs => ${policy.windowSeconds}) - now()))::int AS wait
    FROM dashboard_sign_in_failures
    WHERE address = ${address} AND failed_at > now() - make_interval(secs => ${policy.windowSeconds})`);
  return row.failures >= policy.limit ? Math.max(1, row.wait ?? 1) : null;
}

/** Records a failure; answers the lockout that now applies (null when not yet locked out). */
export async function recordSignInFailure(
  db: CommonQueryMethods,
  address: string,
  policy: LockoutPolicy,
): Promise<number | null> {
  await db.query(sql.unsafe`
    DELETE FROM dashboard_sign_in_failures
    WHERE address = ${address} AND failed_at <= now() - make_interval(secs => ${policy.windowSeconds})`);
  await db.query(sql.unsafe`INSERT INTO dashboard_sign_in_failures (address) VALUES (${address})`);
  return lockedOutFor(db, address, policy);
}
