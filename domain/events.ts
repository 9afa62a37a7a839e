/** The closed list of event kinds a webhook subscription may select (decisions.md, "Events"). */
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
] as const;

export type EventType = (typeof EVENT_TYPES)[number];
