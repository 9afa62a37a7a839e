import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

/** A payment the reconciliation looks at: still pending past the grace period. */
export type StalePayment = { id: string; transactionType: string };

/**
 * Payments of `types` still `pending` `graceSeconds` after they were created, oldest first, at
 * most `limit` (the partial index `transactions_pending_idx` serves it).
 */
export async function findStalePendingPayments(
  db: CommonQueryMethods,
  options: { types: readonly string[]; graceSeconds: number; limit: number },
): Promise<StalePayment[]> {
  if (options.types.length === 0) return [];
  const rows = await db.any(sql.type(z.object({ id: z.string(), transactionType: z.string() }))`
    SELECT id, transaction_type AS "transactionType"
    FROM transactions
    WHERE status = 'pending'
      AND transaction_type = ANY(${sql.array([...options.types], 'text')})
      AND created_at < now() - make_interval(secs => ${options.graceSeconds})
    ORDER BY created_at
    LIMIT ${options.limit}`);
  return [...rows];
}

/** What one reconciliation run did (the workflow's result, kept for operators). */
export type ReconciliationRunRecord = {
  workflowId: string;
  runId: string;
  startedAt: string;
  graceSeconds: number;
  paymentsChecked: number;
  changes: Array<{ transaction_id: string; transaction_type: string; from: string; to: string }>;
  errors: Array<{ transaction_id: string; error: string }>;
  notificationsRetried: number;
  notificationsMatched: number;
};

/** Records a run once (a retried activity writes nothing twice). */
export async function insertReconciliationRun(
  db: CommonQueryMethods,
  run: ReconciliationRunRecord,
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO reconciliation_runs (workflow_id, run_id, started_at, grace_seconds,
      payments_checked, payments_changed, notifications_retried, notifications_matched, changes,
      errors)
    VALUES (${run.workflowId}, ${run.runId}, ${run.startedAt}, ${run.graceSeconds},
      ${run.paymentsChecked}, ${run.changes.length}, ${run.notificationsRetried},
      ${run.notificationsMatched}, ${sql.jsonb(run.changes)}, ${sql.jsonb(run.errors)})
    ON CONFLICT (run_id) DO NOTHING`);
}

const runRow = z.object({
  workflow_id: z.string(),
  run_id: z.string(),
  payments_checked: z.number(),
  payments_changed: z.number(),
  notifications_retried: z.number(),
  notifications_matched: z.number(),
  changes: z.array(
    z.object({
      transaction_id: z.string(),
      transaction_type: z.string(),
      from: z.string(),
      to: z.string(),
    }),
  ),
});

/** The latest runs, newest first (operators; tests). */
export async function listReconciliationRuns(
  db: CommonQueryMethods,
  limit = 20,
): Promise<Array<z.infer<typeof runRow>>> {
  const rows = await db.any(sql.type(runRow)`
    SELECT workflow_id, run_id, payments_checked, payments_changed, notifications_retried,
      notifications_matched, changes
    FROM reconciliation_runs ORDER BY finished_at DESC LIMIT ${limit}`);
  return [...rows];
}
