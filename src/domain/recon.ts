/**
 * Which engine payments each provider's books hold (docs/operations.md, Reconcile with a
 * provider): a record of the provider is matched only to a payment of these types.
 */
import type { TransactionType } from './types';

export type ReconProviderName = 'mobile_money' | 'card';

export const RECON_PAYMENT_TYPES: Record<ReconProviderName, readonly TransactionType[]> = {
  mobile_money: ['mobile_money_deposit', 'mobile_money_cashout'],
  card: ['card_deposit', 'card_payout', 'card_refund'],
};

/** The provider whose books hold a payment of `type`; null for the engine's own movements. */
export function reconProviderOf(type: string): ReconProviderName | null {
  for (const [provider, types] of Object.entries(RECON_PAYMENT_TYPES)) {
    if ((types as readonly string[]).includes(type)) return provider as ReconProviderName;
  }
  return null;
}

/**
 * How many of the provider's records one load activity writes, and how many loads a run's
 * workflow makes before it continues as new (its history stays small at a million records).
 */
export const RECON_CHUNK_RECORDS = 5_000;
export const RECON_CHUNKS_PER_HISTORY = 50;

/**
 * The deadline of the match's statements: a large window's match outlasts the pool's deadline,
 * and must still end before the match activity's own timeout (src/workflows/) retries it.
 */
export const RECON_MATCH_STATEMENT_MS = 25 * 60 * 1000;
