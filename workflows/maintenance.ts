import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from './activities-types';
import { activityPresets } from './retry';

const { pruneExpiredRows } = proxyActivities<Activities>(activityPresets.maintenance);

/** Run by the `maintenance` schedule every few minutes. */
export async function maintenanceWorkflow(): Promise<{
  rateLimitWindows: number;
  idempotencyKeys: number;
}> {
  return pruneExpiredRows();
}
