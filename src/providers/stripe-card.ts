import { createHash } from 'node:crypto';
import Stripe from 'stripe';
import type { Config } from '../config';
import { CURRENCIES, type Currency } from '../domain/money';
import {
  UnknownPaymentMethodError,
  type CardCaseEvent,
  type CardDisputeStatus,
  type CardEvent,
  type CardRefund,
  type CardRefundRequest,
  type CardRefundStatus,
  type CardMetadata,
  type CardPayment,
  type CardPaymentRequest,
  type CardPaymentStatus,
  type CardProvider,
} from './card';
import { ProviderRefusedError } from './mobile-money';
import { headerValue } from './monime';

export const STRIPE_SIGNATURE_HEADER = 'stripe-signature';

/** The events `parseEvent` reads, for a webhook endpoint's subscription. */
export const STRIPE_CARD_EVENT_TYPES = [
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
  'payment_intent.requires_action',
  'payment_intent.processing',
  'payment_intent.canceled',
] as const;

const EVENT_STATUS: Record<(typeof STRIPE_CARD_EVENT_TYPES)[number], CardPaymentStatus> = {
  'payment_intent.succeeded': 'succeeded',
  'payment_intent.payment_failed': 'failed',
  'payment_intent.requires_action': 'requires_action',
  'payment_intent.processing': 'processing',
  'payment_intent.canceled': 'failed',
};

/**
 * A PaymentIntent's status as the engine sees it. `requires_capture` does not happen with
 * automatic capture; were it to, the card is authorised but not charged: still processing.
 */
const STATUS_MAP: Record<Stripe.PaymentIntent.Status, CardPaymentStatus> = {
  succeeded: 'succeeded',
  requires_action: 'requires_action',
  requires_confirmation: 'requires_action',
  processing: 'processing',
  requires_capture: 'processing',
  requires_payment_method: 'failed',
  canceled: 'failed',
};

/** The refund and dispute events `parseCaseEvent` reads, for a webhook endpoint's subscription. */
export const STRIPE_CASE_EVENT_TYPES = [
  'refund.created',
  'refund.updated',
  'refund.failed',
  'charge.refund.updated',
  'charge.dispute.created',
  'charge.dispute.updated',
  'charge.dispute.closed',
] as const;

/** A Refund's status as the engine sees it: anything not yet final is pending. */
const REFUND_STATUS: Record<string, CardRefundStatus> = {
  pending: 'pending',
  requires_action: 'pending',
  succeeded: 'succeeded',
  failed: 'failed',
  canceled: 'failed',
};

/**
 * A Dispute's status in the contract's words: an inquiry (`warning_*`) reads like a dispute, and
 * one closed without a chargeback (`warning_closed`, `prevented`) is won. An appeal follows a
 * lost decision whose money is gone: it reads lost until Stripe says won.
 */
const DISPUTE_STATUS: Record<string, CardDisputeStatus> = {
  warning_needs_response: 'needs_response',
  needs_response: 'needs_response',
  warning_under_review: 'under_review',
  under_review: 'under_review',
  warning_closed: 'won',
  prevented: 'won',
  won: 'won',
  lost: 'lost',
  appeal_needs_response: 'lost',
  appeal_under_review: 'lost',
};

const FUNDING = new Set<CardMetadata['funding']>(['credit', 'debit', 'prepaid', 'unknown']);

/** Stripe answered something this adapter cannot read as a card payment. */
export class StripeResponseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StripeResponseError';
  }
}

export type StripeCardOptions = {
  secretKey: string;
  webhookSecret: string;
  api?: { host: string; port: number; protocol: 'http' | 'https' };
  timeoutMs?: number;
  /** A client made elsewhere (tests observe its requests); built from the options otherwise. */
  client?: Stripe;
};

/**
 * Live Mode cards on the official `stripe` package. Every creating call carries our idempotency
 * key, so a retried activity gets what the first call made; the client never retries itself
 * (`maxNetworkRetries: 0`): Temporal owns retries. A card decline (402) is a `failed` payment.
 */
export class StripeCardProvider implements CardProvider {
  readonly name = 'stripe';
  readonly client: Stripe;
  private readonly webhookSecret: string;

  constructor(options: StripeCardOptions) {
    this.client =
      options.client ??
      new Stripe(options.secretKey, {
        maxNetworkRetries: 0,
        timeout: options.timeoutMs ?? 20_000,
        ...(options.api ?? {}),
      });
    this.webhookSecret = options.webhookSecret;
  }

  async getCardMetadata(paymentMethodId: string): Promise<CardMetadata> {
    let method: Stripe.PaymentMethod;
    try {
      method = await this.client.paymentMethods.retrieve(paymentMethodId);
    } catch (error) {
      if (isMissing(error)) throw new UnknownPaymentMethodError(paymentMethodId, { cause: error });
      throw refusalOrTransient(error);
    }
    const card = method.card;
    if (method.type !== 'card' || !card) {
      throw new ProviderRefusedError(`Payment method ${paymentMethodId} is not a card`);
    }
    const funding = card.funding as CardMetadata['funding'];
    return {
      paymentMethodId: method.id,
      brand: card.brand,
      country: (card.country ?? '').toUpperCase(),
      funding: FUNDING.has(funding) ? funding : 'unknown',
      last4: card.last4 || null,
    };
  }

  async createPayment(request: CardPaymentRequest): Promise<CardPayment> {
    const amount = Number(request.amount);
    if (!Number.isSafeInteger(amount) || amount <= 0) {
      throw new ProviderRefusedError(`Cannot charge ${request.amount} minor units to a card`);
    }
    let intent: Stripe.PaymentIntent;
    try {
      // Only what a PaymentIntent needs: the emulator (localstripe) refuses the rest, even
      // `allowed_payment_method_types`, so an account with redirect-based methods may ask for a
      // return_url (a ProviderRefusedError); unverified against Stripe itself.
      intent = await this.client.paymentIntents.create(
        {
          amount,
          currency: request.currency.toLowerCase(),
          payment_method: request.paymentMethodId,
          confirm: true,
          metadata: { reference: request.reference },
        },
        { idempotencyKey: request.idempotencyKey },
      );
    } catch (error) {
      if (isMissing(error)) {
        throw new UnknownPaymentMethodError(request.paymentMethodId, { cause: error });
      }
      const declined = await this.declinedIntent(error);
      if (declined) return toCardPayment(declined, request.reference);
      throw refusalOrTransient(error);
    }
    return toCardPayment(intent, request.reference);
  }

  async getPayment(paymentId: string): Promise<CardPayment> {
    try {
      return toCardPayment(await this.client.paymentIntents.retrieve(paymentId), null);
    } catch (error) {
      if (isMissing(error)) {
        throw new ProviderRefusedError(`No such payment: ${paymentId}`, { cause: error });
      }
      throw refusalOrTransient(error);
    }
  }

  async cancelPayment(paymentId: string): Promise<CardPayment> {
    try {
      return toCardPayment(await this.client.paymentIntents.cancel(paymentId), null);
    } catch (error) {
      if (isMissing(error)) {
        throw new ProviderRefusedError(`No such payment: ${paymentId}`, { cause: error });
      }
      // Charged (or failed) in the meantime, Stripe refuses the cancel
      // (`payment_intent_unexpected_state`; localstripe gives a bare 400): the payment stands.
      if (isInvalidRequest(error)) {
        const current = await this.getPayment(paymentId);
        if (current.status === 'succeeded' || current.status === 'failed') return current;
      }
      throw refusalOrTransient(error);
    }
  }

  parseEvent(rawBody: string, headers: Record<string, string | undefined>): CardEvent | null {
    const event = verifiedStripeEvent(this.client, rawBody, headers, this.webhookSecret);
    if (!event) return null;
    const status = Object.hasOwn(EVENT_STATUS, event.type)
      ? EVENT_STATUS[event.type as keyof typeof EVENT_STATUS]
      : undefined;
    if (!status) return null;
    const object = event.data.object as Partial<Stripe.PaymentIntent>;
    if (typeof object.id !== 'string') return null;
    const reference = object.metadata?.reference;
    return {
      id: event.id,
      paymentId: object.id,
      status,
      reference: typeof reference === 'string' ? reference : null,
    };
  }

  /**
   * Refunds.create with the PaymentIntent, the amount and our idempotency key: a retried call
   * answers the refund the first one made. Its outcome comes later in `refund.*` events.
   */
  async createRefund(request: CardRefundRequest): Promise<CardRefund> {
    const amount = Number(request.amount);
    if (!Number.isSafeInteger(amount) || amount <= 0) {
      throw new ProviderRefusedError(`Cannot refund ${request.amount} minor units`);
    }
    try {
      const refund = await this.client.refunds.create(
        {
          payment_intent: request.paymentId,
          amount,
          ...(request.reason ? { reason: request.reason } : {}),
          metadata: { reference: request.reference },
        },
        { idempotencyKey: request.idempotencyKey },
      );
      return toCardRefund(refund);
    } catch (error) {
      throw refusalOrTransient(error);
    }
  }

  async getRefund(refundId: string): Promise<CardRefund> {
    try {
      return toCardRefund(await this.client.refunds.retrieve(refundId));
    } catch (error) {
      if (isMissing(error)) {
        throw new ProviderRefusedError(`No such refund: ${refundId}`, { cause: error });
      }
      throw refusalOrTransient(error);
    }
  }

  /**
   * Refunds.cancel: Stripe cancels only a refund that waits on the customer; any other is
   * answered as it stands (a pending one: Stripe will not cancel it).
   */
  async cancelRefund(refundId: string): Promise<CardRefund> {
    try {
      return toCardRefund(await this.client.refunds.cancel(refundId));
    } catch (error) {
      if (!isInvalidRequest(error) || isMissing(error)) throw refusalOrTransient(error);
      return this.getRefund(refundId);
    }
  }

  /**
   * Disputes.update with the text as uncategorized evidence, submitted for review at once. The
   * idempotency key is the dispute and the text: a retry after a lost answer replays the first
   * answer instead of being refused for a dispute already submitted.
   */
  async submitDisputeEvidence(disputeId: string, text: string): Promise<void> {
    const digest = createHash('sha256').update(text, 'utf8').digest('hex');
    try {
      await this.client.disputes.update(
        disputeId,
        { evidence: { uncategorized_text: text }, submit: true },
        { idempotencyKey: `dispute-evidence-${disputeId}-${digest}` },
      );
    } catch (error) {
      throw refusalOrTransient(error);
    }
  }

  async getDisputeStatus(disputeId: string): Promise<CardDisputeStatus> {
    let dispute: Stripe.Dispute;
    try {
      dispute = await this.client.disputes.retrieve(disputeId);
    } catch (error) {
      if (isMissing(error)) {
        throw new ProviderRefusedError(`No such dispute: ${disputeId}`, { cause: error });
      }
      throw refusalOrTransient(error);
    }
    return disputeStatus(dispute.status);
  }

  /**
   * A refund or dispute event, read defensively: a refund event the adapter cannot read is null
   * like an unrelated one; a dispute event is `unreadable_dispute`, kept for an operator.
   */
  parseCaseEvent(
    rawBody: string,
    headers: Record<string, string | undefined>,
  ): CardCaseEvent | null {
    const event = verifiedStripeEvent(this.client, rawBody, headers, this.webhookSecret);
    if (!event || !(STRIPE_CASE_EVENT_TYPES as readonly string[]).includes(event.type)) {
      return null;
    }
    const object: unknown = event.data?.object;
    if (typeof object !== 'object' || object === null) return null;
    if (event.type.startsWith('charge.dispute.')) {
      return disputeEvent(event.id, event.type.slice('charge.dispute.'.length), object);
    }
    const refund = object as Partial<Stripe.Refund>;
    const status =
      typeof refund.status === 'string' && Object.hasOwn(REFUND_STATUS, refund.status)
        ? REFUND_STATUS[refund.status]
        : undefined;
    if (typeof refund.id !== 'string' || refund.object !== 'refund' || !status) return null;
    const reference = refund.metadata?.reference;
    return {
      kind: 'refund',
      id: event.id,
      refundId: refund.id,
      status: event.type === 'refund.failed' ? 'failed' : status,
      reference: typeof reference === 'string' ? reference : null,
    };
  }

  /**
   * The PaymentIntent a card decline left behind. Stripe puts it in the error; an error that
   * names only the charge (the emulator's) leads to it through the charge.
   */
  private async declinedIntent(error: unknown): Promise<Stripe.PaymentIntent | null> {
    if (!(error instanceof Stripe.errors.StripeError)) return null;
    if (error.statusCode !== 402 && error.type !== 'StripeCardError') return null;
    if (error.payment_intent?.id) return error.payment_intent;
    if (!error.charge) return null;
    const charge = await this.client.charges.retrieve(error.charge);
    const intentId =
      typeof charge.payment_intent === 'string' ? charge.payment_intent : charge.payment_intent?.id;
    return intentId ? this.client.paymentIntents.retrieve(intentId) : null;
  }
}

export function isMissing(error: unknown): boolean {
  return (
    error instanceof Stripe.errors.StripeError &&
    (error.code === 'resource_missing' || error.statusCode === 404)
  );
}

/** Stripe refuses the request as such (400): for a cancel, the payment's state allows none. */
function isInvalidRequest(error: unknown): boolean {
  return error instanceof Stripe.errors.StripeInvalidRequestError;
}

/** A business refusal (most 4xx) is not retried; anything else goes back to the caller as is. */
export function refusalOrTransient(error: unknown): unknown {
  if (
    error instanceof Stripe.errors.StripeError &&
    error.statusCode !== undefined &&
    error.statusCode >= 400 &&
    error.statusCode < 500 &&
    ![408, 409, 429].includes(error.statusCode)
  ) {
    return new ProviderRefusedError(`Stripe refused the request: ${error.message}`, {
      cause: error,
    });
  }
  return error;
}

function toCardPayment(
  intent: Stripe.PaymentIntent,
  requestedReference: string | null,
): CardPayment {
  const status = STATUS_MAP[intent.status];
  if (!status) {
    throw new StripeResponseError(
      `Stripe answered an unknown PaymentIntent status "${intent.status}"`,
    );
  }
  const currency = intent.currency.toUpperCase() as Currency;
  if (!CURRENCIES.includes(currency)) {
    throw new StripeResponseError(`Stripe answered a payment in ${intent.currency}`);
  }
  const reference = intent.metadata?.reference;
  return {
    id: intent.id,
    status,
    amount: BigInt(intent.amount),
    currency,
    reference: typeof reference === 'string' ? reference : requestedReference,
    nextActionUrl: status === 'requires_action' ? nextActionUrl(intent) : null,
    declineMessage:
      status === 'failed'
        ? (intent.last_payment_error?.message ??
          (intent.status === 'canceled' ? 'The payment was canceled.' : 'Your card was declined.'))
        : null,
  };
}

/**
 * Where the payer authenticates: `redirect_to_url` when Stripe gives one; a server-side
 * confirmation without return_url gets `use_stripe_sdk`, whose `stripe_js` is Stripe's hosted
 * 3-D Secure page (the emulator leaves it empty: null then).
 */
function nextActionUrl(intent: Stripe.PaymentIntent): string | null {
  const action = intent.next_action;
  if (!action) return null;
  if (action.redirect_to_url?.url) return action.redirect_to_url.url;
  const sdk = action.use_stripe_sdk as { stripe_js?: unknown } | undefined;
  return typeof sdk?.stripe_js === 'string' && sdk.stripe_js !== '' ? sdk.stripe_js : null;
}

/** A dispute event's object as the engine reads it; null when it lacks what is needed. */
const DISPUTE_CHANGES = ['created', 'updated', 'closed'] as const;
const isDisputeChange = (change: string): change is (typeof DISPUTE_CHANGES)[number] =>
  (DISPUTE_CHANGES as readonly string[]).includes(change);

function disputeEvent(eventId: string, change: string, object: object): CardCaseEvent | null {
  if (!isDisputeChange(change)) return null;
  const dispute = object as Partial<Stripe.Dispute>;
  const paymentId =
    typeof dispute.payment_intent === 'string'
      ? dispute.payment_intent
      : dispute.payment_intent?.id;
  const currency =
    typeof dispute.currency === 'string' ? (dispute.currency.toUpperCase() as Currency) : null;
  const status =
    typeof dispute.status === 'string' && Object.hasOwn(DISPUTE_STATUS, dispute.status)
      ? DISPUTE_STATUS[dispute.status]
      : undefined;
  const unreadable = (why: string): CardCaseEvent => ({
    kind: 'unreadable_dispute',
    id: eventId,
    change,
    disputeId: typeof dispute.id === 'string' ? dispute.id : eventId,
    paymentId: typeof paymentId === 'string' ? paymentId : null,
    status: typeof dispute.status === 'string' ? dispute.status : 'unknown',
    why,
  });
  if (typeof dispute.id !== 'string') return unreadable('no dispute id');
  if (typeof paymentId !== 'string') return unreadable('no payment intent');
  if (!status) return unreadable(`status ${String(dispute.status)}`);
  if (!Number.isSafeInteger(dispute.amount) || (dispute.amount as number) <= 0) {
    return unreadable(`amount ${String(dispute.amount)}`);
  }
  if (!currency || !CURRENCIES.includes(currency)) {
    return unreadable(`currency ${String(dispute.currency)}`);
  }
  const dueBy = dispute.evidence_details?.due_by;
  return {
    kind: 'dispute',
    id: eventId,
    change,
    disputeId: dispute.id,
    paymentId,
    amount: BigInt(dispute.amount as number),
    currency,
    reason: typeof dispute.reason === 'string' ? dispute.reason : 'general',
    status,
    evidenceDueBy:
      typeof dueBy === 'number' && Number.isSafeInteger(dueBy)
        ? new Date(dueBy * 1000).toISOString()
        : null,
  };
}

function toCardRefund(refund: Stripe.Refund): CardRefund {
  const status =
    refund.status && Object.hasOwn(REFUND_STATUS, refund.status)
      ? REFUND_STATUS[refund.status]
      : undefined;
  if (!status) {
    throw new StripeResponseError(`Stripe answered an unknown Refund status "${refund.status}"`);
  }
  const currency = refund.currency.toUpperCase() as Currency;
  if (!CURRENCIES.includes(currency)) {
    throw new StripeResponseError(`Stripe answered a refund in ${refund.currency}`);
  }
  return {
    id: refund.id,
    status,
    amount: BigInt(refund.amount),
    currency,
    failureReason:
      status === 'failed'
        ? (refund.failure_reason ?? (refund.status === 'canceled' ? 'canceled' : 'unknown'))
        : null,
  };
}

function disputeStatus(status: string): CardDisputeStatus {
  const known = Object.hasOwn(DISPUTE_STATUS, status) ? DISPUTE_STATUS[status] : undefined;
  if (!known)
    throw new StripeResponseError(`Stripe answered an unknown Dispute status "${status}"`);
  return known;
}

/** The Live Mode card provider, or null when its keys are not both configured (503). */
export function stripeCardFromConfig(config: Config): StripeCardProvider | null {
  const { secretKey, webhookSecret, api, timeoutMs } = config.providers.stripe;
  if (!secretKey || !webhookSecret) return null;
  return new StripeCardProvider({ secretKey, webhookSecret, api, timeoutMs });
}

/**
 * The Stripe event of a notification, its `Stripe-Signature` verified with the endpoint's
 * secret; null when the header is missing, no secret is configured or the signature does not
 * match.
 */
export function verifiedStripeEvent(
  client: Stripe,
  rawBody: string,
  headers: Record<string, string | undefined>,
  webhookSecret: string | null,
): Stripe.Event | null {
  const signature = headerValue(headers, STRIPE_SIGNATURE_HEADER);
  if (!signature || !webhookSecret) return null;
  try {
    return client.webhooks.constructEvent(rawBody, signature, webhookSecret);
  } catch {
    return null;
  }
}

/**
 * The id of an event signed with the endpoint's secret, whatever its type: the card webhook
 * answers 200 to one that no reader takes (an event type it does not act on), so that Stripe
 * neither retries it nor disables the endpoint; null when the signature does not match.
 */
export function signedStripeEventId(
  rawBody: string,
  headers: Record<string, string | undefined>,
  webhookSecret: string | null | undefined,
): string | null {
  const signature = headerValue(headers, STRIPE_SIGNATURE_HEADER);
  if (!signature || !webhookSecret) return null;
  try {
    return Stripe.webhooks.constructEvent(rawBody, signature, webhookSecret).id ?? null;
  } catch {
    return null;
  }
}
