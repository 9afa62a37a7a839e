import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Config } from '../config';
import { workflowIds } from '../workflows/ids';
import { maintenanceWorkflow } from '../workflows/maintenance';
import { reconciliationWorkflow } from '../workflows/reconciliation';

export const MAINTENANCE_SCHEDULE_ID = workflowIds.maintenance;
export const RECONCILIATION_SCHEDULE_ID = workflowIds.reconciliation;

/** The default reconciliation interval (RECONCILIATION_INTERVAL_SECONDS). */
const DEFAULT_RECONCILIATION: Pick<Config['reconciliation'], 'intervalSeconds'> = {
  intervalSeconds: 5 * 60,
};

/** Creates the engine's schedules once; an existing schedule is left as it is. */
export async function ensureSchedules(
  client: Client,
  taskQueue: string,
  reconciliation: Pick<Config['reconciliation'], 'intervalSeconds'> = DEFAULT_RECONCILIATION,
): Promise<void> {
  await createOnce(() =>
    client.schedule.create({
      scheduleId: MAINTENANCE_SCHEDULE_ID,
      spec: { intervals: [{ every: '5 minutes' }] },
      action: { type: 'startWorkflow', workflowType: maintenanceWorkflow, taskQueue, args: [] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    }),
  );
  await ensureReconciliationSchedule(client, taskQueue, reconciliation);
}

/**
 * The `reconciliation` schedule: a run every `intervalSeconds`, a run still going when the next
 * is due makes that one skipped (overlap SKIP). `scheduleId` is for tests sharing a server.
 */
export async function ensureReconciliationSchedule(
  client: Client,
  taskQueue: string,
  reconciliation: Pick<Config['reconciliation'], 'intervalSeconds'>,
  scheduleId: string = RECONCILIATION_SCHEDULE_ID,
): Promise<void> {
  await createOnce(() =>
    client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: `${reconciliation.intervalSeconds} seconds` }] },
      action: {
        type: 'startWorkflow',
        workflowType: reconciliationWorkflow,
        workflowId: scheduleId,
        taskQueue,
        args: [{}],
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    }),
  );
}

async function createOnce(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
}
