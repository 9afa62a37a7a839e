/**
 * An operator's resolution of a stuck payment, for the admin endpoint and the command line: the
 * workflow's `resolve` validator has the last word (src/workflows/resolution.ts); the checks here only
 * spare it a request that the record already refuses.
 */
import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { findTransaction, type TransactionRow } from '../db/transactions';
import type { AuditEntry } from '../domain/audit';
import { workflowIds } from '../workflows/ids';
import {
  RESOLUTION_REFUSED,
  RESOLUTION_UNREACHABLE,
  resolutionRefusal,
  resolveUpdate,
  type Resolution,
} from '../workflows/resolution';
import { onWorkflow, paymentSyncs, type TemporalDeps } from './notifications';

export type ResolveAnswer =
  | { ok: true; transaction: TransactionRow }
  | { ok: false; refused: 'not_found' }
  | { ok: false; refused: 'refused' | 'unreachable'; detail: string };

const NOT_RESOLVABLE =
  'Only a pending deposit, card deposit, payout, cashout or refund can be resolved';

/**
 * Resolves a payment its provider settles (`paymentSyncs`) as the provider confirms the outcome,
 * or with `force` when it cannot be reached; answers its record then. `by` is who asked: the
 * settlement writes their audit entry in its own transaction.
 */
export async function resolvePayment(
  deps: TemporalDeps,
  transactionId: string,
  asked: Omit<Resolution, 'audit'>,
  by: Pick<AuditEntry, 'actor' | 'ip'>,
): Promise<ResolveAnswer> {
  const row = await findTransaction(deps.pool, transactionId);
  if (!row) return { ok: false, refused: 'not_found' };
  const resolution: Resolution = {
    ...asked,
    audit: {
      ...by,
      action: 'payment.resolved',
      target: { type: 'transaction', id: row.id },
      details: {
        outcome: asked.outcome,
        reason: asked.reason,
        operator: asked.operator,
        force: asked.force === true,
        transaction_type: row.transaction_type,
      },
      applicationId: row.application_id,
      mode: row.mode,
    },
  };
  const how = paymentSyncs[row.transaction_type];
  if (!how) return { ok: false, refused: 'refused', detail: NOT_RESOLVABLE };
  const early = resolutionRefusal({ outcome: row.status, settling: false, waiting: true });
  if (early) return { ok: false, refused: 'refused', detail: early };
  let ended: string | null;
  try {
    ended = await onWorkflow(deps, workflowIds[how.workflow](row.id), (handle) =>
      handle.executeUpdate(resolveUpdate, { args: [resolution] }),
    );
  } catch (error) {
    const refusal = refusalIn(error);
    if (refusal === null) throw error;
    return { ok: false, ...refusal };
  }
  const after = (await findTransaction(deps.pool, row.id)) ?? row;
  if (ended === null) {
    // Its workflow ended meanwhile (the provider answered first): nothing was resolved.
    const detail =
      resolutionRefusal({ outcome: after.status, settling: false, waiting: false }) ?? '';
    return { ok: false, refused: 'refused', detail };
  }
  return { ok: true, transaction: after };
}

/**
 * Why the workflow refused a resolution (its validator, or the provider's answer); null for any
 * other error.
 */
function refusalIn(error: unknown): { refused: 'refused' | 'unreachable'; detail: string } | null {
  if (!(error instanceof WorkflowUpdateFailedError)) return null;
  const cause = error.cause;
  if (!(cause instanceof ApplicationFailure)) return null;
  if (cause.type === RESOLUTION_REFUSED) return { refused: 'refused', detail: cause.message };
  if (cause.type === RESOLUTION_UNREACHABLE) {
    return { refused: 'unreachable', detail: cause.message };
  }
  return null;
}
