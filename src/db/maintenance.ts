import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { IDEMPOTENCY_TTL_HOURS } from './idempotency';

const count = z.object({ n: z.number() });

/** Deletes rate-limit windows that have ended, of every kind of caller; returns how many. */
export async function pruneRateLimitWindows(db: CommonQueryMethods): Promise<number> {
  return db.oneFirst(sql.type(count)`
    WITH credentials AS (DELETE FROM rate_limit_counters WHERE window_start < now() - interval '2 minutes' RETURNING 1),
      admins AS (DELETE FROM admin_rate_limit_counters WHERE window_start < now() - interval '2 minutes' RETURNING 1),
      subjects AS (DELETE FROM throttle_counters WHERE window_start < now() - interval '2 minutes' RETURNING 1)
    SELECT (SELECT count(*) FROM credentials)::int + (SELECT count(*) FROM admins)::int
      + (SELECT count(*) FROM subjects)::int AS n`);
}

/** Deletes idempotency keys past their lifetime; returns how many. */
export async function pruneIdempotencyKeys(db: CommonQueryMethods): Promise<number> {
  // A key still in progress after twice its lifetime belongs to a request that died; its
  // payment's workflow has long finished or been retried under the same id.
  return db.oneFirst(sql.type(count)`
    WITH gone AS (
      DELETE FROM idempotency_keys
      WHERE created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
        AND (response_status IS NOT NULL OR created_at < now() - make_interval(hours => ${2 * IDEMPOTENCY_TTL_HOURS}))
      RETURNING 1)
    SELECT count(*)::int AS n FROM gone`);
}
