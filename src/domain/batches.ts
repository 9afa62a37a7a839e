/**
 * Bulk payments (docs/api.md, Bulk payments): what a batch is, its bounds and how its status
 * follows from its items. Pure: the API, the activities and the workflow share it.
 */
import type { RateLimitCategory, TransactionType } from './types';

export const BATCH_KINDS = ['transfer', 'mobile_money_cashout', 'card_payout'] as const;
export type BatchKind = (typeof BATCH_KINDS)[number];

export const BATCH_STATUSES = [
  'processing',
  'completed',
  'partially_failed',
  'failed',
  'canceled',
] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

export const BATCH_ITEM_STATUSES = ['pending', 'succeeded', 'failed', 'canceled'] as const;
export type BatchItemStatus = (typeof BATCH_ITEM_STATUSES)[number];

export const BATCH_LIMITS = {
  items: 10_000,
  atomicItems: 1_000,
  referenceLength: 100,
} as const;

/** The rate-limit category each item counts in, as its single endpoint's request would. */
export const BATCH_ITEM_CATEGORY: Record<BatchKind, RateLimitCategory> = {
  transfer: 'transfers',
  mobile_money_cashout: 'mobile_money_cashouts',
  card_payout: 'card_payouts',
};

/** The payment type each item makes (a payment workflow's `PaymentType`). */
export const BATCH_ITEM_TYPE: Record<BatchKind, TransactionType> = {
  transfer: 'transfer',
  mobile_money_cashout: 'mobile_money_cashout',
  card_payout: 'card_payout',
};

/** Item `index`'s Idempotency-Key: the batch's key and the index, so a retry finds its payment. */
export const batchItemKey = (batchKey: string, index: number): string => `${batchKey}#${index}`;

/**
 * A batch's status once its last item has ended: canceled if any item was, else failed when
 * none succeeded, partially failed when some failed, completed when all succeeded.
 */
export function endedBatchStatus(counts: {
  succeeded: number;
  failed: number;
  canceled: number;
}): Exclude<BatchStatus, 'processing'> {
  if (counts.canceled > 0) return 'canceled';
  if (counts.succeeded === 0) return 'failed';
  return counts.failed > 0 ? 'partially_failed' : 'completed';
}
