/**
 * What the API (client side) and the dispute workflow share: its input, updates and query
 * (decisions.md, "Card refunds and disputes"). No I/O here.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';

export type DisputeStatus = 'needs_response' | 'under_review' | 'won' | 'lost';

export type DisputeInput = {
  /** Our dispute id; the workflow is `dispute-<disputeId>`. */
  disputeId: string;
  applicationId: string;
  mode: 'test' | 'live';
  /** The disputed card deposit. */
  transactionId: string;
  /** Minor units of the deposit's currency, as a decimal string. */
  amount: string;
  reason: string;
  /** ISO 8601: when the evidence is due (a timer of the workflow). */
  evidenceDueBy: string;
  /** The provider's dispute id (Live Mode); null for a Test Mode simulated dispute. */
  providerDisputeId: string | null;
};

export const disputeUpdates = {
  /** The merchant's evidence text: sent to the provider; the dispute is then `under_review`. */
  evidence: defineUpdate<DisputeStatus, [{ text: string }]>('evidence'),
  /** The provider's decision (its event, the simulate endpoint or the reconciliation). */
  close: defineUpdate<DisputeStatus, [{ status: 'won' | 'lost' }]>('close'),
};
export const disputeStateQuery = defineQuery<DisputeStatus>('state');
