import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { DatabasePool } from '../db/pool';
import {
  cancelSandboxCardRefund,
  findSandboxCardRefund,
  insertSandboxCardRefund,
  type SandboxCardRefundRow,
} from '../db/sandbox-card-refunds';
import {
  authenticateSandboxCardPayment,
  cancelSandboxCardPayment,
  findSandboxCardPayment,
  insertSandboxCardPayment,
  type SandboxCardPaymentRow,
} from '../db/sandbox-card-payments';
import {
  UnknownPaymentMethodError,
  type CardCaseEvent,
  type CardDisputeStatus,
  type CardEvent,
  type CardRefund,
  type CardRefundRequest,
  type CardMetadata,
  type CardPayment,
  type CardPaymentRequest,
  type CardPaymentStatus,
  type CardProvider,
} from './card';
import { ProviderRefusedError } from './mobile-money';
import { headerValue, signMonimeNotification, verifyMonimeSignature } from './monime';
import { SANDBOX_SIGNATURE_HEADER } from './sandbox-mobile-money';

type Behaviour =
  | { kind: 'succeeds' }
  | { kind: 'declined'; message: string }
  | { kind: 'authentication_required' };

type SandboxCard = Omit<CardMetadata, 'paymentMethodId'> & { behaviour: Behaviour };

const succeeds: Behaviour = { kind: 'succeeds' };

/** docs/api.md, Test Mode sandbox: the sandbox's fixed payment methods, one per branch a merchant tests. */
export const SANDBOX_CARDS: Readonly<Record<string, SandboxCard>> = {
  pm_card_visa: {
    brand: 'visa',
    country: 'US',
    funding: 'credit',
    last4: '4242',
    behaviour: succeeds,
  },
  pm_card_visa_debit: {
    brand: 'visa',
    country: 'US',
    funding: 'debit',
    last4: '5556',
    behaviour: succeeds,
  },
  pm_card_mastercard: {
    brand: 'mastercard',
    country: 'US',
    funding: 'credit',
    last4: '4444',
    behaviour: succeeds,
  },
  pm_card_amex: {
    brand: 'amex',
    country: 'US',
    funding: 'credit',
    last4: '8431',
    behaviour: succeeds,
  },
  pm_card_gb: {
    brand: 'visa',
    country: 'GB',
    funding: 'credit',
    last4: '0002',
    behaviour: succeeds,
  },
  pm_card_sl: {
    brand: 'visa',
    country: 'SL',
    funding: 'debit',
    last4: '0010',
    behaviour: succeeds,
  },
  pm_card_chargeDeclined: {
    brand: 'visa',
    country: 'US',
    funding: 'credit',
    last4: '0002',
    behaviour: { kind: 'declined', message: 'Your card was declined.' },
  },
  pm_card_insufficientFunds: {
    brand: 'visa',
    country: 'US',
    funding: 'debit',
    last4: '9995',
    behaviour: { kind: 'declined', message: 'Your card has insufficient funds.' },
  },
  pm_card_authenticationRequired: {
    brand: 'visa',
    country: 'US',
    funding: 'credit',
    last4: '3184',
    behaviour: { kind: 'authentication_required' },
  },
  // Its charges succeed; its refunds are accepted, then fail (docs/api.md, Refunds).
  pm_card_refundFails: {
    brand: 'visa',
    country: 'US',
    funding: 'credit',
    last4: '5100',
    behaviour: succeeds,
  },
};

/** The payment method whose refunds the sandbox accepts and then fails. */
export const SANDBOX_REFUND_FAILS_METHOD = 'pm_card_refundFails';

/** How long the sandbox's failing refund reads pending: "a moment" (docs/api.md, Refunds). */
export const SANDBOX_REFUND_FAILS_AFTER_MS = 1_000;

/** Why the sandbox's failing refund failed, in Stripe's words for a refund it could not make. */
export const SANDBOX_REFUND_FAILURE_REASON = 'expired_or_canceled_card';

function sandboxCard(paymentMethodId: string): SandboxCard | undefined {
  return Object.hasOwn(SANDBOX_CARDS, paymentMethodId) ? SANDBOX_CARDS[paymentMethodId] : undefined;
}

/** Stripe's own message when 3-D Secure fails. */
export const SANDBOX_AUTHENTICATION_FAILED_MESSAGE =
  'We are unable to authenticate your payment method. Please choose a different payment method and try again.';

/** Why a payment canceled before it was charged failed. */
export const SANDBOX_CANCELED_MESSAGE = 'The payment was canceled before it was charged.';

/** The page of the service where a person approves or fails a payment's 3-D Secure (a path). */
export function sandboxCardAuthenticationPath(paymentId: string): string {
  return `/api/v1/testing/card-authentication/${encodeURIComponent(paymentId)}`;
}

/** The event type the sandbox sends for a payment's status, named as Stripe names them. */
const EVENT_TYPES: Record<CardPaymentStatus, string> = {
  succeeded: 'payment_intent.succeeded',
  failed: 'payment_intent.payment_failed',
  requires_action: 'payment_intent.requires_action',
  processing: 'payment_intent.processing',
};

const sandboxEvent = z.object({
  id: z.string().min(1),
  type: z.string(),
  data: z.object({
    object: z.object({
      id: z.string().min(1),
      status: z.enum(['succeeded', 'requires_action', 'processing', 'failed']),
      metadata: z.object({ reference: z.string().nullable().optional() }).optional(),
    }),
  }),
});

function toCardPayment(row: SandboxCardPaymentRow): CardPayment {
  return {
    id: row.id,
    status: row.status,
    amount: row.amount,
    currency: row.currency,
    reference: row.reference,
    nextActionUrl: row.status === 'requires_action' ? sandboxCardAuthenticationPath(row.id) : null,
    declineMessage: row.status === 'failed' ? row.decline_message : null,
  };
}

/**
 * The Test Mode card provider: fixed payment methods with deterministic outcomes, payments kept
 * in Postgres (one per idempotency key), 3-D Secure finished by `authenticate`, and events signed
 * like the mobile-money sandbox's notifications (`sandbox-signature: t=<unix>,v1=<HMAC-SHA256>`).
 */
export class SandboxCardProvider implements CardProvider {
  readonly name = 'sandbox';

  constructor(
    private readonly pool: DatabasePool,
    private readonly webhookSecret: string,
  ) {}

  getCardMetadata(paymentMethodId: string): Promise<CardMetadata> {
    const card = sandboxCard(paymentMethodId);
    // An unknown payment method is a rejected promise, never a synchronous throw.
    if (!card) return Promise.reject(new UnknownPaymentMethodError(paymentMethodId));
    const { brand, country, funding, last4 } = card;
    return Promise.resolve({ paymentMethodId, brand, country, funding, last4 });
  }

  async createPayment(request: CardPaymentRequest): Promise<CardPayment> {
    const card = sandboxCard(request.paymentMethodId);
    if (!card) throw new UnknownPaymentMethodError(request.paymentMethodId);
    if (request.amount <= 0n) {
      throw new ProviderRefusedError('The amount of a card payment must be positive');
    }
    const outcome = card.behaviour;
    return toCardPayment(
      await insertSandboxCardPayment(this.pool, {
        id: `pi_sandbox_${randomUUID().replace(/-/g, '')}`,
        idempotencyKey: request.idempotencyKey,
        reference: request.reference,
        amount: request.amount,
        currency: request.currency,
        paymentMethodId: request.paymentMethodId,
        status:
          outcome.kind === 'succeeds'
            ? 'succeeded'
            : outcome.kind === 'declined'
              ? 'failed'
              : 'requires_action',
        declineMessage: outcome.kind === 'declined' ? outcome.message : null,
      }),
    );
  }

  async getPayment(paymentId: string): Promise<CardPayment> {
    const row = await findSandboxCardPayment(this.pool, paymentId);
    if (!row) throw new ProviderRefusedError(`No such payment: ${paymentId}`);
    return toCardPayment(row);
  }

  async cancelPayment(paymentId: string): Promise<CardPayment> {
    await cancelSandboxCardPayment(this.pool, paymentId, SANDBOX_CANCELED_MESSAGE);
    return this.getPayment(paymentId);
  }

  /**
   * The payer approved or failed 3-D Secure (the authentication page, or
   * simulate-card-authentication). A payment not awaiting authentication stays as it is, so a
   * repeated call answers the same payment.
   */
  async authenticate(paymentId: string, success: boolean): Promise<CardPayment> {
    await authenticateSandboxCardPayment(
      this.pool,
      paymentId,
      success
        ? { status: 'succeeded' }
        : { status: 'failed', declineMessage: SANDBOX_AUTHENTICATION_FAILED_MESSAGE },
    );
    return this.getPayment(paymentId);
  }

  /**
   * The event the sandbox sends about a payment, signed like a live one. Its id is derived from
   * the payment and its status, so the same transition delivered twice has the same event id.
   */
  eventFor(
    payment: CardPayment,
    nowSeconds: number = Math.floor(Date.now() / 1000),
  ): { body: string; headers: Record<string, string> } {
    const body = JSON.stringify({
      id: `evt_${payment.id}_${payment.status}`,
      type: EVENT_TYPES[payment.status],
      data: {
        object: {
          id: payment.id,
          status: payment.status,
          metadata: { reference: payment.reference },
        },
      },
    });
    return {
      body,
      headers: {
        [SANDBOX_SIGNATURE_HEADER]: signMonimeNotification(this.webhookSecret, body, nowSeconds),
      },
    };
  }

  parseEvent(rawBody: string, headers: Record<string, string | undefined>): CardEvent | null {
    const signature = headerValue(headers, SANDBOX_SIGNATURE_HEADER);
    if (!verifyMonimeSignature(this.webhookSecret, rawBody, signature)) return null;
    let json: unknown;
    try {
      json = JSON.parse(rawBody);
    } catch {
      return null;
    }
    const parsed = sandboxEvent.safeParse(json);
    if (!parsed.success) return null;
    const object = parsed.data.data.object;
    return {
      id: parsed.data.id,
      paymentId: object.id,
      status: object.status,
      reference: object.metadata?.reference ?? null,
    };
  }

  /**
   * Refunds part or all of a charged payment, once per idempotency key. A payment of
   * `pm_card_refundFails` has its refunds accepted and failed a moment later; a refund beyond
   * what the payment has left is refused, as Stripe refuses it.
   */
  async createRefund(request: CardRefundRequest): Promise<CardRefund> {
    const payment = await findSandboxCardPayment(this.pool, request.paymentId);
    if (!payment) throw new ProviderRefusedError(`No such payment: ${request.paymentId}`);
    const fails = payment.payment_method_id === SANDBOX_REFUND_FAILS_METHOD;
    const row = await insertSandboxCardRefund(this.pool, {
      id: `re_sandbox_${randomUUID().replace(/-/g, '')}`,
      paymentId: payment.id,
      idempotencyKey: request.idempotencyKey,
      reference: request.reference,
      amount: request.amount,
      currency: request.currency,
      failsAfterMs: fails ? SANDBOX_REFUND_FAILS_AFTER_MS : null,
    });
    if (!row) {
      throw new ProviderRefusedError(
        `Refund of ${request.amount} exceeds what payment ${payment.id} has left to refund`,
      );
    }
    return toCardRefund(row);
  }

  async getRefund(refundId: string): Promise<CardRefund> {
    const row = await findSandboxCardRefund(this.pool, refundId);
    if (!row) throw new ProviderRefusedError(`No such refund: ${refundId}`);
    return toCardRefund(row);
  }

  /** The sandbox cancels a refund it has not sent yet: it reads failed from then on. */
  async cancelRefund(refundId: string): Promise<CardRefund> {
    await cancelSandboxCardRefund(this.pool, refundId);
    return this.getRefund(refundId);
  }

  /** The sandbox takes the evidence as given; its decision comes from simulate-dispute-outcome. */
  submitDisputeEvidence(): Promise<void> {
    return Promise.resolve();
  }

  /** Test Mode disputes are decided by simulate-dispute-outcome, never asked of the sandbox. */
  getDisputeStatus(disputeId: string): Promise<CardDisputeStatus> {
    return Promise.reject(
      new ProviderRefusedError(`The sandbox keeps no dispute ${disputeId}: it is simulated`),
    );
  }

  /** The sandbox sends no refund or dispute events: the saga asks it, the simulate endpoints decide. */
  parseCaseEvent(): CardCaseEvent | null {
    return null;
  }
}

function toCardRefund(row: SandboxCardRefundRow): CardRefund {
  return {
    id: row.id,
    status: row.status,
    amount: row.amount,
    currency: row.currency,
    failureReason: row.status === 'failed' ? SANDBOX_REFUND_FAILURE_REASON : null,
  };
}
