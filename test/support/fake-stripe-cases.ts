import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { nestForm, type FakeStripeRequest } from './fake-stripe-connect';

/**
 * A fake Stripe API on 127.0.0.1, port 0, for the refund and dispute calls of the Live Mode card
 * adapter that localstripe cannot answer: a refund accepted `pending` that later reads `failed`,
 * a refund beyond what the payment has left (localstripe accepts it), `Idempotency-Key` (which
 * localstripe ignores), and disputes (localstripe has none). It speaks Stripe's wire format as
 * fake-stripe-connect.ts does: bearer secret key, form-encoded bodies with bracketed keys, the
 * same key answering the same response, Stripe's error body; every request is recorded.
 */

type Answer = { status: number; body: unknown };

/** What a payment's refunds do: succeed at once, stay pending, or read failed once looked at. */
export type FakeRefundBehaviour = 'succeeds' | 'pending' | 'fails_later';

type FakePayment = { id: string; amount: number; currency: string; refunds: FakeRefundBehaviour };

type FakeRefund = {
  id: string;
  payment_intent: string;
  amount: number;
  currency: string;
  status: 'pending' | 'succeeded' | 'failed';
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

const error = (status: number, type: string, message: string, code?: string): Answer => ({
  status,
  body: { error: { type, message, ...(code ? { code } : {}) } },
});

export class FakeStripeCases {
  readonly requests: FakeStripeRequest[] = [];
  readonly payments = new Map<string, FakePayment>();
  readonly refunds = new Map<string, FakeRefund>();
  readonly disputes = new Map<string, FakeDispute>();
  readonly secretKey = 'sk_test_fake_cases';
  private readonly replies = new Map<string, Answer>();
  private readonly faults: number[] = [];
  private counter = 0;

  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<FakeStripeCases> {
    const server = http.createServer();
    const fake = new FakeStripeCases(server);
    server.on('request', (req, res) => {
      fake.handle(req, res).catch((e: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'api_error', message: String(e) } }));
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return fake;
  }

  get api(): { host: string; port: number; protocol: 'http' } {
    return {
      host: '127.0.0.1',
      port: (this.server.address() as AddressInfo).port,
      protocol: 'http',
    };
  }

  /** The next `n` requests answer this status (a 5xx: Stripe is down; 429: rate limited). */
  failNext(n: number, status: number): void {
    for (let i = 0; i < n; i += 1) this.faults.push(status);
  }

  requestsTo(method: string, pattern: RegExp): FakeStripeRequest[] {
    return this.requests.filter((r) => r.method === method && pattern.test(r.path));
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

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private nextId(prefix: string): string {
    this.counter += 1;
    return `${prefix}_fake${String(this.counter).padStart(6, '0')}`;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const request: FakeStripeRequest = {
      method: req.method ?? 'GET',
      path: (req.url ?? '/').split('?')[0]!,
      headers: req.headers,
      form: nestForm(new URLSearchParams(text || ((req.url ?? '').split('?')[1] ?? ''))),
    };
    this.requests.push(request);
    const answer = this.answer(request);
    res.writeHead(answer.status, { 'content-type': 'application/json', 'request-id': 'req_fake' });
    res.end(JSON.stringify(answer.body));
  }

  private answer(request: FakeStripeRequest): Answer {
    if (request.headers.authorization !== `Bearer ${this.secretKey}`) {
      return error(401, 'invalid_request_error', 'Invalid API Key provided');
    }
    const fault = this.faults.shift();
    if (fault !== undefined) {
      return fault === 429
        ? error(429, 'invalid_request_error', 'Too many requests', 'rate_limit')
        : error(fault, 'api_error', 'Something went wrong on our end');
    }
    const key = request.headers['idempotency-key'];
    if (request.method === 'POST' && typeof key === 'string') {
      const earlier = this.replies.get(key);
      if (earlier) return earlier;
      const answer = this.route(request);
      if (answer.status < 500) this.replies.set(key, answer);
      return answer;
    }
    return this.route(request);
  }

  private route(request: FakeStripeRequest): Answer {
    const { method, path, form } = request;
    let match: RegExpMatchArray | null;
    if (method === 'POST' && path === '/v1/refunds') return this.createRefund(form);
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
      .filter((r) => r.payment_intent === payment.id && r.status !== 'failed')
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
      status: payment.refunds === 'succeeds' ? 'succeeded' : 'pending',
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
