import { z } from 'zod';
import type { Config } from '../config';
import type { BookPage, BookWindow, ProviderBooks, ProviderRecord } from './books';
import {
  callMonime,
  monimeConnection,
  MonimeResponseError,
  type MonimeConnection,
  type MonimeOptions,
} from './monime';

/**
 * Live Mode mobile-money books: Monime's financial transactions (`GET /v1/financial-transactions`),
 * each traced through its ownership graph to the payment code (a deposit) or the payout (a cashout)
 * it belongs to, whose id the engine keeps as the provider reference.
 */

/** Monime lists at most this many objects a page. */
const MONIME_PAGE_MAX = 50;

const owner: z.ZodType<Owner> = z.lazy(() =>
  z.object({ id: z.string().nullish(), type: z.string().nullish(), owner: owner.nullish() }),
);
type Owner = { id?: string | null; type?: string | null; owner?: Owner | null };

const financialTransaction = z.object({
  id: z.string().min(1),
  type: z.enum(['credit', 'debit']),
  amount: z.object({
    currency: z.string().min(1),
    value: z.number().refine(Number.isSafeInteger, 'amount value must be an integer'),
  }),
  timestamp: z.string().refine((t) => !Number.isNaN(Date.parse(t)), 'timestamp must be a time'),
  originatingReversal: z.object({ originTxnId: z.string().nullish() }).nullish(),
  originatingFee: z.object({ code: z.string().nullish() }).nullish(),
  ownershipGraph: z.object({ owner: owner.nullish() }).nullish(),
});
type FinancialTransaction = z.infer<typeof financialTransaction>;

const listEnvelope = z.object({
  success: z.literal(true),
  result: z.array(financialTransaction),
  pagination: z.object({ next: z.string().nullish() }).nullish(),
});

/** The owners the engine's payments are, by the direction of the payment. */
const OWNERS: { direction: ProviderRecord['direction']; type: string; prefix: string }[] = [
  { direction: 'in', type: 'paymentcode', prefix: 'pmc-' },
  { direction: 'out', type: 'payout', prefix: 'pyt-' },
];

export class MonimeBooks implements ProviderBooks {
  readonly name = 'monime';
  private readonly connection: MonimeConnection;

  constructor(
    options: Pick<MonimeOptions, 'baseUrl' | 'accessToken' | 'spaceId' | 'timeoutMs' | 'fetch'>,
  ) {
    this.connection = monimeConnection(options);
  }

  /**
   * Monime's list takes no time filter: every page is read and the window kept here. The list's
   * own cursor (`pagination.next`) is ours.
   */
  async listRecords(window: BookWindow, cursor: string | null, limit: number): Promise<BookPage> {
    const query = new URLSearchParams({
      limit: String(Math.max(1, Math.min(limit, MONIME_PAGE_MAX))),
    });
    if (cursor !== null) query.set('after', cursor);
    const page = await callMonime(this.connection, {
      method: 'GET',
      path: `/v1/financial-transactions?${query.toString()}`,
      envelope: listEnvelope,
    });
    const from = Date.parse(window.from);
    const to = Date.parse(window.to);
    const records = page.result.flatMap((transaction) => {
      const at = Date.parse(transaction.timestamp);
      if (at < from || at >= to) return [];
      const record = toRecord(transaction);
      return record ? [record] : [];
    });
    const next = page.pagination?.next ?? null;
    if (next !== null && next === cursor) {
      throw new MonimeResponseError(`Monime answered the same page cursor again: ${next}`);
    }
    return { records, cursor: next || null };
  }
}

/**
 * A transaction of a payment code or payout as its record; null for any other (internal transfers)
 * and for fees, which Monime books as transactions of their own (the record's fee stays 0).
 */
function toRecord(transaction: FinancialTransaction): ProviderRecord | null {
  if (transaction.originatingFee) return null;
  const payment = paymentOf(transaction.ownershipGraph?.owner ?? null);
  if (!payment) return null;
  return {
    providerReference: payment.id,
    bookedAt: new Date(transaction.timestamp).toISOString(),
    amount: BigInt(Math.abs(transaction.amount.value)),
    currency: transaction.amount.currency.toUpperCase(),
    fee: 0n,
    direction: payment.direction,
    // A reversal gives the money back: the payment it reverses is undone.
    status: transaction.originatingReversal ? 'reversed' : 'succeeded',
  };
}

/** The payment code or payout up the ownership chain (a payment's owner is its payment code). */
function paymentOf(
  start: Owner | null,
): { id: string; direction: ProviderRecord['direction'] } | null {
  for (let node = start, depth = 0; node && depth < 10; node = node.owner ?? null, depth += 1) {
    const type = (node.type ?? '').toLowerCase().replace(/[^a-z]/g, '');
    const id = node.id ?? '';
    const known = OWNERS.find((o) => o.type === type || (type === '' && id.startsWith(o.prefix)));
    if (known && id) return { id, direction: known.direction };
  }
  return null;
}

/** The Live Mode mobile-money books when Monime's credentials are configured; null otherwise. */
export function monimeBooksFromConfig(config: Config): MonimeBooks | null {
  const { baseUrl, accessToken, spaceId, timeoutMs } = config.providers.monime;
  if (!accessToken || !spaceId) return null;
  return new MonimeBooks({ baseUrl, accessToken, spaceId, timeoutMs });
}
