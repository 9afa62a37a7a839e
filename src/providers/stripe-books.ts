import Stripe from 'stripe';
import type { Config } from '../config';
import type { BookPage, BookWindow, BookedStatus, ProviderBooks, ProviderRecord } from './books';
import { refusalOrTransient, StripeResponseError } from './stripe-card';

/**
 * Live Mode card books: Stripe's balance transactions of the window. The platform's own give the
 * card deposits (the PaymentIntent, as the engine records it) and the refunds; each connected
 * payout account's give its payouts (card payouts are paid out there, stripe-connect.ts).
 */

/** Stripe lists at most this many objects a page. */
const STRIPE_PAGE_MAX = 100;

type Mapping = { direction: ProviderRecord['direction']; status: BookedStatus };

/**
 * The balance transaction types that are the engine's payments, by where they are read; the rest
 * (transfers to connected accounts, Stripe's fees, the platform's own payouts) are not.
 */
const PLATFORM_TYPES: Record<string, Mapping> = {
  charge: { direction: 'in', status: 'succeeded' },
  payment: { direction: 'in', status: 'succeeded' },
  refund: { direction: 'out', status: 'succeeded' },
  payment_refund: { direction: 'out', status: 'succeeded' },
  // The refund's money came back: the refund failed (its source is the refund).
  refund_failure: { direction: 'out', status: 'failed' },
};
const ACCOUNT_TYPES: Record<string, Mapping> = {
  payout: { direction: 'out', status: 'succeeded' },
  payout_failure: { direction: 'out', status: 'failed' },
  payout_cancel: { direction: 'out', status: 'failed' },
};

/**
 * Where the next page starts: the platform's list, then each connected account's in the order of
 * their ids; `after` is the last balance transaction read (Stripe's `starting_after`).
 */
type Cursor = { account: string | null; after: string | null };

export type StripeBooksOptions = {
  secretKey: string;
  api?: { host: string; port: number; protocol: 'http' | 'https' };
  timeoutMs?: number;
  client?: Stripe;
  /** The application's connected payout accounts of the mode (src/db/payout-accounts.ts). */
  connectedAccounts: (window: BookWindow) => Promise<readonly string[]>;
};

export class StripeBooks implements ProviderBooks {
  readonly name = 'stripe';
  readonly client: Stripe;
  private readonly connectedAccounts: StripeBooksOptions['connectedAccounts'];

  constructor(options: StripeBooksOptions) {
    this.client =
      options.client ??
      new Stripe(options.secretKey, {
        maxNetworkRetries: 0,
        timeout: options.timeoutMs ?? 20_000,
        ...(options.api ?? {}),
      });
    this.connectedAccounts = options.connectedAccounts;
  }

  async listRecords(window: BookWindow, cursor: string | null, limit: number): Promise<BookPage> {
    const at: Cursor = cursor === null ? { account: null, after: null } : readCursor(cursor);
    const created = { gte: unixSeconds(window.from), lt: unixSeconds(window.to) };
    const params: Stripe.BalanceTransactionListParams = {
      created,
      limit: Math.max(1, Math.min(limit, STRIPE_PAGE_MAX)),
      ...(at.after ? { starting_after: at.after } : {}),
    };
    let page: Stripe.ApiList<Stripe.BalanceTransaction>;
    try {
      page =
        at.account === null
          ? // The charge's PaymentIntent is only on the charge itself.
            await this.client.balanceTransactions.list({ ...params, expand: ['data.source'] })
          : await this.client.balanceTransactions.list(params, { stripeAccount: at.account });
    } catch (error) {
      throw refusalOrTransient(error);
    }
    const types = at.account === null ? PLATFORM_TYPES : ACCOUNT_TYPES;
    const records = page.data.flatMap((transaction) => {
      const mapping = Object.hasOwn(types, transaction.type) ? types[transaction.type] : undefined;
      return mapping ? [toRecord(transaction, mapping)] : [];
    });
    const last = page.data[page.data.length - 1];
    if (page.has_more && last) {
      return { records, cursor: JSON.stringify({ account: at.account, after: last.id }) };
    }
    const next = await this.nextAccount(window, at.account);
    return {
      records,
      cursor: next === null ? null : JSON.stringify({ account: next, after: null }),
    };
  }

  /** The connected account after `account` (null: the platform's list), or null at the end. */
  private async nextAccount(window: BookWindow, account: string | null): Promise<string | null> {
    const accounts = [...new Set(await this.connectedAccounts(window))].sort();
    return accounts.find((id) => account === null || id > account) ?? null;
  }
}

function toRecord(transaction: Stripe.BalanceTransaction, mapping: Mapping): ProviderRecord {
  if (!Number.isSafeInteger(transaction.amount) || !Number.isSafeInteger(transaction.fee)) {
    throw new StripeResponseError(
      `Stripe answered balance transaction ${transaction.id} without amounts`,
    );
  }
  return {
    providerReference: referenceOf(transaction),
    bookedAt: new Date(transaction.created * 1000).toISOString(),
    amount: BigInt(Math.abs(transaction.amount)),
    currency: transaction.currency.toUpperCase(),
    fee: BigInt(Math.abs(transaction.fee)),
    direction: mapping.direction,
    status: mapping.status,
  };
}

/**
 * The id the engine keeps as the payment's provider reference: a deposit's PaymentIntent (a
 * charge without one: the charge), a refund's or a payout's own id.
 */
function referenceOf(transaction: Stripe.BalanceTransaction): string {
  const source = transaction.source;
  if (typeof source === 'string') return source;
  if (!source) {
    throw new StripeResponseError(
      `Stripe answered balance transaction ${transaction.id} without a source`,
    );
  }
  if (source.object === 'charge') {
    const intent = source.payment_intent;
    if (typeof intent === 'string') return intent;
    return intent?.id ?? source.id;
  }
  return source.id;
}

function unixSeconds(rfc3339: string): number {
  const ms = Date.parse(rfc3339);
  if (Number.isNaN(ms)) throw new RangeError(`${rfc3339} is not a time`);
  // `created` is whole seconds: [from, to) over seconds holds what [from, to) holds.
  return Math.ceil(ms / 1000);
}

function readCursor(text: string): Cursor {
  const parsed = JSON.parse(text) as Partial<Cursor>;
  return { account: parsed.account ?? null, after: parsed.after ?? null };
}

/** The Live Mode card books, or null without the Stripe secret key. */
export function stripeBooksFromConfig(
  config: Config,
  connectedAccounts: StripeBooksOptions['connectedAccounts'],
): StripeBooks | null {
  const { secretKey, api, timeoutMs } = config.providers.stripe;
  if (!secretKey) return null;
  return new StripeBooks({ secretKey, api, timeoutMs, connectedAccounts });
}
