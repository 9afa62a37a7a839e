import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { Config } from '../config';
import { workflowIds } from '../workflows/ids';
import { maintenanceWorkflow } from '../workflows/maintenance';
import { dailyReconciliationWorkflow } from '../workflows/provider-reconciliation';
import { reconciliationWorkflow } from '../workflows/reconciliation';

export const MAINTENANCE_SCHEDULE_ID = workflowIds.maintenance;
export const RECONCILIATION_SCHEDULE_ID = workflowIds.reconciliation;
export const RECON_DAILY_SCHEDULE_ID = workflowIds.reconDaily;

/** The default reconciliation interval (RECONCILIATION_INTERVAL_SECONDS). */
const DEFAULT_RECONCILIATION: Pick<Config['reconciliation'], 'intervalSeconds'> = {
  intervalSeconds: 5 * 60,
};

/**
 * Creates the engine's schedules once (on the maintenance queue); an existing schedule is left as
 * it is but for its task queue, moved to `taskQueue` when it names another.
 */
export async function ensureSchedules(
  client: Client,
  taskQueue: string,
  reconciliation: Pick<Config['reconciliation'], 'intervalSeconds'> = DEFAULT_RECONCILIATION,
): Promise<void> {
  await createOnce(client, MAINTENANCE_SCHEDULE_ID, taskQueue, () =>
    client.schedule.create({
      scheduleId: MAINTENANCE_SCHEDULE_ID,
      spec: { intervals: [{ every: '5 minutes' }] },
      action: { type: 'startWorkflow', workflowType: maintenanceWorkflow, taskQueue, args: [] },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    }),
  );
  await ensureReconciliationSchedule(client, taskQueue, reconciliation);
  await createOnce(client, RECON_DAILY_SCHEDULE_ID, taskQueue, () =>
    client.schedule.create({
      scheduleId: RECON_DAILY_SCHEDULE_ID,
      // Past midnight UTC, so that the previous day's late bookings are in the providers' books.
      spec: { calendars: [{ hour: 1, minute: 0 }], timezone: 'UTC' },
      action: {
        type: 'startWorkflow',
        workflowType: dailyReconciliationWorkflow,
        workflowId: RECON_DAILY_SCHEDULE_ID,
        taskQueue,
        args: [],
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP },
    }),
  );
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
  await createOnce(client, scheduleId, taskQueue, () =>
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

async function createOnce(
  client: Client,
  scheduleId: string,
  taskQueue: string,
  create: () => Promise<unknown>,
): Promise<void> {
  try {
    await create();
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    await moveToQueue(client, scheduleId, taskQueue);
  }
}

/** A schedule created before maintenance had its own queue starts its runs there from now on. */
async function moveToQueue(client: Client, scheduleId: string, taskQueue: string): Promise<void> {
  const handle = client.schedule.getHandle(scheduleId);
  const { action } = await handle.describe();
  if (action.type !== 'startWorkflow' || action.taskQueue === taskQueue) return;
  await handle.update((schedule) => ({ ...schedule, action: { ...action, taskQueue } }));
}
