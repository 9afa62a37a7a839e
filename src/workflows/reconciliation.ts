import { patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from './activities-types';
import { activityPresets } from './retry';

const steps = proxyActivities<Activities>(activityPresets.reconciliation);

type PaymentChange = { transaction_id: string; transaction_type: string; from: string; to: string };

export type ReconciliationInput = {
  /** Overrides the configured grace period (seconds) for this run. */
  graceSeconds?: number;
};

/** What a run did; also kept in the table `reconciliation_runs`. */
export type ReconciliationResult = {
  graceSeconds: number;
  paymentsChecked: number;
  changes: PaymentChange[];
  errors: Array<{ transaction_id: string; error: string }>;
  notificationsRetried: number;
  notificationsMatched: number;
};

/**
 * Run by the `reconciliation` schedule: syncs each stale pending payment through its workflow's
 * `sync` update (at most `concurrency` at once), retries unmatched notifications, syncs open Live
 * Mode disputes and records what changed; one payment's error does not stop the others.
 */
export async function reconciliationWorkflow(
  input: ReconciliationInput = {},
): Promise<ReconciliationResult> {
  const startedAt = new Date().toISOString();
  const plan = await steps.findStalePayments({ graceSeconds: input.graceSeconds ?? null });
  const changes: PaymentChange[] = [];
  const errors: ReconciliationResult['errors'] = [];
  let next = 0;
  async function lane(): Promise<void> {
    while (next < plan.payments.length) {
      const payment = plan.payments[next]!;
      next += 1;
      try {
        const change = await steps.reconcilePayment({ transactionId: payment.id });
        if (change.from !== change.to) changes.push(change);
      } catch (error) {
        errors.push({ transaction_id: payment.id, error: reason(error) });
      }
    }
  }
  const lanes = Math.min(plan.concurrency, plan.payments.length);
  await Promise.all(Array.from({ length: lanes }, lane));
  const notifications = await steps.retryUnmatchedNotifications();
  // Runs recorded before disputes existed did not ask about them.
  if (patched('dispute-sync')) await steps.syncOpenDisputes();
  const result: ReconciliationResult = {
    graceSeconds: plan.graceSeconds,
    paymentsChecked: plan.payments.length,
    changes,
    errors,
    notificationsRetried: notifications.retried,
    notificationsMatched: notifications.matched,
  };
  await steps.recordReconciliationRun({ startedAt, ...result });
  return result;
}

/** An activity's failure says "Activity task failed"; its cause says why. */
function reason(error: unknown): string {
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}
