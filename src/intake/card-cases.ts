/**
 * A card provider's verified refund and dispute events (`CardProvider.parseCaseEvent`) into the
 * refund saga and the dispute workflow. Each is kept in `provider_notifications` with what became
 * of it, as the payment events are (src/intake/notifications.ts).
 */
import { findNotifiedPayment, insertProviderNotification } from '../db/provider-notifications';
import { findTransaction } from '../db/transactions';
import type { Mode } from '../domain/types';
import type { CardCaseEvent } from '../providers/card';
import type { DisputeStatus } from '../workflows/dispute-shared';
import type { ErrorLog } from './contradictions';
import { closeDispute, openDispute, type DisputeDeps } from './disputes';
import { receiveNotification, type Resolution, type TemporalDeps } from './notifications';
import { keepUnapplied, type UnappliedReason } from './unapplied';

export type RefundEvent = Extract<CardCaseEvent, { kind: 'refund' }>;
export type DisputeEvent = Extract<CardCaseEvent, { kind: 'dispute' }>;
export type UnreadableDisputeEvent = Extract<CardCaseEvent, { kind: 'unreadable_dispute' }>;

/** Where the event came from: its provider and the mode that provider speaks for. */
export type CaseEventSource = { provider: string; mode: Mode; body: unknown };

/** What the webhook answers: the payment the event reached, and its status then. */
export type Applied = { transactionId: string | null; status: string | null };

/**
 * A refund's outcome to its saga (`refund-<transaction id>`, `notify`) by the path every provider
 * message takes (`receiveNotification`), so it is matched, or kept `unmatched`, as they are. A
 * pending refund says nothing new: kept only.
 */
export async function applyRefundEvent(
  deps: TemporalDeps & CaseReporting,
  event: RefundEvent,
  source: CaseEventSource,
): Promise<Applied> {
  const message = {
    provider: source.provider,
    mode: source.mode,
    paymentReference: event.refundId,
    reference: event.reference,
  };
  if (event.status === 'pending') {
    const payment = await findNotifiedPayment(deps.pool, {
      transactionType: 'card_refund',
      paymentReference: event.refundId,
      transactionId: uuidOrNull(event.reference),
    });
    const ours = payment && payment.mode === source.mode ? payment : null;
    await insertProviderNotification(deps.pool, {
      ...message,
      kind: 'refund',
      status: 'pending',
      transactionId: ours?.id ?? null,
      outcome: 'ignored',
      body: source.body,
    });
    return { transactionId: ours?.id ?? null, status: ours?.status ?? null };
  }
  const resolution: Resolution = await receiveNotification(
    deps,
    'refund',
    { ...message, status: event.status === 'succeeded' ? 'completed' : 'failed' },
    source.body,
  );
  return { transactionId: resolution.transactionId, status: resolution.status };
}

/** A dispute to open: the provider's, on one of our Live Mode card deposits. */
export type DisputeOpening = {
  applicationId: string;
  mode: Mode;
  /** Our card deposit that is disputed. */
  transactionId: string;
  /** Minor units of the deposit's currency. */
  amount: bigint;
  reason: string;
  providerDisputeId: string;
  /** ISO 8601; null when the provider gives no due date. */
  evidenceDueBy: string | null;
};

export type DisputeClosing = {
  applicationId: string;
  mode: Mode;
  providerDisputeId: string;
  status: 'won' | 'lost';
};

/**
 * What the dispute workflow's intake answers: the Dispute, null for a dispute it lacks, or why
 * it declined to open one.
 */
export type DisputeAnswer =
  { transaction_id: string; status: DisputeStatus } | { declined: string } | null;

/**
 * The dispute workflow's intake (src/intake/disputes.ts `openDispute` / `closeDispute`), as the
 * card webhook calls it: opening is idempotent by `providerDisputeId`, closing a closed dispute
 * changes nothing.
 */
export type DisputeIntake = {
  open(opening: DisputeOpening): Promise<DisputeAnswer>;
  close(closing: DisputeClosing): Promise<DisputeAnswer>;
};

/** The dispute workflow's intake (src/intake/disputes.ts) as the card webhook calls it. */
export function disputeIntake(deps: DisputeDeps): DisputeIntake {
  return {
    open: async (opening) => {
      const answer = await openDispute(deps, opening);
      if (answer.status !== 'opened') return { declined: answer.detail ?? answer.code };
      return { transaction_id: answer.dispute.transaction_id, status: answer.dispute.status };
    },
    close: async ({ status, ...named }) => {
      const row = await closeDispute(deps, { ...named, status });
      return row && { transaction_id: row.transaction_id, status: row.status };
    },
  };
}

/** What the dispute webhook reports beyond its rows: a money event it could not apply. */
export type CaseReporting = { logger: ErrorLog };

/**
 * A dispute event to the dispute intake: `created` opens a dispute on our card deposit, `closed`
 * (won or lost) closes it, an update is kept only (`ignored`). One that should move money but
 * cannot, or cannot be read, is kept `unapplied` for an operator (src/intake/unapplied.ts).
 */
export async function applyDisputeEvent(
  deps: Pick<TemporalDeps, 'pool'> & CaseReporting,
  event: DisputeEvent | UnreadableDisputeEvent,
  source: CaseEventSource,
  disputes: DisputeIntake,
): Promise<Applied> {
  // Never `unmatched`: the reconciliation retries no dispute kind, and such a row would take one
  // of its retry slots for nothing.
  const kept = (transactionId: string | null) => ({
    provider: source.provider,
    kind: 'dispute',
    mode: source.mode,
    paymentReference: event.disputeId,
    reference: event.paymentId,
    status: event.status,
    transactionId,
    body: source.body,
  });
  const keep = (outcome: 'matched' | 'ignored', transactionId: string | null) =>
    insertProviderNotification(deps.pool, { ...kept(transactionId), outcome });
  const unapplied = async (reason: UnappliedReason, transactionId: string | null, why: string) => {
    await keepUnapplied(
      deps,
      kept(transactionId),
      { reason, why },
      {
        change: event.change,
        dispute: event.disputeId,
        payment: event.paymentId,
      },
    );
    return { transactionId: null, status: null };
  };
  if (event.change === 'updated') {
    await keep('ignored', null);
    return { transactionId: null, status: null };
  }
  if (event.kind === 'unreadable_dispute') return unapplied('unreadable', null, event.why);
  let answer: DisputeAnswer;
  let transactionId: string | null = null;
  try {
    const deposit = await disputedDeposit(deps, event, source.mode);
    if (!deposit) {
      return await unapplied('not_our_deposit', null, 'no card deposit of ours in that currency');
    }
    transactionId = deposit.id;
    if (event.change === 'created') {
      answer = await disputes.open({
        applicationId: deposit.application_id,
        mode: deposit.mode,
        transactionId: deposit.id,
        amount: event.amount,
        reason: event.reason,
        providerDisputeId: event.disputeId,
        evidenceDueBy: event.evidenceDueBy,
      });
    } else if (event.status === 'won' || event.status === 'lost') {
      answer = await disputes.close({
        applicationId: deposit.application_id,
        mode: deposit.mode,
        providerDisputeId: event.disputeId,
        status: event.status,
      });
    } else {
      return await unapplied('declined', transactionId, `closed as ${event.status}`);
    }
  } catch (error) {
    // The provider gets no 200 and sends it again; a later `matched` row means it was applied.
    await unapplied('error', transactionId, String(error));
    throw error;
  }
  if (!answer) return unapplied('unknown_dispute', transactionId, 'no such dispute is open');
  if ('declined' in answer) return unapplied('declined', transactionId, answer.declined);
  await keep('matched', answer.transaction_id);
  return { transactionId: answer.transaction_id, status: answer.status };
}

/** Our card deposit the dispute is about: that provider payment, that mode, that currency. */
async function disputedDeposit(deps: Pick<TemporalDeps, 'pool'>, event: DisputeEvent, mode: Mode) {
  const payment = await findNotifiedPayment(deps.pool, {
    transactionType: 'card_deposit',
    paymentReference: event.paymentId,
    transactionId: null,
  });
  if (!payment || payment.providerReference !== event.paymentId || payment.mode !== mode) {
    return null;
  }
  const deposit = await findTransaction(deps.pool, payment.id);
  return deposit && deposit.currency === event.currency ? deposit : null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function uuidOrNull(reference: string | null): string | null {
  const lowered = reference?.toLowerCase() ?? null;
  return lowered && UUID.test(lowered) ? lowered : null;
}
