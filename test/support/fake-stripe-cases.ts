import Stripe from 'stripe';
import {
  FakeStripeServer,
  stripeError,
  type Answer,
  type FakeStripeRequest,
} from './fake-stripe-server';

/**
 * A fake Stripe API for the refund and dispute calls localstripe cannot answer (docs/testing.md
 * "The helpers": pending then failed refunds, over-refunds, `Idempotency-Key`, disputes), in
 * Stripe's wire format (fake-stripe-server.ts); every request recorded.
 */

/**
 * What a payment's refunds do: succeed at once, stay pending, read failed once looked at, or wait
 * on the customer (`requires_action`, the only status Stripe cancels).
 */
export type FakeRefundBehaviour = 'succeeds' | 'pending' | 'fails_later' | 'requires_action';

type FakePayment = { id: string; amount: number; currency: string; refunds: FakeRefundBehaviour };

type FakeRefund = {
  id: string;
  payment_intent: string;
  amount: number;
  currency: string;
  status: 'pending' | 'succeeded' | 'failed' | 'requires_action' | 'canceled';
  reason: string | null;
  metadata: Record<string, unknown>;
  failsLater: boolean;
};

export type FakeDisputeStatus =
  | 'warning_needs_response'
  | 'warning_under_review'
  | 'warning_closed'
  | 'needs_response'
  | 'under_review'
  | 'won'
  | 'lost'
  | 'prevented'
  | 'appeal_needs_response'
  | 'appeal_under_review';

type FakeDispute = {
  id: string;
  payment_intent: string;
  amount: number;
  currency: string;
  reason: string;
  status: FakeDisputeStatus;
  due_by: number;
  evidence: Record<string, unknown>;
  submission_count: number;
};

const REASONS = new Set(['duplicate', 'fraudulent', 'requested_by_customer']);
const CLOSED = new Set(['won', 'lost', 'warning_closed', 'prevented']);

const error = stripeError;

export class FakeStripeCases extends FakeStripeServer {
  readonly payments = new Map<string, FakePayment>();
  readonly refunds = new Map<string, FakeRefund>();
  readonly disputes = new Map<string, FakeDispute>();
  readonly secretKey = 'sk_test_fake_cases';

  static start(): Promise<FakeStripeCases> {
    return FakeStripeServer.listen(new FakeStripeCases());
  }

  /** A succeeded PaymentIntent of `amount` minor units whose refunds behave as said. */
  addPayment(amount: number, refunds: FakeRefundBehaviour = 'succeeds', currency = 'usd'): string {
    const id = this.nextId('pi');
    this.payments.set(id, { id, amount, currency, refunds });
    return id;
  }

  /** A dispute of that payment, in that status, evidence due in a week from a fixed instant. */
  addDispute(paymentIntent: string, status: FakeDisputeStatus, amount?: number): string {
    const payment = this.payments.get(paymentIntent);
    if (!payment) throw new Error(`no payment ${paymentIntent}`);
    const id = this.nextId('dp');
    this.disputes.set(id, {
      id,
      payment_intent: paymentIntent,
      amount: amount ?? payment.amount,
      currency: payment.currency,
      reason: 'fraudulent',
      status,
      due_by: 1_800_000_000,
      evidence: {},
      submission_count: 0,
    });
    return id;
  }

  /** Stripe's JSON of a refund as it stands now, as an event's `data.object` carries it. */
  refundObject(refundId: string) {
    const refund = this.refunds.get(refundId);
    if (!refund) throw new Error(`no refund ${refundId}`);
    return {
      id: refund.id,
      object: 'refund',
      amount: refund.amount,
      balance_transaction: null,
      charge: `ch_for_${refund.payment_intent}`,
      created: 1_790_000_000,
      currency: refund.currency,
      failure_reason: refund.status === 'failed' ? 'expired_or_canceled_card' : undefined,
      metadata: refund.metadata,
      payment_intent: refund.payment_intent,
      reason: refund.reason,
      receipt_number: null,
      status: refund.status,
    };
  }

  /** Stripe's JSON of a dispute as it stands now. */
  disputeObject(disputeId: string) {
    const dispute = this.disputes.get(disputeId);
    if (!dispute) throw new Error(`no dispute ${disputeId}`);
    return {
      id: dispute.id,
      object: 'dispute',
      amount: dispute.amount,
      balance_transactions: [],
      charge: `ch_for_${dispute.payment_intent}`,
      created: 1_790_000_000,
      currency: dispute.currency,
      evidence: { uncategorized_text: null, ...dispute.evidence },
      evidence_details: {
        due_by: dispute.due_by,
        has_evidence: Object.keys(dispute.evidence).length > 0,
        past_due: false,
        submission_count: dispute.submission_count,
      },
      is_charge_refundable: false,
      livemode: false,
      metadata: {},
      payment_intent: dispute.payment_intent,
      reason: dispute.reason,
      status: dispute.status,
    };
  }

  /** A Stripe event (`{id, object: 'event', type, data: {object}}`) as its endpoint receives it. */
  eventBody(type: string, object: unknown): string {
    return JSON.stringify({
      id: this.nextId('evt'),
      object: 'event',
      api_version: Stripe.API_VERSION,
      created: 1_790_000_000,
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type,
      data: { object },
    });
  }

  protected route(request: FakeStripeRequest): Answer {
    const { method, path, form } = request;
    let match: RegExpMatchArray | null;
    if (method === 'POST' && path === '/v1/refunds') return this.createRefund(form);
    if (method === 'POST' && (match = path.match(/^\/v1\/refunds\/([^/]+)\/cancel$/))) {
      const refund = this.refunds.get(match[1]!);
      if (!refund) {
        return error(
          404,
          'invalid_request_error',
          `No such refund: '${match[1]}'`,
          'resource_missing',
        );
      }
      if (refund.status !== 'requires_action') {
        return error(400, 'invalid_request_error', `Refund ${refund.id} cannot be canceled`);
      }
      refund.status = 'canceled';
      return { status: 200, body: this.refundObject(refund.id) };
    }
    if (method === 'GET' && (match = path.match(/^\/v1\/refunds\/([^/]+)$/))) {
      const refund = this.refunds.get(match[1]!);
      if (!refund) {
        return error(
          404,
          'invalid_request_error',
          `No such refund: '${match[1]}'`,
          'resource_missing',
        );
      }
      // The card network answers later: the refund is seen failed when next looked at.
      if (refund.failsLater) refund.status = 'failed';
      return { status: 200, body: this.refundObject(refund.id) };
    }
    if ((match = path.match(/^\/v1\/disputes\/([^/]+)$/))) {
      const dispute = this.disputes.get(match[1]!);
      if (!dispute) {
        return error(
          404,
          'invalid_request_error',
          `No such dispute: '${match[1]}'`,
          'resource_missing',
        );
      }
      if (method === 'POST') {
        const refused = this.updateDispute(dispute, form);
        if (refused) return refused;
      }
      return { status: 200, body: this.disputeObject(dispute.id) };
    }
    return error(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path})`);
  }

  private createRefund(form: Record<string, unknown>): Answer {
    const payment = this.payments.get(String(form.payment_intent));
    if (!payment) {
      return error(
        404,
        'invalid_request_error',
        `No such payment_intent: '${String(form.payment_intent)}'`,
        'resource_missing',
      );
    }
    const reason = typeof form.reason === 'string' ? form.reason : null;
    if (form.reason !== undefined && !(reason && REASONS.has(reason))) {
      return error(400, 'invalid_request_error', 'Invalid reason', 'parameter_invalid_empty');
    }
    const refunded = [...this.refunds.values()]
      .filter((r) => r.payment_intent === payment.id && !['failed', 'canceled'].includes(r.status))
      .reduce((sum, r) => sum + r.amount, 0);
    const left = payment.amount - refunded;
    if (left <= 0) {
      return error(
        400,
        'invalid_request_error',
        `Charge ch_for_${payment.id} has already been refunded.`,
        'charge_already_refunded',
      );
    }
    const amount = form.amount === undefined ? left : Number(form.amount);
    if (!Number.isInteger(amount) || amount <= 0) {
      return error(400, 'invalid_request_error', 'Invalid integer', 'parameter_invalid_integer');
    }
    if (amount > left) {
      return error(
        400,
        'invalid_request_error',
        `Refund amount (${amount}) is greater than unrefunded amount on charge (${left})`,
        'amount_too_large',
      );
    }
    const refund: FakeRefund = {
      id: this.nextId('re'),
      payment_intent: payment.id,
      amount,
      currency: payment.currency,
      status:
        payment.refunds === 'succeeds'
          ? 'succeeded'
          : payment.refunds === 'requires_action'
            ? 'requires_action'
            : 'pending',
      reason,
      metadata: (form.metadata as Record<string, unknown>) ?? {},
      failsLater: payment.refunds === 'fails_later',
    };
    this.refunds.set(refund.id, refund);
    return { status: 200, body: this.refundObject(refund.id) };
  }

  private updateDispute(dispute: FakeDispute, form: Record<string, unknown>): Answer | null {
    if (CLOSED.has(dispute.status) || dispute.status.startsWith('appeal_')) {
      return error(
        400,
        'invalid_request_error',
        'This dispute is already closed',
        'dispute_already_closed',
      );
    }
    if (dispute.status.endsWith('under_review')) {
      return error(
        400,
        'invalid_request_error',
        'Evidence has already been submitted for this dispute',
      );
    }
    dispute.evidence = { ...dispute.evidence, ...((form.evidence as object) ?? {}) };
    if (form.submit === 'true') {
      dispute.submission_count += 1;
      dispute.status = dispute.status.startsWith('warning_')
        ? 'warning_under_review'
        : 'under_review';
    }
    return null;
  }
}
