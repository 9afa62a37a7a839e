/**
 * What the engine needs of a mobile-money provider. Amounts are SLE cents (bigint). The sandbox
 * (Test Mode) and the live adapter (Live Mode) both implement it.
 */
export type PaymentCodeStatus = 'pending' | 'completed' | 'failed' | 'expired';

export type PaymentCodeRequest = {
  /** Sent to the provider so that a retried call never creates a second payment code. */
  idempotencyKey: string;
  /** Our transaction id, carried in the provider's metadata to recover it from notifications. */
  reference: string;
  /** What the payer pays, in SLE cents: the deposit plus the fees. */
  amount: bigint;
  /** The deposit itself (what the wallet receives), in SLE cents; sent as metadata. */
  depositAmount: bigint;
  /** Shown to the payer, for example the application's name. */
  name: string;
  expiresInSeconds: number;
  description: string;
};

export type PaymentCode = {
  id: string;
  code: string;
  amount: bigint;
  currency: 'SLE';
  instructions: string;
  status: PaymentCodeStatus;
  expiresAt: string;
  reference: string;
};

/** A provider's notification about a payment code, once its signature is verified. */
export type MobileMoneyNotification = {
  paymentCodeId: string;
  status: PaymentCodeStatus;
  reference: string | null;
};

/** Where a payout to a mobile-money wallet stands at the provider. */
export type PayoutStatus = 'pending' | 'completed' | 'failed';

export type PayoutRequest = {
  /** Sent to the provider so that a retried call never pays out twice. */
  idempotencyKey: string;
  /** Our transaction id, carried in the provider's metadata to recover it from notifications. */
  reference: string;
  /** What the destination receives, in SLE cents. */
  amount: bigint;
  /** The mobile-money wallet paid, with its country code. */
  phoneNumber: string;
  description: string;
};

export type Payout = {
  id: string;
  amount: bigint;
  currency: 'SLE';
  status: PayoutStatus;
  reference: string;
};

/** A provider's notification about a payout, once its signature is verified. */
export type PayoutNotification = {
  payoutId: string;
  status: PayoutStatus;
  reference: string | null;
};

export interface MobileMoneyProvider {
  readonly name: string;
  /** Pays out to a mobile-money wallet (a cashout); the idempotency key makes a retry safe. */
  createPayout(request: PayoutRequest): Promise<Payout>;
  getPayout(id: string): Promise<Payout>;
  /**
   * Cancels a pending payout where the provider allows it; answers the payout as it stands then
   * (failed: it will never pay; pending: the provider would not cancel it; completed: paid).
   */
  cancelPayout(id: string): Promise<Payout>;
  /** Verifies and reads an inbound payout notification; null when it is not a valid one. */
  parsePayoutNotification(
    rawBody: string,
    headers: Record<string, string | undefined>,
  ): PayoutNotification | null;
  createPaymentCode(request: PaymentCodeRequest): Promise<PaymentCode>;
  getPaymentCode(id: string): Promise<PaymentCode>;
  /** Cancels a pending payment code where the provider allows it; answers it as it stands then. */
  cancelPaymentCode(id: string): Promise<PaymentCode>;
  /** Verifies and reads an inbound notification; null when the signature does not match. */
  parseNotification(
    rawBody: string,
    headers: Record<string, string | undefined>,
  ): MobileMoneyNotification | null;
}

/**
 * The provider refused the request for a business reason. The deposit activities turn it into a
 * `provider_refused` decline, which Temporal does not retry (a refused payment code is answered
 * with 400; a refused status check leaves the deposit as it stands).
 */
export class ProviderRefusedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProviderRefusedError';
  }
}

/**
 * The provider for this mode has no credentials configured: the activities turn it into a
 * `provider_unavailable` decline (503, nothing written), not retried.
 */
export class ProviderNotConfiguredError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderNotConfiguredError';
  }
}
