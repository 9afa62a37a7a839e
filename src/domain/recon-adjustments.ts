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

/** What a side moved: its amount when it succeeded, nothing when it failed or is missing. */
function moved(side: ReconSide | null, succeeded: string): bigint {
  return side && side.status === succeeded ? side.amount : 0n;
}

/**
 * The wallet's adjustment, signed (+ credits it): the provider's amount less the engine's where
 * both moved money, else the payment's whole amount (docs/api.md, Reconciliation).
 */
export function reconAdjustment(input: {
  type: TransactionType;
  /** The payment's amount in the wallet's currency (`transactions.amount`). */
  paymentAmount: bigint;
  ours: ReconSide | null;
  theirs: ReconSide | null;
}): { amount: bigint; basis: 'difference' | 'whole'; currency: string | null } {
  const theirs = moved(input.theirs, 'succeeded');
  const ours = moved(input.ours, 'completed');
  const sign = OUTFLOWS.has(input.type) ? -1n : 1n;
  if (theirs > 0n && ours > 0n) {
    const currency = reconCurrency(input.ours, input.theirs);
    return { amount: sign * (theirs - ours), basis: 'difference', currency };
  }
  const whole = theirs > 0n ? input.paymentAmount : ours > 0n ? -input.paymentAmount : 0n;
  return { amount: sign * whole, basis: 'whole', currency: null };
}

/** The currency both sides count in; null when they count in different ones. */
function reconCurrency(ours: ReconSide | null, theirs: ReconSide | null): string | null {
  const currencies = new Set([ours?.currency, theirs?.currency].filter((c) => c !== undefined));
  return currencies.size === 1 ? [...currencies][0]! : null;
}
