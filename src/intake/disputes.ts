/**
 * Disputes' intake, shared by every way news of a dispute arrives (simulate endpoints, a live
 * provider's events, the reconciliation); each reaches the dispute's own workflow, which moves the
 * money. See docs/architecture.md, The dispute path.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
} from '@temporalio/client';
import {
  disputeRecord,
  findDispute,
  findDisputeByProviderReference,
  type DisputeRow,
} from '../db/disputes';
import { findTransaction } from '../db/transactions';
import type { Mode } from '../domain/types';
import { isNotFound } from '../temporal/connection';
import {
  disputeUpdates,
  type DisputeInput,
  type DisputeOpened,
  type DisputeEvidence,
  type DisputeStatus,
} from '../workflows/dispute-shared';
import { workflowIds } from '../workflows/ids';
import { SearchAttributes, type Declined } from '../workflows/shared';
import type { TemporalDeps } from './notifications';

/** The dispute workflow's type (src/workflows/dispute.ts `disputeWorkflow`). */
export const DISPUTE_WORKFLOW = 'disputeWorkflow';

/** What starting a dispute's workflow needs beyond reaching one: the worker's task queue. */
export type DisputeDeps = TemporalDeps & { taskQueue: string };

/**
 * How long a Test Mode dispute waits for evidence (its `evidence_due_by`, from its opening):
 * seven days, about what a card network gives a merchant to answer.
 */
export const TEST_EVIDENCE_DAYS = 7;
const DAY_MS = 24 * 60 * 60 * 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Our id of a provider's dispute: a name-based UUID of the application, mode and provider id, the
 * same every time, so a repeated `charge.dispute.created` attaches to the running workflow.
 */
export function disputeIdOf(owner: { applicationId: string; mode: Mode }, providerId: string) {
  const digest = createHash('sha256')
    .update(`${owner.applicationId}\n${owner.mode}\ndispute\n${providerId}`)
    .digest();
  digest[6] = (digest[6]! & 0x0f) | 0x50; // version 5 (name-based)
  digest[8] = (digest[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const h = digest.subarray(0, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Bounds a wait on a workflow by `deps.timeoutMs`; null when the workflow is not running. */
async function bounded<T>(deps: DisputeDeps, what: string, run: () => Promise<T>) {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          deps.timeoutError?.() ?? new Error(`${what} did not answer in ${deps.timeoutMs} ms`),
        ),
      deps.timeoutMs,
    );
  });
  try {
    return await Promise.race([run(), deadline]);
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Opens a dispute of a card deposit; answers it once its reserve has moved, or why it was declined.
 * `amount` null disputes all that is left. The id derives from `providerDisputeId` (null when
 * simulated), so a repeated event answers the same dispute.
 */
export async function openDispute(
  deps: DisputeDeps,
  request: {
    applicationId: string;
    mode: Mode;
    transactionId: string;
    amount: bigint | null;
    reason: string;
    providerDisputeId: string | null;
    evidenceDueBy: string | null;
    /**
     * Our id of a simulated dispute, derived from its request's Idempotency-Key so that a retry
     * answers the dispute the first attempt opened; random when absent.
     */
    disputeId?: string;
    /** The merchant's metadata (a simulated dispute's request). */
    metadata?: Record<string, string>;
  },
): Promise<DisputeOpened | Declined> {
  const { applicationId, mode, providerDisputeId } = request;
  const named = providerDisputeId
    ? disputeIdOf({ applicationId, mode }, providerDisputeId)
    : request.disputeId;
  const disputeId = named ?? randomUUID();
  if (!UUID.test(request.transactionId)) {
    return { status: 'declined', code: 'not_found', detail: 'Transaction not found' };
  }
  const deposit = await findTransaction(deps.pool, request.transactionId);
  const workflowId = workflowIds.dispute(disputeId);
  const input: DisputeInput = {
    disputeId,
    applicationId,
    mode,
    transactionId: request.transactionId,
    amount: request.amount?.toString() ?? null,
    reason: request.reason,
    evidenceDueBy:
      request.evidenceDueBy ?? new Date(Date.now() + TEST_EVIDENCE_DAYS * DAY_MS).toISOString(),
    providerDisputeId,
    ...(request.metadata && { metadata: request.metadata }),
  };
  // By its name: the worker's activities import this module, so the workflow's code (which
  // sees them by type) is not imported here.
  const start = new WithStartWorkflowOperation(DISPUTE_WORKFLOW, {
    workflowId,
    taskQueue: deps.taskQueue,
    workflowIdConflictPolicy: 'USE_EXISTING',
    // A closed workflow with a dispute answered above; one without declined it: a repeated
    // event decides again (the deposit may be disputable now).
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    args: [input],
    typedSearchAttributes: [
      { key: SearchAttributes.ApplicationId, value: applicationId },
      { key: SearchAttributes.PaymentMode, value: mode },
      { key: SearchAttributes.WalletId, value: deposit?.wallet_id ? [deposit.wallet_id] : [] },
      { key: SearchAttributes.PaymentType, value: 'dispute_reserve' },
      { key: SearchAttributes.PaymentStatus, value: 'pending' },
    ],
  });
  const made = async (): Promise<DisputeOpened> => {
    const row = await findDispute(deps.pool, disputeId);
    if (!row) throw new Error(`dispute ${disputeId} has no record yet`);
    return { status: 'opened', dispute: disputeRecord(row) };
  };
  // A repeated event, or a retried request, of a dispute opened already answers it as it stands.
  if (named && (await findDispute(deps.pool, disputeId))) return made();
  try {
    const answer = await bounded(deps, workflowId, () =>
      deps.temporal.workflow.executeUpdateWithStart(disputeUpdates.open, {
        startWorkflowOperation: start,
      }),
    );
    return answer ?? (await made());
  } catch (error) {
    // Started meanwhile by a racing event: the dispute it opened.
    if (error instanceof WorkflowExecutionAlreadyStartedError) return made();
    throw error;
  }
}

/**
 * The provider's decision on a dispute, named by our id or by the provider's: its workflow moves
 * the reserve (won: to the wallet; lost: to the provider). Null when there is no such dispute; one
 * already closed stays as it is.
 */
export async function closeDispute(
  deps: DisputeDeps,
  request: (
    { disputeId: string } | { providerDisputeId: string; applicationId: string; mode: Mode }
  ) & { status: 'won' | 'lost' },
): Promise<DisputeRow | null> {
  const row =
    'disputeId' in request
      ? await findDispute(deps.pool, request.disputeId)
      : await findDisputeByProviderReference(deps.pool, request, request.providerDisputeId);
  if (!row) return null;
  if (row.status !== 'won' && row.status !== 'lost') {
    await bounded(deps, row.workflow_id, () =>
      deps.temporal.workflow
        .getHandle(row.workflow_id)
        .executeUpdate(disputeUpdates.close, { args: [{ status: request.status }] }),
    );
  }
  return findDispute(deps.pool, row.id);
}

/**
 * The merchant's evidence for a dispute, sent to its provider through the dispute's workflow:
 * the dispute's new status, or a decline (closed: `dispute_closed`; past its due date).
 */
export async function submitDisputeEvidence(
  deps: DisputeDeps,
  dispute: DisputeRow,
  evidence: DisputeEvidence,
): Promise<DisputeStatus | Declined> {
  const closed: Declined = { status: 'declined', code: 'dispute_closed', detail: null };
  if (dispute.status === 'won' || dispute.status === 'lost') return closed;
  const answer = await bounded(deps, dispute.workflow_id, () =>
    deps.temporal.workflow
      .getHandle(dispute.workflow_id)
      .executeUpdate(disputeUpdates.evidence, { args: [evidence] }),
  );
  return answer ?? closed;
}
