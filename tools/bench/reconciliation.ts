/**
 * Rows (9a) and (9b): a provider reconciliation run over a million records, and a settlement
 * file's import through the API (docs/benchmarks.md "Rows (9a) and (9b)"). Each checks its result
 * and throws when it is wrong: a fast wrong answer is no figure.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { getReconRun, insertReconRun } from '../../db/recon-runs';
import { startReconciliationRun } from '../../temporal/recon-runs';
import { taskQueueOf } from '../../temporal/task-queues';
import { workflowIds } from '../../workflows/ids';
import { progress } from './engine';
import { seedRecon, type ReconCountsExpected } from './recon-seed';
import { sampleResident } from './rss';
import type { Bench, Row } from './scenarios';

/** Row (9a)'s size: payments, and as many provider records. */
export const RECON_RECORDS = 1_000_000;
/** The targets the rows are held to (docs/benchmarks.md). */
const RUN_TARGET_S = 300;
const WORKER_TARGET_MB = 400;

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
  const rss = sampleResident(engine.workerPid);
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
  try {
    await engine.client.workflow.getHandle(workflowIds.reconRun(runId)).result();
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
    `${completedS.toFixed(0)} s to completed (${endedS.toFixed(0)} s with the exceptions' ` +
    `timers started), ${rate.toFixed(0)} records/s; worker RSS ${mb(rss.start)} before, ` +
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

/** Section `reconciliation`: rows (9a) and (9b). */
export async function reconciliationScenarios(bench: Bench): Promise<Row[]> {
  return [await reconRunScenario(bench)];
}
