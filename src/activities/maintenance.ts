import type { Config } from '../config';
import { pruneEventListeners } from '../db/event-listeners';
import { pruneIdempotencyKeys, pruneRateLimitWindows } from '../db/maintenance';
import type { DatabasePool } from '../db/pool';
import { purgeProviderNotifications } from '../db/provider-notifications';
import { eraseExpiredPreviousSecrets } from '../db/webhook-subscriptions';

/**
 * Housekeeping: rate-limit windows that have ended, idempotency keys past their 24 hours,
 * provider notifications past their retention, webhook secrets replaced by a rotation whose
 * overlap has ended, and `cli webhooks listen` registrations that expired.
 */
export function createMaintenanceActivities(deps: { pool: DatabasePool; config: Config }) {
  async function pruneExpiredRows(): Promise<{
    rateLimitWindows: number;
    idempotencyKeys: number;
    providerNotifications: number;
    webhookPreviousSecrets: number;
    eventListeners: number;
  }> {
    const rateLimitWindows = await pruneRateLimitWindows(deps.pool);
    const idempotencyKeys = await pruneIdempotencyKeys(deps.pool);
    const { notificationRetentionHours, notificationKeepDays } = deps.config.reconciliation;
    const providerNotifications = await purgeProviderNotifications(deps.pool, {
      retentionHours: notificationRetentionHours,
      keepDays: notificationKeepDays,
    });
    const webhookPreviousSecrets = await eraseExpiredPreviousSecrets(deps.pool);
    const eventListeners = await pruneEventListeners(deps.pool);
    return {
      rateLimitWindows,
      idempotencyKeys,
      providerNotifications,
      webhookPreviousSecrets,
      eventListeners,
    };
  }
  return { pruneExpiredRows };
}
