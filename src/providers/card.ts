/**
 * What the engine needs of a card provider. Amounts are minor units (bigint) of the payment's
 * currency. The Test Mode sandbox and the Live Mode adapter (the official `stripe` package)
 * both implement it; the card-deposit activities and the card-aware fee estimate use only this.
 */
import type { Currency } from '../domain/money';
import type { PayoutBusinessProfile, PayoutIndividual } from '../domain/payout-accounts';

/** A card's metadata, as the fee rule needs it (docs/api.md, Test Mode sandbox). */
export type CardMetadata = {
  paymentMethodId: string;
  brand: string;
  /** ISO 3166-1 alpha-2, upper case. */
  country: string;
  funding: 'credit' | 'debit' | 'prepaid' | 'unknown';
  last4: string | null;
};

/**
 * Where a card payment stands at the provider: `succeeded` charged; `requires_action` awaits 3-D
 * Secure at `nextActionUrl`; `processing` undecided; `failed` declined (`declineMessage`) or
 * authentication failed.
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

/** Why a refund is made (docs/api.md, Refunds and Disputes; Stripe's `reason`). */
export type RefundReason = 'requested_by_customer' | 'duplicate' | 'fraudulent';

/**
 * Where a refund stands at the provider: `pending` (accepted, the card not yet credited),
 * `succeeded`, or `failed` (the money must go back to the wallet).
 */
export type CardRefundStatus = 'pending' | 'succeeded' | 'failed';

export type CardRefund = {
  /** The provider's id of the refund (a Refund id for Stripe). */
  id: string;
  status: CardRefundStatus;
  amount: bigint;
  currency: Currency;
  /** Why it failed, as the provider says, while `failed`. */
  failureReason: string | null;
};

export type CardRefundRequest = {
  /** Sent to the provider so that a retried call never refunds twice. */
  idempotencyKey: string;
  /** Our refund's transaction id, carried in the provider's metadata. */
  reference: string;
  /** The provider's id of the payment refunded (a PaymentIntent id for Stripe). */
  paymentId: string;
  amount: bigint;
  currency: Currency;
  reason: RefundReason | null;
};

/** A dispute's status at the provider, in the contract's words. */
export type CardDisputeStatus = 'needs_response' | 'under_review' | 'won' | 'lost';

/** A provider's signed event about a refund or a dispute, once its signature is verified. */
export type CardCaseEvent =
  | {
      kind: 'refund';
      /** The provider's event id. */
      id: string;
      refundId: string;
      status: CardRefundStatus;
      /** Our refund's transaction id, from the refund's metadata; null when absent. */
      reference: string | null;
    }
  | {
      kind: 'dispute';
      id: string;
      /** What the event says happened: opened, changed (evidence, inquiry) or decided. */
      change: 'created' | 'updated' | 'closed';
      disputeId: string;
      /** The disputed payment (a PaymentIntent id for Stripe). */
      paymentId: string;
      amount: bigint;
      currency: Currency;
      reason: string;
      status: CardDisputeStatus;
      /** When evidence is due, as the provider says (ISO 8601); null when it says none. */
      evidenceDueBy: string | null;
    }
  | {
      /** A signed dispute event the adapter cannot read (a currency it does not know, say). */
      kind: 'unreadable_dispute';
      id: string;
      change: 'created' | 'updated' | 'closed';
      /** The provider's dispute id, else its event id. */
      disputeId: string;
      paymentId: string | null;
      /** The status as the provider wrote it; `unknown` when absent. */
      status: string;
      /** What could not be read. */
      why: string;
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
  /** Refunds `amount` of a charged payment to its card (idempotent by `idempotencyKey`). */
  createRefund(request: CardRefundRequest): Promise<CardRefund>;
  getRefund(refundId: string): Promise<CardRefund>;
  /** Cancels a pending refund where the provider allows it; answers it as it stands then. */
  cancelRefund(refundId: string): Promise<CardRefund>;
  /** Sends a dispute's evidence text to the provider and submits it for review. */
  submitDisputeEvidence(disputeId: string, text: string): Promise<void>;
  /** The dispute's status as the provider reports it now (the scheduled reconciliation). */
  getDisputeStatus(disputeId: string): Promise<CardDisputeStatus>;
  /**
   * Verifies and reads an inbound event about a refund or a dispute; null when it is about
   * neither or the signature does not match.
   */
  parseCaseEvent(
    rawBody: string,
    headers: Record<string, string | undefined>,
  ): CardCaseEvent | null;
}

/** The payment method does not exist at the provider: 400 "No such payment method". */
export class UnknownPaymentMethodError extends Error {
  constructor(paymentMethodId: string, options?: { cause?: unknown }) {
    super(`No such payment method: ${paymentMethodId}`, options);
    this.name = 'UnknownPaymentMethodError';
  }
}

// --- Connected payout accounts (Stripe Connect) and payouts to their debit cards ---

export type PayoutAccountDetails = {
  individual: PayoutIndividual;
  businessProfile: PayoutBusinessProfile;
  /** The evidence of terms acceptance: the end customer's address and when (Unix seconds). */
  tosAcceptance: { ip: string; date: number };
};

/** Where a connected account stands: what is still due before payouts are enabled. */
export type PayoutAccount = {
  id: string;
  payoutsEnabled: boolean;
  /** The payout card, once one is attached. */
  externalAccount: { id: string; last4: string | null } | null;
  requirements: {
    currentlyDue: string[];
    pendingVerification: string[];
    disabledReason: string | null;
  };
};

export type IdentityDocument = {
  content: Buffer;
  contentType: 'image/jpeg' | 'image/png' | 'application/pdf';
  filename: string;
};

/**
 * Where a payout stands: `paid` (the provider reports it paid), `pending` (accepted, not yet
 * paid), `failed` (refused, or failed after it was accepted: the saga gives the money back).
 */
export type CardPayoutStatus = 'paid' | 'pending' | 'failed';

export type CardPayout = {
  id: string;
  status: CardPayoutStatus;
  amount: bigint;
  currency: Currency;
  failureMessage: string | null;
};

export type CardPayoutRequest = {
  /** Sent to the provider so that a retried call never pays twice. */
  idempotencyKey: string;
  /** Our transaction id, carried in the provider's metadata. */
  reference: string;
  /** The connected account whose debit card is paid. */
  accountId: string;
  amount: bigint;
  currency: Currency;
};

/**
 * A card provider's connected payout accounts (Stripe Connect), one per wallet owner: details,
 * terms, a debit payout card, identity documents, payouts. Every call that creates something takes
 * an idempotency key, so a retried activity gets what the first call made.
 */
export interface PayoutAccountProvider {
  readonly name: string;
  createAccount(request: {
    idempotencyKey: string;
    /** Our wallet id, carried in the provider's metadata. */
    reference: string;
    details: PayoutAccountDetails;
  }): Promise<PayoutAccount>;
  /** Submits the details again (a resubmission): the account keeps its id. */
  updateAccount(accountId: string, details: PayoutAccountDetails): Promise<PayoutAccount>;
  /**
   * Attaches the card of a token as the payout destination; throws `UnknownCardTokenError` or
   * `DebitCardRequiredError` (a credit card cannot receive payouts). The same token twice
   * attaches it once.
   */
  addPayoutCard(request: {
    accountId: string;
    cardToken: string;
    idempotencyKey: string;
  }): Promise<PayoutAccount>;
  /** Sends an identity document to the provider; answers the provider's file id. */
  uploadIdentityDocument(request: {
    accountId: string;
    document: IdentityDocument;
    idempotencyKey: string;
  }): Promise<string>;
  /** Names an uploaded file as the owner's identity document; verification then follows. */
  attachIdentityDocument(accountId: string, fileId: string): Promise<PayoutAccount>;
  /** The account as it stands now (the identity re-sync). */
  getAccount(accountId: string): Promise<PayoutAccount>;
  /** Pays `amount` to the account's debit card (idempotent by `idempotencyKey`). */
  createPayout(request: CardPayoutRequest): Promise<CardPayout>;
  getPayout(accountId: string, payoutId: string): Promise<CardPayout>;
  /** Cancels a pending payout where the provider allows it; answers it as it stands then. */
  cancelPayout(accountId: string, payoutId: string): Promise<CardPayout>;
  /**
   * Verifies and reads the provider's signed event about a payout (paid, or failed: possibly
   * days after it was reported paid); null when it is not one or the signature does not match.
   * A provider that sends none (the sandbox) has no such method.
   */
  parsePayoutEvent?(
    rawBody: string,
    headers: Record<string, string | undefined>,
  ): CardPayoutEvent | null;
}

/** A provider's signed event about a card payout, once its signature is verified. */
export type CardPayoutEvent = {
  /** The provider's event id. */
  id: string;
  payoutId: string;
  status: Exclude<CardPayoutStatus, 'pending'>;
  /** Our transaction id, from the metadata sent with the payout; null when absent. */
  reference: string | null;
};

/** The card token does not exist at the provider: 400. */
export class UnknownCardTokenError extends Error {
  constructor(cardToken: string, options?: { cause?: unknown }) {
    super(`No such card token: ${cardToken}`, options);
    this.name = 'UnknownCardTokenError';
  }
}

/** Payouts go to debit cards only (docs/api.md, Test Mode sandbox): 400 "Payouts need a debit card". */
export class DebitCardRequiredError extends Error {
  constructor(options?: { cause?: unknown }) {
    super('Payouts need a debit card', options);
    this.name = 'DebitCardRequiredError';
  }
}
