/**
 * What the API (client side) and the dispute workflow share: its input, updates and query
 * (docs/api.md, Refunds and Disputes). No I/O here.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { AuditEntry } from '../domain/audit';
import type { Declined } from './shared';

export type DisputeStatus = 'needs_response' | 'under_review' | 'won' | 'lost';

/** The `evidence` update's argument; `audit` is written with the evidence (absent before it). */
export type DisputeEvidence = { text: string; audit?: AuditEntry };

export type DisputeInput = {
  /** Our dispute id; the workflow is `dispute-<disputeId>`. */
  disputeId: string;
  applicationId: string;
  mode: 'test' | 'live';
  /** The disputed card deposit. */
  transactionId: string;
  /**
   * Minor units of the deposit's currency, as a decimal string; null disputes all that is left
   * of the deposit.
   */
  amount: string | null;
  reason: string;
  /** ISO 8601: when the evidence is due (a timer of the workflow). */
  evidenceDueBy: string;
  /** The provider's dispute id (Live Mode); null for a Test Mode simulated dispute. */
  providerDisputeId: string | null;
  /** The merchant's metadata (a simulated dispute's request), written with the dispute. */
  metadata?: Record<string, string>;
};

/** A dispute row as JSON (src/db/disputes.ts `disputeRecord`): amounts in minor units, as strings. */
export type DisputeRecord = {
  id: string;
  application_id: string;
  mode: 'test' | 'live';
  transaction_id: string;
  wallet_id: string;
  currency: 'USD' | 'SLE';
  amount: string;
  reserved_amount: string;
  uncovered_amount: string;
  reason: string;
  status: DisputeStatus;
  evidence: string | null;
  evidence_due_by: string;
  provider_reference: string | null;
  workflow_id: string;
  /** The merchant's metadata; absent in answers recorded before disputes carried it. */
  metadata?: Record<string, string>;
  created_at: string;
  updated_at: string;
};

/** What opening answers: the dispute as its first step wrote it. */
export type DisputeOpened = { status: 'opened'; dispute: DisputeRecord };

/** How a dispute's workflow ends: decided by the provider, or never opened (a decline). */
export type DisputeOutcome = 'won' | 'lost' | 'declined';

/** The longest evidence text taken (docs/api.md, Disputes). */
export const MAX_EVIDENCE_CHARS = 20_000;

export const disputeUpdates = {
  /** The answer of the opening step (update-with-start): the Dispute, or why it was declined. */
  open: defineUpdate<DisputeOpened | Declined>('open'),
  /**
   * The merchant's evidence text: sent to the provider; the dispute is then `under_review`.
   * Declined when the dispute is closed, or its evidence is past due.
   */
  evidence: defineUpdate<DisputeStatus | Declined, [DisputeEvidence]>('evidence'),
  /** The provider's decision (its event, the simulate endpoint or the reconciliation). */
  close: defineUpdate<DisputeStatus, [{ status: 'won' | 'lost' }]>('close'),
};
export const disputeStateQuery = defineQuery<DisputeStatus>('state');
