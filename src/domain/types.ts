export const MODES = ['test', 'live'] as const;
export type Mode = (typeof MODES)[number];

/** Who is calling: the application and the mode of the credential that authenticated. */
export type Caller = {
  applicationId: string;
  mode: Mode;
  credentialId: string;
  /**
   * A caller no credential names (a dashboard session): the subject its requests are counted
   * under in the rate limits (src/db/rate-limit.ts `sessionSubject`).
   */
  rateLimitSubject?: string;
};

export const TRANSACTION_TYPES = [
  'mobile_money_deposit',
  'card_deposit',
  'transfer',
  'escrow_hold',
  'escrow_release',
  'escrow_refund',
  'card_payout',
  'mobile_money_cashout',
  'fee',
  'card_refund',
  'dispute_reserve',
  'dispute_release',
] as const;
export type TransactionType = (typeof TRANSACTION_TYPES)[number];

export const TRANSACTION_STATUSES = [
  'pending',
  'held',
  'completed',
  'failed',
  'expired',
  'reversed',
] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

export const RATE_LIMIT_CATEGORIES = {
  default: 10,
  card_deposits: 5,
  mobile_money_deposits: 10,
  transfers: 10,
  card_payouts: 5,
  mobile_money_cashouts: 2,
  refunds: 5,
  admin: 5,
  /** Provider reconciliation: imports, runs, exceptions and their resolutions. */
  reconciliation: 10,
  /** An operator's Temporal UI decodes a page of a workflow's history at a time. */
  temporal_codec: 600,
  /** Bulk payments: each item counts in its kind's category too, as its batch starts it. */
  batches: 10,
} as const;
export type RateLimitCategory = keyof typeof RATE_LIMIT_CATEGORIES;

/** A category's limit a minute: the application's own when it set one, else the default. */
export function categoryLimit(
  rateLimits: Readonly<Record<string, number>>,
  category: RateLimitCategory,
): number {
  return rateLimits[category] ?? RATE_LIMIT_CATEGORIES[category];
}

export const PAYMENT_METHODS = ['mobile_money', 'card', 'bank', 'wallet'] as const;
export type PaymentMethod = (typeof PAYMENT_METHODS)[number];
