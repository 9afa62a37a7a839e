import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from './activities-types';

const { pruneExpiredRows } = proxyActivities<Activities>({ startToCloseTimeout: '1 minute' });

/** Run by the `maintenance` schedule every few minutes. */
export async function maintenanceWorkflow(): Promise<{
  rateLimitWindows: number;
  idempotencyKeys: number;
}> {
  return pruneExpiredRows();
}
