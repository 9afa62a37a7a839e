import {
  FakeStripeServer,
  stripeError,
  type Answer,
  type FakeStripeRequest,
} from './fake-stripe-server';

/**
 * Stripe's balance transactions list in its wire format (fake-stripe-server.ts): the platform's
 * and each `Stripe-Account`'s, newest first, with the window, pages and the expanded source.
 */

type Source =
  | { object: 'charge'; id: string; payment_intent: string | null; amount: number }
  | { object: 'refund'; id: string; payment_intent: string; amount: number }
  | { object: 'payout'; id: string; amount: number }
  | { object: 'transfer'; id: string; amount: number };

export type FakeBalanceTransaction = {
  id: string;
  object: 'balance_transaction';
  amount: number;
  available_on: number;
  created: number;
  currency: string;
  description: string | null;
  exchange_rate: null;
  fee: number;
  fee_details: { amount: number; currency: string; type: string; description: string }[];
  net: number;
  reporting_category: string;
  status: 'available' | 'pending';
  type: string;
  /** Held expanded; the list answers the id unless `data.source` is expanded. */
  source: Source;
};

export class FakeStripeBooks extends FakeStripeServer {
  readonly secretKey = 'sk_test_fake_books';
  /** By account (`''`: the platform). */
  private readonly books = new Map<string, FakeBalanceTransaction[]>();

  static start(): Promise<FakeStripeBooks> {
    return FakeStripeServer.listen(new FakeStripeBooks());
  }

  /**
   * A balance transaction booked at `created` (unix seconds): `amount` signed as Stripe signs it
   * (negative: money leaving the balance), the fee positive.
   */
  add(
    input: {
      type: string;
      amount: number;
      fee?: number;
      currency?: string;
      created: number;
      source: Source;
    },
    account = '',
  ): FakeBalanceTransaction {
    const fee = input.fee ?? 0;
    const currency = input.currency ?? 'usd';
    const transaction: FakeBalanceTransaction = {
      id: this.nextId('txn'),
      object: 'balance_transaction',
      amount: input.amount,
      available_on: input.created + 2 * 86_400,
      created: input.created,
      currency,
      description: null,
      exchange_rate: null,
      fee,
      fee_details: fee
        ? [{ amount: fee, currency, type: 'stripe_fee', description: 'Stripe processing fees' }]
        : [],
      net: input.amount - fee,
      reporting_category: input.type,
      status: 'available',
      type: input.type,
      source: input.source,
    };
    const list = this.books.get(account) ?? [];
    list.push(transaction);
    this.books.set(account, list);
    return transaction;
  }

  protected route(request: FakeStripeRequest): Answer {
    if (request.method !== 'GET' || request.path !== '/v1/balance_transactions') {
      return stripeError(
        404,
        'invalid_request_error',
        `Unrecognized request URL (${request.path})`,
      );
    }
    const account = String(request.headers['stripe-account'] ?? '');
    const form = request.form as {
      created?: { gte?: string; lt?: string };
      limit?: string;
      starting_after?: string;
      expand?: Record<string, string>;
    };
    const limit = Number(form.limit ?? 10);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      return stripeError(
        400,
        'invalid_request_error',
        'Invalid integer: limit',
        'parameter_invalid_integer',
      );
    }
    const gte = form.created?.gte === undefined ? -Infinity : Number(form.created.gte);
    const lt = form.created?.lt === undefined ? Infinity : Number(form.created.lt);
    // Newest first, as Stripe lists; ties by id, newest id first.
    const all = (this.books.get(account) ?? [])
      .filter((t) => t.created >= gte && t.created < lt)
      .sort((a, b) => b.created - a.created || b.id.localeCompare(a.id));
    let start = 0;
    if (form.starting_after) {
      const index = all.findIndex((t) => t.id === form.starting_after);
      if (index < 0) {
        return stripeError(
          400,
          'invalid_request_error',
          `No such balance transaction: '${form.starting_after}'`,
          'resource_missing',
        );
      }
      start = index + 1;
    }
    const expanded = Object.values(form.expand ?? {}).includes('data.source');
    const data = all
      .slice(start, start + limit)
      .map((t) => ({ ...t, source: expanded ? t.source : t.source.id }));
    return {
      status: 200,
      body: {
        object: 'list',
        data,
        has_more: start + limit < all.length,
        url: '/v1/balance_transactions',
      },
    };
  }
}
