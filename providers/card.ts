/**
 * What the engine needs of a card provider. Amounts are minor units (bigint) of the payment's
 * currency. The Test Mode sandbox and the Live Mode adapter (the official `stripe` package)
 * both implement it; the card-deposit activities and the card-aware fee estimate use only this.
 */
import type { Currency } from '../domain/money';

/** A card's metadata, as the fee rule needs it (decisions.md, Cards). */
export type CardMetadata = {
  paymentMethodId: string;
  brand: string;
  /** ISO 3166-1 alpha-2, upper case. */
  country: string;
  funding: 'credit' | 'debit' | 'prepaid' | 'unknown';
  last4: string | null;
};

/**
 * Where a card payment stands at the provider:
 * - `succeeded`: the card was charged;
 * - `requires_action`: the payer must authenticate (3-D Secure) at `nextActionUrl`;
 * - `processing`: the provider has not decided yet;
 * - `failed`: declined (`declineMessage` says why) or authentication failed.
 */
export type CardPaymentStatus = 'succeeded' | 'requires_action' | 'processing' | 'failed';

export type CardPayment = {
  /** The provider's id of the payment (a PaymentIntent id for Stripe). */
  id: string;
  status: CardPaymentStatus;
  amount: bigint;
  currency: Currency;
  /** Our transaction id, carried in the provider's metadata. */
  reference: string | null;
  /** Where the payer authenticates, while `requires_action`. */
  nextActionUrl: string | null;
  /** A decline's reason as the provider gives it, while `failed`. */
  declineMessage: string | null;
};

export type CardPaymentRequest = {
  /** Sent to the provider so that a retried call never charges the card twice. */
  idempotencyKey: string;
  /** Our transaction id, carried in the provider's metadata to recover it from events. */
  reference: string;
  /** What the card is charged, in minor units: the deposit plus the fees. */
  amount: bigint;
  currency: Currency;
  paymentMethodId: string;
  description: string;
};

/** A provider's signed event about a card payment, once its signature is verified. */
export type CardEvent = {
  /** The provider's event id (for deduplication and the record). */
  id: string;
  paymentId: string;
  status: CardPaymentStatus;
  reference: string | null;
};

export interface CardProvider {
  readonly name: string;
  /** The card's metadata; throws `UnknownPaymentMethodError` for a payment method it does not know. */
  getCardMetadata(paymentMethodId: string): Promise<CardMetadata>;
  /** Creates and confirms a payment server-side (idempotent by `idempotencyKey`). */
  createPayment(request: CardPaymentRequest): Promise<CardPayment>;
  getPayment(paymentId: string): Promise<CardPayment>;
  /**
   * Cancels a payment that has not been charged (one still awaiting authentication or
   * processing), so that a payer who authenticates after the deposit expired is never charged.
   * A payment already charged or failed stays as it is. Answers the payment as it now stands.
   */
  cancelPayment(paymentId: string): Promise<CardPayment>;
  /** Verifies and reads an inbound event; null when the signature does not match. */
  parseEvent(rawBody: string, headers: Record<string, string | undefined>): CardEvent | null;
}

/** The payment method does not exist at the provider: 400 "No such payment method". */
export class UnknownPaymentMethodError extends Error {
  constructor(paymentMethodId: string, options?: { cause?: unknown }) {
    super(`No such payment method: ${paymentMethodId}`, options);
    this.name = 'UnknownPaymentMethodError';
  }
}
