import { basisPoints, type Currency } from './money';
import { PAYMENT_METHODS, type PaymentMethod } from './types';

/**
 * Fee rules, pure and exact (bigint minor units). The fee estimate endpoint and the deposits
 * themselves both call `computeDepositFees`, so an estimate and the real deposit agree to the
 * cent. Nothing else in the service knows a fee rate.
 */
export type FeeRule = { bps: number; fixed: bigint };

/** The providers' fees (what the mobile-money or card provider keeps), per payment method. */
export const PROVIDER_FEES: Record<PaymentMethod | 'card_international', FeeRule> = {
  mobile_money: { bps: 100, fixed: 0n },
  card: { bps: 290, fixed: 30n },
  card_international: { bps: 390, fixed: 30n },
  bank: { bps: 0, fixed: 100n },
  wallet: { bps: 0, fixed: 0n },
};

/** The provider's rule for a method; `international` selects the card's international rate. */
export function providerFeeRule(method: PaymentMethod, international = false): FeeRule {
  return PROVIDER_FEES[method === 'card' && international ? 'card_international' : method];
}

/** Every amount in the minor units of the amount given. */
export type DepositFees = {
  transactionAmount: bigint;
  applicationFee: bigint;
  providerFee: bigint;
  totalFees: bigint;
  totalAmountToPay: bigint;
  netAmount: bigint;
  /** Whether the application charges a fee for this method (its basis points are above 0). */
  feeEnabled: boolean;
};

/**
 * The fees of a deposit of `amount` minor units: the payer pays amount + provider fee + application
 * fee (0 when unset for the method); the wallet receives the amount. Each fee is rounded half to
 * even on the exact bigint quotient, no float anywhere. See docs/api.md, Fees.
 */
export function computeDepositFees(input: {
  method: PaymentMethod;
  international?: boolean;
  amount: bigint;
  applicationFeeBps: number | undefined;
}): DepositFees {
  if (input.amount < 0n) throw new RangeError('a deposit amount cannot be negative');
  const rule = providerFeeRule(input.method, input.international);
  const providerFee = basisPoints(input.amount, rule.bps) + rule.fixed;
  const feeEnabled = (input.applicationFeeBps ?? 0) > 0;
  const applicationFee = feeEnabled ? basisPoints(input.amount, input.applicationFeeBps ?? 0) : 0n;
  const totalFees = providerFee + applicationFee;
  return {
    transactionAmount: input.amount,
    applicationFee,
    providerFee,
    totalFees,
    totalAmountToPay: input.amount + totalFees,
    netAmount: input.amount,
    feeEnabled,
  };
}

/** An application's home country (ISO 3166-1 alpha-2), by its base currency (docs/api.md, Test Mode sandbox). */
export const HOME_COUNTRY = { SLE: 'SL', USD: 'US' } as const satisfies Record<Currency, string>;

/** What the card rule reads of a card: its brand and the country that issued it. */
export type CardTraits = { brand: string; country: string };

/**
 * A card pays the international rate when it was issued outside the application's home country,
 * or when it is an American Express card (whose network charges the international rate).
 */
export function isInternationalCard(card: CardTraits, baseCurrency: Currency): boolean {
  return (
    card.country.toUpperCase() !== HOME_COUNTRY[baseCurrency] || card.brand.toLowerCase() === 'amex'
  );
}

/**
 * The fees of a card deposit of `amount` minor units of the base currency: the card rule picks
 * the rate, then `computeDepositFees` as for any deposit. The card-aware estimate and the card
 * deposit both call this, so they agree to the cent.
 */
export function computeCardDepositFees(input: {
  card: CardTraits;
  baseCurrency: Currency;
  amount: bigint;
  applicationFeeBps: number | undefined;
}): DepositFees & { international: boolean } {
  const international = isInternationalCard(input.card, input.baseCurrency);
  return {
    ...computeDepositFees({
      method: 'card',
      international,
      amount: input.amount,
      applicationFeeBps: input.applicationFeeBps,
    }),
    international,
  };
}

/** An escrow release's split: what the recipient receives and the application's fee. */
export type EscrowFee = { fee: bigint; net: bigint };

/**
 * The fee on an escrow release of `amount` minor units: round(amount × bps / 10 000) + fixed,
 * half to even, capped at the amount (a release never costs the recipient more than it pays).
 */
export function computeEscrowFee(amount: bigint, rule: FeeRule): EscrowFee {
  if (amount < 0n) throw new RangeError('a release amount cannot be negative');
  const raw = basisPoints(amount, rule.bps) + rule.fixed;
  const fee = raw > amount ? amount : raw;
  return { fee, net: amount - fee };
}

/**
 * The methods an application may charge its own fee on (`cli apps update --fee METHOD=BPS`):
 * the deposit methods, and money out (docs/api.md, Test Mode sandbox).
 */
export const APPLICATION_FEE_METHODS = [
  ...PAYMENT_METHODS,
  'card_payout',
  'mobile_money_cashout',
] as const;
export type ApplicationFeeMethod = (typeof APPLICATION_FEE_METHODS)[number];

/** The mobile-money provider's fee on a cashout: 1% (docs/api.md, Test Mode sandbox). */
export const CASHOUT_PROVIDER_FEE: FeeRule = { bps: 100, fixed: 0n };

/** A payout's or cashout's figures, in the minor units of the amount given. */
export type MoneyOutFees = {
  amount: bigint;
  providerFee: bigint;
  applicationFee: bigint;
  /** What the wallet pays: amount + provider fee + application fee. */
  total: bigint;
};

/**
 * The fees of a payout or cashout of `amount` minor units: the provider's `rule`, and the
 * application's basis points for the method (0 when unset), each rounded half to even.
 */
export function computeMoneyOutFees(input: {
  rule: FeeRule;
  amount: bigint;
  applicationFeeBps: number | undefined;
}): MoneyOutFees {
  if (input.amount <= 0n) throw new RangeError('a payout amount must be positive');
  const providerFee = basisPoints(input.amount, input.rule.bps) + input.rule.fixed;
  const applicationFee = basisPoints(input.amount, Math.max(0, input.applicationFeeBps ?? 0));
  return {
    amount: input.amount,
    providerFee,
    applicationFee,
    total: input.amount + providerFee + applicationFee,
  };
}
