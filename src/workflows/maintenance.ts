import { patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from './activities-types';
import { activityPresets } from './retry';

const { pruneExpiredRows, ensureWebhookRelayRuns } = proxyActivities<Activities>(
  activityPresets.maintenance,
);

/** Run by the `maintenance` schedule every few minutes. */
export async function maintenanceWorkflow(): Promise<{
  rateLimitWindows: number;
  idempotencyKeys: number;
  /** Absent from runs recorded before provider notifications were purged. */
  providerNotifications?: number;
  /** Absent from runs recorded before rotated webhook secrets were erased. */
  webhookPreviousSecrets?: number;
  /** Absent from runs recorded before `cli webhooks listen` registered. */
  eventListeners?: number;
}> {
  const pruned = await pruneExpiredRows();
  // The webhook outbox relay is started again should it ever have stopped.
  if (patched('webhook-relay')) await ensureWebhookRelayRuns();
  return pruned;
}
