import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { IDEMPOTENCY_TTL_HOURS } from '../db/idempotency';

/** Housekeeping: rate-limit windows that have ended, idempotency keys past their 24 hours. */
export function createMaintenanceActivities(deps: { pool: DatabasePool }) {
  async function pruneExpiredRows(): Promise<{
    rateLimitWindows: number;
    idempotencyKeys: number;
  }> {
    const windows = await deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      WITH gone AS (DELETE FROM rate_limit_counters WHERE window_start < now() - interval '2 minutes' RETURNING 1)
      SELECT count(*)::int AS n FROM gone`);
    // A key still in progress after twice its lifetime belongs to a request that died; its
    // payment's workflow has long finished or been retried under the same id.
    const keys = await deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      WITH gone AS (
        DELETE FROM idempotency_keys
        WHERE created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
          AND (response_status IS NOT NULL OR created_at < now() - make_interval(hours => ${2 * IDEMPOTENCY_TTL_HOURS}))
        RETURNING 1)
      SELECT count(*)::int AS n FROM gone`);
    return { rateLimitWindows: windows, idempotencyKeys: keys };
  }
  return { pruneExpiredRows };
}
