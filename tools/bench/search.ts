/**
 * Row (8): lists, searches, statements, balances at an instant and the export over ten million
 * seeded payments (search-seed.ts), read through the API by one client, parameters drawn at
 * random; what each row reads is in docs/benchmarks.md "Row (8)".
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { closedLoop, type LoadResult } from './load';
import type { LoadShape } from './generator';
import { progress } from './engine';
import { sampleResident } from './rss';
import { measure, type Bench, type Row } from './scenarios';
import { raw, seedSearch, type SearchSeed } from './search-seed';
import { TOTAL_COUNTED_AHEAD } from '../../src/db/pages';
import type { SenderSpec } from './senders';

export const SEARCH_PAYMENTS = 10_000_000;
/** Variants of each read's parameters, drawn at random for each request. */
const VARIANTS = 300;
const READ_S = 10;
const READ_WARMUP_S = 2;
/** The export's rows: within the contract's limit of a million. */
const EXPORT_ROWS = 999_000;
const DAY_MS = 86_400_000;
const WINDOW_DAYS = 30;

/** `count` values of `make`, each given a random number in [0, 1). */
const draw = <T>(count: number, make: (r: number) => T) =>
  Array.from({ length: count }, () => make(Math.random()));

const iso = (ms: number) => new Date(Math.floor(ms)).toISOString();

/** How many payments row (8) seeds: the flag, else the environment, else ten million. */
export function searchPayments(flag: string | undefined, env: NodeJS.ProcessEnv): number {
  const text = flag ?? env.BENCH_SEARCH_PAYMENTS;
  if (text === undefined) return SEARCH_PAYMENTS;
  const n = Number(text.replace(/_/g, ''));
  if (!Number.isInteger(n) || n < 10_000 || n % 100 !== 0) {
    throw new Error(`search payments ${text}: a whole number of hundreds, at least 10000`);
  }
  return n;
}

/** The seeded data's request paths, each read's variants. */
function paths(seed: SearchSeed, cursors: readonly string[]) {
  const from = seed.from.getTime();
  const span = seed.to.getTime() - from - WINDOW_DAYS * DAY_MS;
  const window = (r: number) => {
    const start = from + r * span;
    return [iso(start), iso(start + WINDOW_DAYS * DAY_MS)] as const;
  };
  const wallet = (r: number, among: number) => seed.walletId(1 + Math.floor(r * among));
  const q = (params: Record<string, string>) => new URLSearchParams(params).toString();
  return {
    list: draw(VARIANTS, (r) => {
      const [gte, lt] = window(r);
      return `/api/v1/transactions/?${q({
        status: 'completed',
        transaction_type: 'transfer',
        'created[gte]': gte,
        'created[lt]': lt,
        'amount[gte]': '10',
        'amount[lte]': '1000',
      })}`;
    }),
    metadata: draw(VARIANTS, (r) => {
      const k = 10 * Math.floor((r * seed.payments) / 10);
      return `/api/v1/transactions/?${q({ 'metadata[order_id]': `ord_${k}` })}`;
    }),
    channel: draw(VARIANTS, (r) => {
      const channel = ['web', 'pos', 'app'][Math.floor(r * 3)]!;
      return `/api/v1/transactions/?${q({ 'metadata[channel]': channel })}`;
    }),
    cursor: cursors.map((id) => `/api/v1/transactions/?${q({ starting_after: id })}`),
    statement: draw(VARIANTS, (r) => {
      const [gte, lt] = window(Math.random());
      return `/api/v1/wallets/${wallet(r, seed.busy)}/statement?${q({ from: gte, to: lt })}`;
    }),
    balance: (among: number) =>
      draw(VARIANTS, (r) => {
        const at = iso(from + Math.random() * (seed.to.getTime() - from));
        return `/api/v1/wallets/${wallet(r, among)}/balance?${q({ at })}`;
      }),
  };
}

/** EXPLAIN ANALYZE of `query` on stderr, each line indented. */
async function explain(bench: Bench, title: string, query: string) {
  const plan = await bench.engine.pool.anyFirst(
    raw(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${query}`),
  );
  progress(`plan: ${title}\n      ${(plan as string[]).join('\n      ')}`);
}

export async function searchScenarios(bench: Bench, payments: number): Promise<Row[]> {
  const { engine, fixture } = bench;
  const { pool } = engine;
  const wallets = payments / 100;
  progress(
    `seeding ${payments.toLocaleString('en')} payments across ${wallets.toLocaleString('en')} wallets`,
  );
  const started = performance.now();
  const seed = await seedSearch(pool, {
    applicationId: fixture.applicationId,
    mode: 'test',
    currency: 'SLE',
    payments,
    wallets,
    days: 365,
    progress,
  });
  const seeding = (performance.now() - started) / 1000;
  progress(`   seeded in ${seeding.toFixed(1)}s`);
  const app = fixture.applicationId;
  const cursors = await pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM transactions TABLESAMPLE SYSTEM (${Math.min(100, (VARIANTS * 100) / payments)})
    WHERE application_id = ${app} AND mode = 'test' LIMIT ${VARIANTS}`);
  const p = paths(seed, cursors);
  // The export: the newest rows up to about a million, by their creation time.
  const oldest = await pool.oneFirst(sql.type(z.object({ at: z.string() }))`
    SELECT to_char(date_trunc('milliseconds', created_at) AT TIME ZONE 'UTC',
      'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at
    FROM transactions WHERE application_id = ${app} AND mode = 'test'
    ORDER BY created_at DESC, id DESC OFFSET ${Math.min(EXPORT_ROWS, payments) - 1} LIMIT 1`);
  const exportRows = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM transactions
    WHERE application_id = ${app} AND mode = 'test' AND created_at >= ${oldest}::timestamptz`);

  await plans(bench, seed);

  const target = { apiUrl: engine.apiUrl, headers: fixture.headers };
  const shape: LoadShape = {
    kind: 'closed',
    concurrency: 1,
    durationS: READ_S,
    warmupS: READ_WARMUP_S,
  };
  const load = `closed, 1 client, ${READ_S}s`;
  const remote =
    (sender: SenderSpec, s: LoadShape = shape) =>
    () =>
      bench.load.run({ sender, shape: s }, bench.signal);
  const read = (paths: string[], rows?: number | 'some'): SenderSpec => ({
    kind: 'read',
    ...target,
    paths,
    ...(rows === undefined ? {} : { rows }),
  });
  const size = `${payments >= 1_000_000 ? `${payments / 1_000_000}M` : payments.toLocaleString('en')} payments`;
  const rows: Row[] = [
    {
      id: '8',
      scenario: `seeding ${size}, ${wallets.toLocaleString('en')} wallets, in SQL`,
      load: '-',
      result: null,
      note: `${seeding.toFixed(0)} s (${seed.seconds.map(([k, s]) => `${k} ${s.toFixed(0)}`).join(', ')})`,
    },
  ];
  rows.push(
    await measure(
      '8a',
      `list: completed transfers, 30 days, amount 10-1000, ${size}`,
      load,
      remote(read(p.list, 'some')),
    ),
    await measure(
      '8b',
      `list: metadata[order_id] (one match), ${size}`,
      load,
      remote(read(p.metadata, 1)),
    ),
    await measure(
      '8c',
      `metadata search query alone (page + total), ${size}`,
      `${load}, in-process`,
      () =>
        closedLoop({
          concurrency: 1,
          durationS: READ_S,
          warmupS: READ_WARMUP_S,
          signal: bench.signal,
          send: metadataQuery(bench, seed),
        }),
    ),
    await measure(
      '8d',
      `list: cursor page (starting_after anywhere), ${size}`,
      load,
      remote(read(p.cursor, 'some')),
    ),
    await measure(
      '8e',
      `statement: 30 days of a busy wallet, ${size}`,
      load,
      remote(read(p.statement, 'some')),
    ),
    await measure(
      '8f',
      `balance at an instant, any wallet, ${size}`,
      load,
      remote(read(p.balance(seed.wallets))),
    ),
    await measure(
      '8g',
      `balance at an instant, a busy wallet, ${size}`,
      load,
      remote(read(p.balance(seed.busy))),
    ),
  );
  const exportPath = `/api/v1/transactions/export?${new URLSearchParams({ 'created[gte]': oldest }).toString()}`;
  const rss = sampleResident(engine.apiPid);
  let highest = rss.start;
  const exported = await measure(
    '8h',
    `export of ${exportRows.toLocaleString('en')} rows, ${size}`,
    'one request',
    async (): Promise<LoadResult> => {
      try {
        return await remote(
          { kind: 'export', ...target, path: exportPath, rows: exportRows },
          { kind: 'closed', concurrency: 1, durationS: 0.001, warmupS: 0 },
        )();
      } finally {
        highest = rss.stop();
      }
    },
  );
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MB`;
  exported.scenario += ` (API RSS ${mb(rss.start)} before, ${mb(highest)} at most)`;
  progress(`   API resident memory ${mb(rss.start)} before, ${mb(highest)} at most`);
  rows.push(exported);
  // After the export, whose memory is measured from the same earlier rows as before this row.
  // A common value: the page and its total, counted ahead up to the list's limit.
  rows.push(
    await measure(
      '8i',
      `list: metadata[channel] (a tenth of all payments), ${size}`,
      load,
      remote(read(p.channel, 'some')),
    ),
  );
  return rows;
}

/** The metadata filter's SQL as the list runs it: the page, then its total. */
function metadataQuery(bench: Bench, seed: SearchSeed) {
  const app = bench.fixture.applicationId;
  return async () => {
    const k = 10 * Math.floor((Math.random() * seed.payments) / 10);
    const match = JSON.stringify({ order_id: `ord_${k}` });
    const where = sql.fragment`application_id = ${app} AND mode = 'test'
      AND merchant_metadata @> ${match}::jsonb AND merchant_metadata <> '{}'::jsonb`;
    const page = await bench.engine.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM transactions WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT 20`);
    if (page.length !== 1) throw new Error(`metadata query: ${page.length} rows, not 1`);
    await bench.engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM (SELECT FROM transactions WHERE ${where}
        ORDER BY created_at DESC, id DESC LIMIT ${20 + TOTAL_COUNTED_AHEAD}) c`);
  };
}

/** The plans of the reads at this size, as the list, statement and balance queries shape them. */
async function plans(bench: Bench, seed: SearchSeed): Promise<void> {
  const app = `'${bench.fixture.applicationId}'`;
  const scope = `application_id = ${app} AND mode = 'test'`;
  const mid = new Date((seed.from.getTime() + seed.to.getTime()) / 2);
  const window = `created_at >= '${mid.toISOString()}' AND created_at < '${iso(mid.getTime() + WINDOW_DAYS * DAY_MS)}'`;
  const filtered = `${scope} AND status = 'completed' AND transaction_type = 'transfer' AND ${window}
    AND amount >= 1000 AND amount <= 100000`;
  const metadata = `${scope} AND merchant_metadata @> '{"order_id": "ord_${10 * Math.floor(seed.payments / 20)}"}'::jsonb
    AND merchant_metadata <> '{}'::jsonb`;
  const busy = `'${seed.walletId(1)}'`;
  const cursor = `(SELECT id FROM transactions WHERE ${scope} AND created_at < '${mid.toISOString()}'
    ORDER BY created_at DESC LIMIT 1)`;
  await explain(
    bench,
    'filtered list, total',
    `SELECT count(*) FROM (SELECT FROM transactions WHERE ${filtered}
      ORDER BY created_at DESC, id DESC LIMIT ${20 + TOTAL_COUNTED_AHEAD}) c`,
  );
  await explain(
    bench,
    'filtered list, page',
    `SELECT id FROM transactions WHERE ${filtered} ORDER BY created_at DESC, id DESC LIMIT 20`,
  );
  await explain(
    bench,
    'metadata search, page',
    `SELECT id FROM transactions WHERE ${metadata} ORDER BY created_at DESC, id DESC LIMIT 20`,
  );
  await explain(
    bench,
    'metadata search, total',
    `SELECT count(*) FROM (SELECT FROM transactions WHERE ${metadata}
      ORDER BY created_at DESC, id DESC LIMIT ${20 + TOTAL_COUNTED_AHEAD}) c`,
  );
  await explain(
    bench,
    'metadata search, low cardinality (channel), page',
    `SELECT id FROM transactions WHERE ${scope} AND merchant_metadata @> '{"channel": "pos"}'::jsonb
      AND merchant_metadata <> '{}'::jsonb ORDER BY created_at DESC, id DESC LIMIT 20`,
  );
  await explain(
    bench,
    'metadata search, low cardinality (channel), total',
    `SELECT count(*) FROM (SELECT FROM transactions WHERE ${scope}
      AND merchant_metadata @> '{"channel": "pos"}'::jsonb AND merchant_metadata <> '{}'::jsonb
      ORDER BY created_at DESC, id DESC LIMIT ${20 + TOTAL_COUNTED_AHEAD}) c`,
  );
  await explain(
    bench,
    'cursor page',
    `SELECT id FROM transactions WHERE ${scope}
      AND (created_at, id) < (SELECT created_at, id FROM transactions WHERE id = ${cursor})
      ORDER BY created_at DESC, id DESC LIMIT 21`,
  );
  await explain(
    bench,
    'statement window sums, busy wallet',
    `SELECT coalesce(sum(amount) FILTER (WHERE amount > 0), 0), count(*) FROM ledger_entries
      WHERE account_id = ${busy} AND ${window}`,
  );
  await explain(
    bench,
    'balance before an instant, busy wallet',
    `SELECT coalesce(sum(amount), 0) FROM ledger_entries
      WHERE account_id = ${busy} AND created_at < '${mid.toISOString()}'`,
  );
}

/**
 * `--without-search-indexes`: the indexes of migrations 0017 and 0020 dropped, and the two
 * plain wallet indexes 0017 replaced put back, so that the write path's rows show what the
 * list and search indexes cost it.
 */
export async function dropSearchIndexes(pool: Bench['engine']['pool']): Promise<void> {
  await pool.query(sql.unsafe`
    DROP INDEX transactions_list_idx, transactions_list_status_idx, transactions_list_type_idx,
      transactions_wallet_list_idx, transactions_recipient_list_idx, users_phone_number_idx,
      users_app_user_id_idx, users_name_trgm_idx, users_email_trgm_idx,
      users_phone_number_trgm_idx, users_app_user_id_trgm_idx,
      transactions_merchant_metadata_idx, transactions_list_status_type_idx`);
  await pool.query(sql.unsafe`CREATE INDEX transactions_wallet_idx ON transactions (wallet_id)`);
  await pool.query(
    sql.unsafe`CREATE INDEX transactions_recipient_idx ON transactions (recipient_wallet_id)`,
  );
}
