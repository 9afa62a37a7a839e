import { sql } from 'slonik';
import { z } from 'zod';
import {
  createFundedWallet,
  createUserWithWallet,
  expectError,
  transfer,
  TRANSFER,
} from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { pollUntil } from '../support/wait';
import { csvRecords } from '../support/csv';

// A small limit and batch, so that the cap and a stream cut short need thousands of rows, not more.
const MAX_ROWS = 2500;
const engine = useTestEngine({ env: { EXPORT_MAX_ROWS: '2500', EXPORT_BATCH_ROWS: '50' } });
const { api, live } = useTestApp(engine);
const { api: other } = useTestApp(engine);
const { api: bulk, app: bulkApp } = useTestApp(engine);
const { api: formulas } = useTestApp(engine);

const EXPORT = '/api/v1/transactions/export';
const LIST = '/api/v1/transactions/';
const HEADER =
  'id,created_at,transaction_type,status,amount,currency,application_fee,provider_fee,' +
  'wallet_id,recipient_wallet_id,description,provider_reference,metadata';
const TRICKY = 'rent, "May"\nsecond line';

type Transaction = {
  id: string;
  amount: number;
  application_fee: number | null;
  transaction_type: string;
  status: string;
  created_at: string;
  wallet_id: string | null;
  recipient_wallet_id: string | null;
  description: string;
};

/** RFC 4180 records, as a spreadsheet reads them; the text ends its last record. */
function parseCsv(text: string): string[][] {
  const { records, rest } = csvRecords(text);
  expect(rest).toEqual([]);
  return records;
}

async function exportOf(client: typeof api, query = '') {
  const reply = await client.get(`${EXPORT}?${query}`);
  expect([query, reply.status]).toEqual([query, 200]);
  expect(reply.headers.get('content-type')).toMatch(/^text\/csv/);
  const text = reply.body as string;
  expect(text.startsWith(`${HEADER}\r\n`)).toBe(true);
  return parseCsv(text).slice(1);
}

async function listOf(query = '') {
  const reply = await api.get(`${LIST}?per_page=100&${query}`);
  expect(reply.status).toBe(200);
  return reply.body.data as Transaction[];
}

let data: { a: string; b: string; t: Transaction[] };

beforeAll(async () => {
  const a = (await createFundedWallet(api, engine.pool, 1_000_000n)).walletId;
  const b = (await createUserWithWallet(api)).walletId;
  const t = [
    await transfer<Transaction>(api, a, b, 10),
    await transfer<Transaction>(api, a, b, 20.5),
    await transfer<Transaction>(api, b, a, 5),
  ];
  const tricky = await api.post<Transaction>(TRANSFER, {
    from_wallet_id: a,
    to_wallet_id: b,
    amount: 1.25,
    description: TRICKY,
  });
  expect(tricky.status).toBe(200);
  t.push(tricky.body);
  const oa = (await createFundedWallet(other, engine.pool, 100_000n)).walletId;
  await transfer(other, oa, (await createUserWithWallet(other)).walletId, 7);
  data = { a, b, t };
});

describe('GET /api/v1/transactions/export', () => {
  it('streams the list’s rows, newest first, with the exact header', async () => {
    const rows = await exportOf(api);
    const listed = await listOf();
    expect(rows).toEqual(
      listed.map((t) => [
        t.id,
        t.created_at,
        t.transaction_type,
        t.status,
        String(t.amount),
        'SLE',
        t.application_fee === null ? '' : String(t.application_fee),
        '',
        t.wallet_id ?? '',
        t.recipient_wallet_id ?? '',
        t.description,
        '',
        '{}',
      ]),
    );
    expect(rows.slice(0, 4).map((r) => r[0])).toEqual([...data.t].reverse().map((t) => t.id));
    // The description with a comma, quotes and a newline comes back whole.
    expect(rows[0]![10]).toBe(TRICKY);
  });

  it('applies each of the list’s filters as the list does', async () => {
    const [t1, t2, t3, t4] = data.t as [Transaction, Transaction, Transaction, Transaction];
    const q = encodeURIComponent;
    const queries = [
      'status=completed',
      'status=pending,failed',
      'transaction_type=transfer',
      'transaction_type=card_deposit,escrow_hold',
      `wallet_id=${data.b}`,
      `created[gte]=${q(t2.created_at)}&created[lt]=${q(t4.created_at)}`,
      'amount[gte]=5&amount[lte]=20.5',
      'provider_reference=none-such',
      `transaction_type=transfer&amount[lte]=10&wallet_id=${data.a}`,
    ];
    for (const query of queries) {
      const ids = (await exportOf(api, query)).map((r) => r[0]);
      expect([query, ids]).toEqual([query, (await listOf(query)).map((t) => t.id)]);
    }
    expect((await exportOf(api, 'amount[gte]=5&amount[lte]=20.5')).map((r) => r[0])).toEqual([
      t3.id,
      t2.id,
      t1.id,
    ]);
  });

  it('refuses a malformed filter with the list’s 422, and another mode’s wallet', async () => {
    for (const query of [
      'status=done',
      'transaction_type=nope',
      'wallet_id=not-a-wallet',
      'created[gte]=yesterday',
      'amount[gte]=1.234',
      'amount[lte]=-',
    ]) {
      const listed = expectError(await api.get(`${LIST}?${query}`), 422);
      expect([query, expectError(await api.get(`${EXPORT}?${query}`), 422)]).toEqual([
        query,
        listed,
      ]);
    }
    expectError(await other.get(`${EXPORT}?wallet_id=${data.a}`), 403);
    expectError(await api.get(EXPORT, { 'secret-key': 'wrong' }), 401);
  });

  it('shows only the caller’s application and mode', async () => {
    const mine = new Set(data.t.map((t) => t.id));
    const theirs = await exportOf(other);
    expect(theirs).toHaveLength(1);
    expect(theirs.some((r) => mine.has(r[0]!))).toBe(false);
    expect(await exportOf(live)).toEqual([]);
  });
});

describe('a cell a spreadsheet would run as a formula', () => {
  it('starts with a quote in the export and the statement CSV; the engine’s amounts do not', async () => {
    const a = (await createFundedWallet(formulas, engine.pool, 100_000n)).walletId;
    const b = (await createUserWithWallet(formulas)).walletId;
    const formula = '=HYPERLINK("http://evil.test","Refund")';
    const sent = await formulas.post<Transaction>(TRANSFER, {
      from_wallet_id: a,
      to_wallet_id: b,
      amount: 12.5,
      description: formula,
      metadata: { note: '@SUM(A1)' },
    });
    expect(sent.status).toBe(200);
    const [row] = await exportOf(formulas, `wallet_id=${b}`);
    expect(row![0]).toBe(sent.body.id);
    expect([row![4], row![10]]).toEqual(['12.5', `'${formula}`]);
    // Metadata is a JSON object, which starts with a brace whatever its values hold.
    expect(row![12]).toBe('{"note":"@SUM(A1)"}');
    const statement = await formulas.get(`/api/v1/wallets/${a}/statement`, {
      Accept: 'text/csv',
    });
    expect(statement.status).toBe(200);
    const entries = parseCsv(statement.body as string).slice(1);
    const debit = entries.find((e) => e[0] === sent.body.id)!;
    expect([debit[3], debit[5]]).toEqual(['-12.50', `'${formula}`]);
  });
});

describe('a large export', () => {
  const SELECTED = 2400;

  beforeAll(async () => {
    const a = (await createFundedWallet(bulk, engine.pool, 1_000_000n)).walletId;
    const seed = await transfer<Transaction>(
      bulk,
      a,
      (await createUserWithWallet(bulk)).walletId,
      1,
    );
    // Copies of one transfer, a second apart and older than it, with long descriptions, so that
    // the CSV is far more than the socket's buffers hold.
    await engine.pool.query(sql.unsafe`
      INSERT INTO transactions
      SELECT (jsonb_populate_record(NULL::transactions, to_jsonb(t) || jsonb_build_object(
        'id', gen_random_uuid(),
        'description', repeat('x', 4000),
        'created_at', t.created_at - g * interval '1 second',
        'updated_at', t.created_at - g * interval '1 second',
        'workflow_id', NULL))).*
      FROM transactions t, generate_series(1, ${MAX_ROWS + 100}) AS g
      WHERE t.id = ${seed.id}`);
    expect(bulkApp.id).toBeTruthy();
  });

  it('gives the list of the same rows a total counted 1,000 rows past the page, a lower bound', async () => {
    const rows = MAX_ROWS + 101; // the seed transfer and its copies
    const first = await bulk.get(`${LIST}?per_page=20`);
    expect(first.status).toBe(200);
    expect([first.body.total, first.body.total_pages]).toEqual([1020, 51]);
    // Near the end the count is exact again, and so is the last page.
    const late = await bulk.get(`${LIST}?per_page=100&page=20`);
    const pages = Math.ceil(rows / 100);
    expect([late.body.total, late.body.total_pages]).toEqual([rows, pages]);
    const last = await bulk.get(`${LIST}?per_page=100&page=${pages}`);
    expect(last.body.data).toHaveLength(rows - (pages - 1) * 100);
  });

  it('answers 422 naming the limit, before any byte of CSV, when the filter selects more', async () => {
    const detail = expectError(await bulk.get(EXPORT), 422);
    expect(detail).toContain(`${MAX_ROWS}`);
  });

  it('stops reading when the client goes away mid-stream', async () => {
    const since = await engine.pool.oneFirst(sql.type(z.object({ at: z.string() }))`
      SELECT to_char(min(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at
      FROM (SELECT created_at FROM transactions WHERE application_id = ${bulkApp.id}
        ORDER BY created_at DESC LIMIT ${SELECTED}) AS newest`);
    const before = engine.logs.length;
    const controller = new AbortController();
    const response = await fetch(
      `${engine.url}${EXPORT}?created[gte]=${encodeURIComponent(since)}`,
      {
        headers: {
          'api-key': bulkApp.credentials.test.apiKey,
          'secret-key': bulkApp.credentials.test.secretKey,
        },
        signal: controller.signal,
      },
    );
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value).startsWith(HEADER)).toBe(true);
    controller.abort();
    await reader.cancel().catch(() => undefined);
    const stopped = await waitForLog(before, 'transactions export stopped');
    expect(stopped.rows).toBeLessThan(SELECTED);
    // A client that left is logged as such, not as a failure (nor as Koa's trace on stderr).
    const gone = await waitForLog(before, 'client closed the connection before the response ended');
    expect(gone).toMatchObject({ level: 30, path: EXPORT, code: 'ERR_STREAM_PREMATURE_CLOSE' });
    // And the export's cursor is closed: no connection is left in its statement.
    const open = () =>
      engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE state <> 'idle' AND pid <> pg_backend_pid() AND query LIKE '%AS provider_fee%'`);
    expect(await pollUntil(open, (n) => n === 0, { timeoutMs: 5_000 })).toBe(0);
    // The whole selection streams when the client reads it.
    const all = await bulk.get(`${EXPORT}?created[gte]=${encodeURIComponent(since)}`);
    expect(parseCsv(all.body as string)).toHaveLength(SELECTED + 1);
  });
});

async function waitForLog(from: number, msg: string): Promise<Record<string, any>> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const line = engine.logs
      .slice(from)
      .map((l) => JSON.parse(l) as Record<string, any>)
      .find((l) => typeof l.msg === 'string' && l.msg.startsWith(msg));
    if (line) return line;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no log "${msg}": ${engine.logs.slice(from).join('\n').slice(-3000)}`);
}
