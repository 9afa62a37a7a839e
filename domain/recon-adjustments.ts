import type { TransactionType } from './types';

/**
 * An `adjust` resolution of a reconciliation exception (docs/api.md, Reconciliation): one ledger
 * transaction between the payment's wallet and the provider's clearing account that makes the
 * ledger say what the provider's books say.
 */

/** Payments that take money out of the platform: the provider's books show them as `out`. */
const OUTFLOWS: ReadonlySet<TransactionType> = new Set([
  'card_payout',
  'mobile_money_cashout',
  'card_refund',
]);

/** One side of an exception: the engine's payment or the provider's record, in minor units. */
export type ReconSide = { amount: bigint; currency: string; status: string };

/**
 * What a side says moved: its amount when it succeeded (the engine: `completed`, the provider:
 * `succeeded`), nothing when it failed, was reversed or expired, or when the side is missing.
 */
function moved(side: ReconSide | null, succeeded: string): bigint {
  return side && side.status === succeeded ? side.amount : 0n;
}

/**
 * The adjustment of the wallet, signed (positive credits it, negative debits it): what the
 * provider moved minus what the engine moved (a missing side moved nothing, so a `missing_*`
 * exception adjusts the whole amount), turned round for a payment that takes money out.
 */
export function reconAdjustment(input: {
  type: TransactionType;
  ours: ReconSide | null;
  theirs: ReconSide | null;
}): bigint {
  const difference = moved(input.theirs, 'succeeded') - moved(input.ours, 'completed');
  return OUTFLOWS.has(input.type) ? -difference : difference;
}

/** The currency both sides count in; null when they count in different ones (or none is known). */
export function reconCurrency(ours: ReconSide | null, theirs: ReconSide | null): string | null {
  const currencies = new Set([ours?.currency, theirs?.currency].filter((c) => c !== undefined));
  return currencies.size === 1 ? [...currencies][0]! : null;
}
