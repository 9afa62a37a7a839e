import { Context } from '@temporalio/activity';
import type { Config } from '../config';
import { listOpenProviderDisputes } from '../db/disputes';
import type { DatabasePool } from '../db/pool';
import {
  listUnmatchedNotifications,
  recordNotificationAttempt,
} from '../db/provider-notifications';
import {
  findStalePendingPayments,
  insertReconciliationRun,
  type ReconciliationRunRecord,
  type StalePayment,
} from '../db/reconciliation';
import { findTransaction } from '../db/transactions';
import {
  notificationTargets,
  resolveNotification,
  syncedPaymentTypes,
  syncPayment,
  unmatched,
  type NotificationKind,
  type TemporalDeps,
} from '../intake/notifications';
import type { ErrorLog } from '../intake/contradictions';
import { closeDispute } from '../intake/disputes';
import { reportUnapplied } from '../intake/unapplied';
import type { Providers } from '../providers';
import { taskQueueOf } from '../temporal/task-queues';

/** What a run of the reconciliation workflow found and did. */
export type ReconciliationPlan = {
  payments: StalePayment[];
  graceSeconds: number;
  concurrency: number;
};
export type PaymentChange = ReconciliationRunRecord['changes'][number];

/** At most this many payments and notifications per run; the next run takes the rest. */
const RUN_LIMIT = 500;

/** The `reconciliation` schedule's activities (src/workflows/reconciliation.ts). */
export function createReconciliationActivities(deps: {
  pool: DatabasePool;
  config: Config;
  providers: Providers;
}) {
  const { pool, config, providers } = deps;
  const logger: ErrorLog = {
    error: (fields, message) => {
      Context.current().log.error(message, fields);
    },
  };
  /** The worker's own Temporal client, for the payment workflows' updates. */
  const temporalDeps = (): TemporalDeps => ({
    pool,
    temporal: Context.current().client,
    timeoutMs: config.api.requestTimeoutMs,
    providers,
    logger,
    reconQueue: taskQueueOf(config, 'maintenance'),
  });

  /** Every payment a provider settles still pending past the grace period, oldest first. */
  async function findStalePayments(input: {
    graceSeconds: number | null;
  }): Promise<ReconciliationPlan> {
    const graceSeconds = input.graceSeconds ?? config.reconciliation.graceSeconds;
    const payments = await findStalePendingPayments(pool, {
      types: syncedPaymentTypes(),
      graceSeconds,
      limit: RUN_LIMIT,
    });
    return { payments, graceSeconds, concurrency: config.reconciliation.concurrency };
  }

  /** Syncs one payment with its provider; answers its status before and after. */
  async function reconcilePayment(input: { transactionId: string }): Promise<PaymentChange> {
    const row = await findTransaction(pool, input.transactionId);
    if (!row) throw new Error(`transaction ${input.transactionId} does not exist`);
    const to = await syncPayment(temporalDeps(), row);
    return {
      transaction_id: row.id,
      transaction_type: row.transaction_type,
      from: row.status,
      to,
    };
  }

  /** Tries every kept unmatched notification again; answers how many now reached a payment. */
  async function retryUnmatchedNotifications(): Promise<{ retried: number; matched: number }> {
    const kept = await listUnmatchedNotifications(pool, {
      retentionHours: config.reconciliation.notificationRetentionHours,
      limit: RUN_LIMIT,
    });
    let matched = 0;
    for (const note of kept) {
      if (!(note.kind in notificationTargets)) continue;
      // One that fails again (its payment's workflow too slow to answer, say) waits for the
      // next run; the others go on.
      const resolution = await resolveNotification(
        temporalDeps(),
        note.kind as NotificationKind,
        note,
      ).catch(() => unmatched);
      await recordNotificationAttempt(pool, note.id, resolution);
      if (resolution.unapplied) {
        const event = { ...note, transactionId: resolution.transactionId };
        reportUnapplied(logger, event, resolution.unapplied);
      }
      if (resolution.outcome === 'matched') matched += 1;
    }
    return { retried: kept.length, matched };
  }

  /**
   * Asks the provider about each open dispute it decides (Live Mode: one carrying its reference)
   * and closes those won or lost through each dispute's workflow, as `charge.dispute.closed` would.
   * One the provider cannot answer now waits for the next run.
   */
  async function syncOpenDisputes(): Promise<{ checked: number; closed: number }> {
    const open = await listOpenProviderDisputes(pool, RUN_LIMIT);
    const intake = { ...temporalDeps(), taskQueue: config.temporal.taskQueue };
    let closed = 0;
    for (const dispute of open) {
      // A provider not configured (it throws at once) or not answering: the next run asks.
      const status = await Promise.resolve()
        .then(() => providers.card(dispute.mode).getDisputeStatus(dispute.provider_reference!))
        .catch(() => null);
      if (status !== 'won' && status !== 'lost') continue;
      const after = await closeDispute(intake, { disputeId: dispute.id, status }).catch(() => null);
      if (after?.status === status) closed += 1;
    }
    return { checked: open.length, closed };
  }

  /** Keeps the run's result for operators (table `reconciliation_runs`). */
  async function recordReconciliationRun(
    run: Omit<ReconciliationRunRecord, 'workflowId' | 'runId'>,
  ): Promise<void> {
    const { workflowExecution, activityId } = Context.current().info;
    await insertReconciliationRun(pool, {
      ...run,
      workflowId: workflowExecution?.workflowId ?? activityId,
      runId: workflowExecution?.runId ?? activityId,
    });
  }

  return {
    findStalePayments,
    reconcilePayment,
    retryUnmatchedNotifications,
    syncOpenDisputes,
    recordReconciliationRun,
  };
}
