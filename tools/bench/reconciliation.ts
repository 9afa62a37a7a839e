/**
 * Rows (9a) and (9b): a provider reconciliation run over a million records, and a settlement
 * file's import through the API (docs/benchmarks.md "Rows (9a) and (9b)"). Each checks its result
 * and throws when it is wrong: a fast wrong answer is no figure.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { getReconRun, insertReconRun } from '../../src/db/recon-runs';
import { startReconciliationRun } from '../../src/temporal/recon-runs';
import { taskQueueOf } from '../../src/temporal/task-queues';
import { workflowIds } from '../../src/workflows/ids';
import { progress } from './engine';
import { seedRecon, type ReconCountsExpected } from './recon-seed';
import { sampleResident } from './rss';
import type { Bench, Row } from './scenarios';

/** Row (9a)'s size: payments, and as many provider records. */
export const RECON_RECORDS = 1_000_000;
/** The targets the rows are held to (docs/benchmarks.md). */
const RUN_TARGET_S = 300;
const WORKER_TARGET_MB = 400;
/** How long after the run completed its workflow may go on starting the exceptions' timers. */
const TIMERS_LIMIT_S = 300;

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MB`;

/**
 * (9a): seeds the payments and the file in SQL, then one run of the real workflow on the
 * engine's worker, its resident memory sampled throughout; the counts and the exceptions of each
 * kind must be exactly the seeded ones.
 */
export async function reconRunScenario(bench: Bench, records = RECON_RECORDS): Promise<Row> {
  const { engine, fixture } = bench;
  const { pool } = engine;
  progress(`9a seeding ${records.toLocaleString('en')} payments and provider records in SQL`);
  const seeding = performance.now();
  const seed = await seedRecon(pool, {
    applicationId: fixture.applicationId,
    mode: 'test',
    payments: records,
    progress,
  });
  progress(`   seeded in ${((performance.now() - seeding) / 1000).toFixed(1)}s`);
  const run = await insertReconRun(pool, {
    id: randomUUID(),
    applicationId: fixture.applicationId,
    mode: 'test',
    provider: 'mobile_money',
    from: seed.from,
    to: seed.to,
    importId: seed.importId,
    origin: 'api',
  });
  const runId = run!.id;
  const rss = sampleResident(engine.maintenanceWorkerPid);
  const started = performance.now();
  await startReconciliationRun(engine.client, taskQueueOf(engine.config, 'maintenance'), runId);
  // The run is done for its user when it is `completed`; its workflow then starts the timers.
  let completedS = Number.NaN;
  const watch = setInterval(() => {
    void getReconRun(pool, runId).then((r) => {
      if (r.status !== 'running' && Number.isNaN(completedS)) {
        completedS = (performance.now() - started) / 1000;
      }
    });
  }, 500);
  let highest: number;
  let timersDone: boolean;
  try {
    // Polled rather than awaited: a result still awaited when the shape's connection closes
    // would retry on the closed channel and throw from a timer.
    const handle = engine.client.workflow.getHandle(workflowIds.reconRun(runId));
    let polling = true;
    const result = (async () => {
      while (polling) {
        if ((await handle.describe()).status.name !== 'RUNNING') return 'ended' as const;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      return 'limit' as const;
    })();
    // The exceptions' stale timers are started after the run completed: waited for a while.
    const limit = new Promise<'limit'>((resolve) => {
      const check = setInterval(() => {
        const since = (performance.now() - started) / 1000 - completedS;
        if (since > TIMERS_LIMIT_S) {
          clearInterval(check);
          polling = false;
          resolve('limit');
        }
      }, 1_000);
      void result.finally(() => clearInterval(check));
    });
    timersDone = (await Promise.race([result, limit])) !== 'limit';
  } finally {
    clearInterval(watch);
    highest = rss.stop();
  }
  const endedS = (performance.now() - started) / 1000;
  const ended = await getReconRun(pool, runId);
  if (Number.isNaN(completedS)) completedS = endedS;
  const found = await exceptionsOfRun(bench, runId);
  const kinds = Object.keys(seed.expected) as (keyof ReconCountsExpected)[];
  const wrong = kinds.filter(
    (k) =>
      ended.counts[k] !== seed.expected[k] || (k !== 'matched' && found[k] !== seed.expected[k]),
  );
  if (ended.status !== 'completed' || wrong.length) {
    throw new Error(
      `9a: the run is ${ended.status}; counts ${JSON.stringify(ended.counts)}, exceptions ` +
        `${JSON.stringify(found)}; expected ${JSON.stringify(seed.expected)}`,
    );
  }
  const rate = seed.records / completedS;
  const verdict = [
    completedS < RUN_TARGET_S ? 'under' : 'OVER',
    `${RUN_TARGET_S} s,`,
    highest < WORKER_TARGET_MB * 1024 * 1024 ? 'under' : 'OVER',
    `${WORKER_TARGET_MB} MB`,
  ].join(' ');
  const note =
    `${completedS.toFixed(0)} s to completed (${endedS.toFixed(0)} s ${timersDone ? 'with' : 'and still starting'} ` +
    `the exceptions' timers: ${(endedS - completedS).toFixed(0)} s after completed), ` +
    `${rate.toFixed(0)} records/s; worker RSS ${mb(rss.start)} before, ` +
    `${mb(highest)} at most (${verdict})`;
  progress(`   ${note}`);
  return {
    id: '9a',
    scenario:
      `reconciliation run, ${seed.records.toLocaleString('en')} records against ` +
      `${seed.payments.toLocaleString('en')} payments, 1% of each kind found exactly`,
    load: 'one run',
    result: null,
    note,
  };
}

/** The exceptions the run found, by kind, in the order of the counts. */
async function exceptionsOfRun(bench: Bench, runId: string) {
  const rows = await bench.engine.pool.any(sql.type(z.object({ kind: z.string(), n: z.number() }))`
    SELECT kind, count(*)::int AS n FROM recon_exceptions WHERE run_id = ${runId} GROUP BY kind`);
  const of = (kind: string) => rows.find((r) => r.kind === kind)?.n ?? 0;
  return {
    missingInternal: of('missing_internal'),
    missingExternal: of('missing_external'),
    amountMismatch: of('amount_mismatch'),
    statusMismatch: of('status_mismatch'),
    duplicate: of('duplicate'),
  };
}

/** Row (9b)'s file: the most rows the API takes (src/providers/settlement-file.ts). */
export const IMPORT_ROWS = 200_000;
const IMPORT_TARGET_S = 60;
const API_TARGET_MB = 300;

/**
 * A settlement file of `rows` distinct rows (a `salt` of its own, so that it is never the same
 * file as an earlier import), about a hundred bytes a row.
 */
export function settlementCsv(rows: number, salt: string, at = new Date()): string {
  const lines = ['provider_reference,booked_at,amount,currency,fee,direction,status'];
  const stamp = at.toISOString();
  for (let i = 0; i < rows; i++) {
    const amount = `${1 + (i % 5_000)}.${String(i % 100).padStart(2, '0')}`;
    const status = i % 50 === 0 ? 'failed' : 'succeeded';
    lines.push(
      `${salt}-${String(i).padStart(9, '0')},${stamp},${amount},SLE,0.15,${i % 4 === 1 ? 'out' : 'in'},${status}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/**
 * (9b): one upload of the largest file the API takes, through `POST
 * /api/v1/reconciliation/imports`, the API's resident memory sampled; it must be answered 201
 * with every row, and every row stored.
 */
export async function reconImportScenario(bench: Bench, rows = IMPORT_ROWS): Promise<Row> {
  const { engine, fixture } = bench;
  const csv = settlementCsv(rows, `bench-${randomUUID()}`);
  const bytes = Buffer.byteLength(csv);
  progress(`9b import of ${rows.toLocaleString('en')} rows (${mb(bytes)}) through the API`);
  const form = new FormData();
  form.append('provider', 'mobile_money');
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'settlement.csv');
  const rss = sampleResident(engine.apiPid);
  const started = performance.now();
  let highest: number;
  let status: number;
  let text: string;
  try {
    const response = await fetch(`${engine.apiUrl}/api/v1/reconciliation/imports`, {
      method: 'POST',
      headers: fixture.headers,
      body: form,
    });
    status = response.status;
    text = await response.text();
  } finally {
    highest = rss.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  const body = (status === 201 ? JSON.parse(text) : {}) as { id?: string; rows?: number };
  const stored = body.id
    ? await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM recon_import_records WHERE import_id = ${body.id}`)
    : 0;
  if (status !== 201 || body.rows !== rows || stored !== rows) {
    throw new Error(`9b: answered ${status} ${text.slice(0, 500)}; ${stored} rows stored`);
  }
  const verdict = [
    seconds < IMPORT_TARGET_S ? 'under' : 'OVER',
    `${IMPORT_TARGET_S} s,`,
    highest < API_TARGET_MB * 1024 * 1024 ? 'under' : 'OVER',
    `${API_TARGET_MB} MB`,
  ].join(' ');
  const note =
    `${seconds.toFixed(1)} s, ${(rows / seconds).toFixed(0)} rows/s; API RSS ${mb(rss.start)} ` +
    `before, ${mb(highest)} at most (${verdict})`;
  progress(`   ${note}`);
  return {
    id: '9b',
    scenario: `settlement file import, ${rows.toLocaleString('en')} rows (${mb(bytes)}), validated and stored`,
    load: 'one request',
    result: null,
    note,
  };
}

/** Row (9a)'s size: BENCH_RECON_RECORDS (a smaller run, to try the row out), else a million. */
export function reconRecords(env: NodeJS.ProcessEnv): number {
  const text = env.BENCH_RECON_RECORDS;
  if (text === undefined) return RECON_RECORDS;
  const n = Number(text.replace(/_/g, ''));
  if (!Number.isInteger(n) || n < 100 || n % 100 !== 0) {
    throw new Error(`BENCH_RECON_RECORDS ${text}: a whole number of hundreds`);
  }
  return n;
}

/** Section `reconciliation`: rows (9a) and (9b). */
export async function reconciliationScenarios(bench: Bench): Promise<Row[]> {
  // The import first, on an API that has served only the set-up: its memory is the import's.
  const imported = await reconImportScenario(bench);
  return [await reconRunScenario(bench, reconRecords(process.env)), imported];
}
