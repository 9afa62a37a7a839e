/** The closed list of event kinds a webhook subscription may select (docs/api.md, Webhooks). */
export const EVENT_TYPES = [
  'escrow.held',
  'escrow.released',
  'escrow.refunded',
  'deposit.completed',
  'deposit.failed',
  'transfer.completed',
  'payout.completed',
  'payout.failed',
  'cashout.completed',
  'cashout.failed',
  'refund.completed',
  'refund.failed',
  'dispute.created',
  'dispute.won',
  'dispute.lost',
  'payment.contradicted',
  'reconciliation.run.completed',
  'reconciliation.exception.opened',
  'reconciliation.exception.resolved',
  'reconciliation.exception.stale',
  'batch.completed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];
