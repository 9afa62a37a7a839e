import { loadConfig } from '../../src/config';
import type { BookWindow, ProviderRecord } from '../../src/providers/books';
import { ProviderRefusedError } from '../../src/providers/mobile-money';
import { MonimeResponseError } from '../../src/providers/monime';
import { MonimeBooks, monimeBooksFromConfig } from '../../src/providers/monime-books';
import { FakeMonimeServer, type FakeOwner } from '../support/fake-monime';

/**
 * The Live Mode mobile-money books over HTTP against a fake of Monime's financial transactions
 * list in its wire format: which transactions are the engine's payments, under which reference,
 * the window kept by the adapter, and the pages.
 */

const window: BookWindow = {
  applicationId: '00000000-0000-4000-8000-000000000001',
  mode: 'live',
  from: '2026-03-01T00:00:00Z',
  to: '2026-03-02T00:00:00Z',
};
const at = (time: string) => `2026-03-01T${time}Z`;

let fake: FakeMonimeServer;
let books: MonimeBooks;

beforeAll(async () => {
  fake = await FakeMonimeServer.start();
  books = new MonimeBooks({
    baseUrl: fake.baseUrl,
    accessToken: fake.accessToken,
    spaceId: fake.spaceId,
    timeoutMs: 2_000,
  });
});
afterAll(async () => fake?.close());

/** A payment of a payment code, as Monime's ownership graph traces a deposit. */
const paymentOf = (code: string): FakeOwner => ({
  id: `pay-${code}`,
  type: 'payment',
  metadata: null,
  owner: { id: code, type: 'payment_code', metadata: { reference: 'txn' } },
});
const payout = (id: string): FakeOwner => ({ id, type: 'payout', metadata: null });

async function readAll(limit: number): Promise<{ records: ProviderRecord[]; pages: number }> {
  const records: ProviderRecord[] = [];
  let pages = 0;
  let cursor: string | null = null;
  do {
    const page = await books.listRecords(window, cursor, limit);
    records.push(...page.records);
    pages += 1;
    cursor = page.cursor;
  } while (cursor !== null && pages < 100);
  return { records, pages };
}

describe('MonimeBooks against a Monime-format fake', () => {
  beforeAll(() => {
    // Oldest first here; Monime lists newest first.
    fake.addFinancialTransaction({
      type: 'credit',
      amount: 5_000,
      timestamp: '2026-02-28T23:59:59Z',
      owner: paymentOf('pmc-early'),
    });
    fake.addFinancialTransaction({
      type: 'credit',
      amount: 10_450,
      timestamp: at('08:00:00'),
      owner: paymentOf('pmc-1'),
    });
    fake.addFinancialTransaction({
      type: 'debit',
      amount: 20_000,
      timestamp: at('09:00:00'),
      owner: payout('pyt-2'),
    });
    fake.addFinancialTransaction({
      type: 'debit',
      amount: 150,
      timestamp: at('09:00:00'),
      owner: payout('pyt-2'),
      fee: true,
    });
    // An internal transfer between the space's accounts is no payment of the engine's.
    fake.addFinancialTransaction({
      type: 'debit',
      amount: 99_999,
      timestamp: at('10:00:00'),
      owner: { id: 'itr-1', type: 'internal_transfer', metadata: null },
    });
    fake.addFinancialTransaction({
      type: 'debit',
      amount: 3_000,
      timestamp: at('11:00:00'),
      owner: payout('pyt-3'),
    });
    fake.addFinancialTransaction({
      type: 'credit',
      amount: 3_000,
      timestamp: at('11:30:00.500'),
      owner: payout('pyt-3'),
      reverses: 'txn-of-pyt-3',
    });
    fake.addFinancialTransaction({
      type: 'credit',
      amount: 700,
      timestamp: '2026-03-02T00:00:00Z',
      owner: paymentOf('pmc-late'),
    });
  });

  it('reads payment codes in and payouts out by their ids, a reversal as reversed', async () => {
    const { records } = await readAll(50);
    expect(records).toEqual([
      record('pyt-3', at('11:30:00.500'), 3_000n, 'out', 'reversed'),
      record('pyt-3', at('11:00:00.000'), 3_000n, 'out', 'succeeded'),
      record('pyt-2', at('09:00:00.000'), 20_000n, 'out', 'succeeded'),
      record('pmc-1', at('08:00:00.000'), 10_450n, 'in', 'succeeded'),
    ]);
  });

  it('pages with Monime’s cursor, reading the same records whatever the page size', async () => {
    const whole = await readAll(50);
    for (const limit of [1, 2, 3]) {
      const paged = await readAll(limit);
      expect(paged.records).toEqual(whole.records);
      expect(paged.pages).toBe(Math.ceil(fake.financialTransactions.length / limit));
    }
    fake.requests.length = 0;
    await readAll(3);
    const asked = fake.requests.filter((r) => r.path === '/v1/financial-transactions');
    expect(asked.map((r) => r.query)).toEqual([
      { limit: '3' },
      { limit: '3', after: fake.financialTransactions[2]!.id },
      { limit: '3', after: fake.financialTransactions[5]!.id },
    ]);
    expect(asked[0]!.headers).toMatchObject({
      authorization: `Bearer ${fake.accessToken}`,
      'monime-space-id': fake.spaceId,
    });
  });

  it('asks at most the 50 objects Monime lists a page', async () => {
    fake.requests.length = 0;
    await books.listRecords(window, null, 5_000);
    expect(fake.requests[0]!.query).toEqual({ limit: '50' });
  });

  it('makes a refusal a ProviderRefusedError, a 5xx an error to retry, a bad body an error', async () => {
    const wrong = new MonimeBooks({
      baseUrl: fake.baseUrl,
      accessToken: 'mon_wrong',
      spaceId: fake.spaceId,
    });
    await expect(wrong.listRecords(window, null, 10)).rejects.toBeInstanceOf(ProviderRefusedError);
    fake.failNext(1, 503);
    const error: unknown = await books.listRecords(window, null, 10).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(ProviderRefusedError);
    fake.tamperNextResponse((body: { result: { amount: { value: unknown } }[] }) => {
      body.result[0]!.amount.value = '12.5';
    });
    await expect(books.listRecords(window, null, 10)).rejects.toBeInstanceOf(MonimeResponseError);
  });

  it('is built from the configuration only with Monime’s token and space', () => {
    const config = loadConfig({ MONIME_ACCESS_TOKEN: 'mon_x', MONIME_SPACE_ID: 'spc_x' });
    expect(monimeBooksFromConfig(config)).toBeInstanceOf(MonimeBooks);
    expect(monimeBooksFromConfig(loadConfig({}))).toBeNull();
  });
});

function record(
  providerReference: string,
  bookedAt: string,
  amount: bigint,
  direction: 'in' | 'out',
  status: ProviderRecord['status'],
): ProviderRecord {
  return { providerReference, bookedAt, amount, currency: 'SLE', fee: 0n, direction, status };
}
