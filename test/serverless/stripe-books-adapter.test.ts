import Stripe from 'stripe';
import { loadConfig } from '../../src/config';
import type { BookWindow, ProviderRecord } from '../../src/providers/books';
import { ProviderRefusedError } from '../../src/providers/mobile-money';
import { StripeBooks, stripeBooksFromConfig } from '../../src/providers/stripe-books';
import { FakeStripeBooks } from '../support/fake-stripe-books';

/**
 * The Live Mode card books over HTTP with the official `stripe` package, against a fake of
 * Stripe's balance transactions list in its wire format: what each type of transaction becomes,
 * the window, and the pages over the platform then every connected payout account.
 */

const DAY = Date.UTC(2026, 2, 1) / 1000;
const window: BookWindow = {
  applicationId: '00000000-0000-4000-8000-000000000001',
  mode: 'live',
  from: '2026-03-01T00:00:00Z',
  to: '2026-03-02T00:00:00Z',
};
const at = (seconds: number) => new Date((DAY + seconds) * 1000).toISOString();

let fake: FakeStripeBooks;
let accounts: string[];
let books: StripeBooks;

beforeAll(async () => {
  fake = await FakeStripeBooks.start();
  accounts = ['acct_b', 'acct_a'];
  books = new StripeBooks({
    secretKey: fake.secretKey,
    api: fake.api,
    timeoutMs: 5_000,
    connectedAccounts: () => Promise.resolve(accounts),
  });
});
afterAll(async () => fake?.close());

/** Every page of the window, with each page's size. */
async function readAll(limit: number): Promise<{ records: ProviderRecord[]; pages: number[] }> {
  const records: ProviderRecord[] = [];
  const pages: number[] = [];
  let cursor: string | null = null;
  do {
    const page = await books.listRecords(window, cursor, limit);
    expect(page.records.length).toBeLessThanOrEqual(limit);
    records.push(...page.records);
    pages.push(page.records.length);
    cursor = page.cursor;
  } while (cursor !== null && pages.length < 100);
  return { records, pages };
}

describe('StripeBooks against a Stripe-format fake', () => {
  beforeAll(() => {
    // The platform: a deposit, one charged without a PaymentIntent, a refund and a failed one.
    fake.add({
      type: 'charge',
      amount: 1_250,
      fee: 66,
      created: DAY + 10,
      source: { object: 'charge', id: 'ch_1', payment_intent: 'pi_1', amount: 1_250 },
    });
    fake.add({
      type: 'payment',
      amount: 700,
      fee: 20,
      created: DAY + 20,
      source: { object: 'charge', id: 'py_2', payment_intent: null, amount: 700 },
    });
    fake.add({
      type: 'refund',
      amount: -500,
      created: DAY + 30,
      source: { object: 'refund', id: 're_3', payment_intent: 'pi_1', amount: 500 },
    });
    fake.add({
      type: 'refund_failure',
      amount: 500,
      created: DAY + 40,
      source: { object: 'refund', id: 're_3', payment_intent: 'pi_1', amount: 500 },
    });
    // Not the engine's payments: a transfer to a connected account, outside the window.
    fake.add({
      type: 'transfer',
      amount: -900,
      created: DAY + 50,
      source: { object: 'transfer', id: 'tr_4', amount: 900 },
    });
    fake.add({
      type: 'charge',
      amount: 100,
      created: DAY - 1,
      source: { object: 'charge', id: 'ch_early', payment_intent: 'pi_early', amount: 100 },
    });
    fake.add({
      type: 'charge',
      amount: 100,
      created: DAY + 86_400,
      source: { object: 'charge', id: 'ch_late', payment_intent: 'pi_late', amount: 100 },
    });
    // Connected accounts: their payouts, one failed; the transfer that funded one.
    fake.add(
      {
        type: 'transfer',
        amount: 900,
        created: DAY + 60,
        source: { object: 'transfer', id: 'py_t', amount: 900 },
      },
      'acct_a',
    );
    fake.add(
      {
        type: 'payout',
        amount: -900,
        created: DAY + 70,
        source: { object: 'payout', id: 'po_a1', amount: 900 },
      },
      'acct_a',
    );
    fake.add(
      {
        type: 'payout',
        amount: -300,
        created: DAY + 80,
        source: { object: 'payout', id: 'po_b1', amount: 300 },
      },
      'acct_b',
    );
    fake.add(
      {
        type: 'payout_failure',
        amount: 300,
        created: DAY + 90,
        source: { object: 'payout', id: 'po_b1', amount: 300 },
      },
      'acct_b',
    );
  });

  it('reads deposits by PaymentIntent, refunds and payouts by their ids, in minor units', async () => {
    const { records } = await readAll(100);
    expect(records).toEqual([
      // The platform's list, newest first as Stripe lists it.
      record('re_3', 40, 500n, 'out', 'failed'),
      record('re_3', 30, 500n, 'out', 'succeeded'),
      record('py_2', 20, 700n, 'in', 'succeeded', 20n),
      record('pi_1', 10, 1_250n, 'in', 'succeeded', 66n),
      // Then each connected account, in the order of their ids.
      record('po_a1', 70, 900n, 'out', 'succeeded'),
      record('po_b1', 90, 300n, 'out', 'failed'),
      record('po_b1', 80, 300n, 'out', 'succeeded'),
    ]);
  });

  it('asks Stripe for the window in whole seconds, the charges expanded, accounts by header', async () => {
    fake.requests.length = 0;
    await readAll(100);
    const [platform, ...connected] = fake.requestsTo('GET', /^\/v1\/balance_transactions$/);
    expect(platform!.form).toMatchObject({
      created: { gte: String(DAY), lt: String(DAY + 86_400) },
      limit: '100',
      expand: { '0': 'data.source' },
    });
    expect(platform!.headers['stripe-account']).toBeUndefined();
    expect(connected.map((r) => r.headers['stripe-account'])).toEqual(['acct_a', 'acct_b']);
    expect(connected[0]!.form).not.toHaveProperty('expand');
  });

  it('pages with starting_after, reading the same records whatever the page size', async () => {
    const whole = await readAll(100);
    for (const limit of [1, 2, 3]) {
      const paged = await readAll(limit);
      expect(paged.records).toEqual(whole.records);
    }
    fake.requests.length = 0;
    const { pages } = await readAll(2);
    const asked = fake.requestsTo('GET', /^\/v1\/balance_transactions$/);
    // The platform’s 5 in the window in 3 pages (the transfer left out), then each account’s 2.
    expect(
      asked.map((r) => [r.headers['stripe-account'] ?? '', r.form.starting_after ?? null]),
    ).toEqual([
      ['', null],
      ['', expect.stringMatching(/^txn_/)],
      ['', expect.stringMatching(/^txn_/)],
      ['acct_a', null],
      ['acct_b', null],
    ]);
    expect(pages).toEqual([1, 2, 1, 1, 2]);
  });

  it('caps a page at the 100 objects Stripe lists', async () => {
    fake.requests.length = 0;
    await books.listRecords(window, null, 5_000);
    expect(fake.requests[0]!.form.limit).toBe('100');
  });

  it('ends after the platform when the application has no connected account', async () => {
    const none = new StripeBooks({
      secretKey: fake.secretKey,
      api: fake.api,
      connectedAccounts: () => Promise.resolve([]),
    });
    const page = await none.listRecords(window, null, 100);
    expect(page.records).toHaveLength(4);
    expect(page.cursor).toBeNull();
  });

  it('makes a refusal (a wrong key) a ProviderRefusedError and a 5xx an error to retry', async () => {
    const wrongKey = new StripeBooks({
      secretKey: 'sk_test_wrong',
      api: fake.api,
      connectedAccounts: () => Promise.resolve([]),
    });
    await expect(wrongKey.listRecords(window, null, 10)).rejects.toBeInstanceOf(
      ProviderRefusedError,
    );
    fake.failNext(1, 503);
    const error: unknown = await books.listRecords(window, null, 10).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(error).not.toBeInstanceOf(ProviderRefusedError);
  });

  it('is built from the configuration only with the Stripe secret key', () => {
    const config = loadConfig({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x' });
    expect(stripeBooksFromConfig(config, () => Promise.resolve([]))).toBeInstanceOf(StripeBooks);
    expect(stripeBooksFromConfig(loadConfig({}), () => Promise.resolve([]))).toBeNull();
  });
});

function record(
  providerReference: string,
  seconds: number,
  amount: bigint,
  direction: 'in' | 'out',
  status: ProviderRecord['status'],
  fee = 0n,
): ProviderRecord {
  return {
    providerReference,
    bookedAt: at(seconds),
    amount,
    currency: 'USD',
    fee,
    direction,
    status,
  };
}
