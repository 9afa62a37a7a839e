import { pruneIdempotencyKeys, pruneRateLimitWindows } from '../db/maintenance';
import type { DatabasePool } from '../db/pool';

/** Housekeeping: rate-limit windows that have ended, idempotency keys past their 24 hours. */
export function createMaintenanceActivities(deps: { pool: DatabasePool }) {
  async function pruneExpiredRows(): Promise<{
    rateLimitWindows: number;
    idempotencyKeys: number;
  }> {
    const rateLimitWindows = await pruneRateLimitWindows(deps.pool);
    const idempotencyKeys = await pruneIdempotencyKeys(deps.pool);
    return { rateLimitWindows, idempotencyKeys };
  }
  return { pruneExpiredRows };
}
