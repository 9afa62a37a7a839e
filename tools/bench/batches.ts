/**
 * Rows (10) and (10a): bulk payments through `POST /api/v1/batches` (docs/benchmarks.md "Rows
 * (10) and (10a)"). Each checks its result and throws when it is wrong: a fast wrong answer is
 * no figure.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { BATCH_LIMITS } from '../../src/domain/batches';
import { cpuSnapshot } from './cpu';
import { progress } from './engine';
import { sampleHeap, sampleResident } from './rss';
import { failure, httpClient, idOf, pickPair, type HttpClient } from './senders';
import type { Bench, Row } from './scenarios';

/** Row (10)'s size, the most a batch holds, and row (10a)'s, the most an atomic one holds. */
export const BATCH_ITEMS: number = BATCH_LIMITS.items;
export const ATOMIC_ITEMS: number = BATCH_LIMITS.atomicItems;
/** The targets the rows are held to (docs/benchmarks.md). */
const OF_TRANSFERS_TARGET = 0.9;
const RSS_GROWTH_TARGET_MB = 100;
const ATOMIC_TARGET_S = 2;

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MB`;

/** Transfers of 0.01 between the fixture's wallets at random, as row (3) sends them. */
function transferItems(wallets: readonly string[], count: number) {
  return Array.from({ length: count }, () => {
    const [from, to] = pickPair(wallets);
    return { from_wallet_id: from, to_wallet_id: to, amount: 0.01 };
  });
}

type Ended = { id: string; status: string; total: number; succeeded: number; seconds: number };

/**
 * Submits a batch and reads it until it is no longer processing, every `pollMs`: the seconds
 * from the request to the first read that saw it ended.
 */
async function submitAndWait(
  api: HttpClient,
  body: { kind: 'transfer'; items: unknown[]; atomic?: boolean },
  pollMs: number,
): Promise<Ended> {
  const started = performance.now();
  const reply = await api.post('/api/v1/batches', body, { 'Idempotency-Key': randomUUID() });
  if (reply.status !== 202) throw failure('submit batch', reply);
  const id = idOf(reply.body, 'batch');
  for (;;) {
    const read = await api.get(`/api/v1/batches/${id}`);
    if (read.status !== 200) throw failure('read batch', read);
    const batch = read.body as Omit<Ended, 'seconds'>;
    if (batch.status !== 'processing') {
      return { ...batch, seconds: (performance.now() - started) / 1000 };
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** What the rows need of a run: the engine and its funded wallets. */
type BatchBench = Pick<Bench, 'engine' | 'fixture'>;

/** Throws unless every item succeeded, each with its completed transfer. */
async function assertPaid(bench: BatchBench, batch: Ended, row: string): Promise<void> {
  const paid = await bench.engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM batch_items i
    JOIN transactions t ON t.id = i.transaction_id AND t.status = 'completed'
    WHERE i.batch_id = ${batch.id} AND i.status = 'succeeded'`);
  if (batch.status !== 'completed' || batch.succeeded !== batch.total || paid !== batch.total) {
    throw new Error(
      `${row}: batch ${batch.id} ${batch.status}, ${batch.succeeded} of ${batch.total} ` +
        `succeeded, ${paid} completed transfers`,
    );
  }
}

/**
 * (10): one batch of `items` independent transfers, timed from the request until it reads
 * completed, the worker's resident memory sampled throughout; held against `transferRate`,
 * row (3)'s closed-loop rate in the same configuration and shape.
 */
export async function batchScenario(
  bench: BatchBench,
  transferRate: number | undefined,
  items = BATCH_ITEMS,
): Promise<Row> {
  const { engine, fixture } = bench;
  const api = httpClient(engine.apiUrl, fixture.headers);
  const body = { kind: 'transfer' as const, items: transferItems(fixture.wallets, items) };
  progress(`10 bulk payment of ${items.toLocaleString('en')} transfers through the API`);
  const rss = sampleResident(engine.workerPid);
  // In the single shape the worker is this process: its main heap tells V8 from native growth.
  const heap = engine.workerPid === process.pid ? sampleHeap() : null;
  const cpuBefore = cpuSnapshot();
  let highest: number;
  let heapHighest: number | undefined;
  let batch: Ended;
  try {
    batch = await submitAndWait(api, body, 250);
  } finally {
    highest = rss.stop();
    heapHighest = heap?.stop();
    api.close();
  }
  const cpuAfter = cpuSnapshot();
  await assertPaid(bench, batch, '10');
  // CPU per item tells designs apart on a shared machine, where the rate follows the others' load.
  const perItem = (k: 'node' | 'postgres' | 'temporal') =>
    (((cpuAfter[k] - cpuBefore[k]) * 1000) / items).toFixed(1);
  const rate = items / batch.seconds;
  const growth = highest - rss.start;
  const ratio = transferRate ? rate / transferRate : undefined;
  const ofTransfers =
    ratio === undefined
      ? '(3) not measured in this shape'
      : `${(ratio * 100).toFixed(0)}% of (3)'s ${transferRate!.toFixed(1)}/s ` +
        `(${ratio >= OF_TRANSFERS_TARGET ? 'at least' : 'UNDER'} ${OF_TRANSFERS_TARGET * 100}%)`;
  const note =
    `${batch.seconds.toFixed(1)} s, ${rate.toFixed(1)} items/s, ${ofTransfers}; worker RSS ` +
    `${mb(rss.start)} before, +${mb(growth)} at most ` +
    `(${growth < RSS_GROWTH_TARGET_MB * 1024 * 1024 ? 'under' : 'OVER'} ${RSS_GROWTH_TARGET_MB} MB)` +
    (heap
      ? `; main heap ${mb(heap.start)} before, +${mb(heapHighest! - heap.start)} at most`
      : '') +
    `; CPU ms an item: node ${perItem('node')}, Postgres ${perItem('postgres')}, ` +
    `Temporal ${perItem('temporal')}`;
  progress(`   ${note}`);
  return {
    id: '10',
    scenario: `bulk payment, ${items.toLocaleString('en')} transfers, until completed`,
    load: 'one batch',
    result: null,
    note,
  };
}

/** (10a): one atomic batch of `items` transfers, timed from the request until it reads completed. */
export async function atomicBatchScenario(bench: BatchBench, items = ATOMIC_ITEMS): Promise<Row> {
  const { engine, fixture } = bench;
  const api = httpClient(engine.apiUrl, fixture.headers);
  progress(`10a atomic bulk payment of ${items.toLocaleString('en')} transfers through the API`);
  let batch: Ended;
  try {
    const body = {
      kind: 'transfer' as const,
      atomic: true,
      items: transferItems(fixture.wallets, items),
    };
    batch = await submitAndWait(api, body, 20);
  } finally {
    api.close();
  }
  await assertPaid(bench, batch, '10a');
  const note =
    `${batch.seconds.toFixed(2)} s to completed ` +
    `(${batch.seconds < ATOMIC_TARGET_S ? 'under' : 'OVER'} ${ATOMIC_TARGET_S} s)`;
  progress(`   ${note}`);
  return {
    id: '10a',
    scenario: `atomic bulk payment, ${items.toLocaleString('en')} transfers, until completed`,
    load: 'one batch',
    result: null,
    note,
  };
}

/** Row (10)'s and (10a)'s sizes: BENCH_BATCH_ITEMS (a smaller run, to try them out), else the most. */
export function batchSizes(env: NodeJS.ProcessEnv): { items: number; atomic: number } {
  const text = env.BENCH_BATCH_ITEMS;
  if (text === undefined) return { items: BATCH_ITEMS, atomic: ATOMIC_ITEMS };
  const n = Number(text.replace(/_/g, ''));
  if (!Number.isInteger(n) || n < 1 || n > BATCH_ITEMS) {
    throw new Error(`BENCH_BATCH_ITEMS ${text}: a whole number from 1 to ${BATCH_ITEMS}`);
  }
  return { items: n, atomic: Math.min(n, ATOMIC_ITEMS) };
}

/** Section `batches`: rows (10) and (10a), against row (3)'s rate of the same shape. */
export async function batchScenarios(
  bench: BatchBench,
  transferRate: number | undefined,
): Promise<Row[]> {
  const sizes = batchSizes(process.env);
  return [
    await batchScenario(bench, transferRate, sizes.items),
    await atomicBatchScenario(bench, sizes.atomic),
  ];
}
