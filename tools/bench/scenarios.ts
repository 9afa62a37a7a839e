/**
 * The benchmark's rows on one running engine. Their load comes from the load generator's process
 * but for three that stay in the engine's: (1) and (7b), direct SQL, and (2d), whose eager start
 * needs the worker's own connection.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';
import { createTransferActivities } from '../../src/activities/transfer';
import type { DatabasePool } from '../../src/db/pool';
import { lockAccounts, postLedgerTransaction } from '../../src/db/ledger';
import { transferPostings } from '../../src/domain/ledger';
import { ANALYTICS_PAYMENTS, dashboardQuery, seedAnalytics } from './analytics';
import { backUpDeliveries, silentEndpoint } from './backlog';
import { coresOver, coresUsed, cpuSnapshot, type CpuGroups } from './cpu';
import {
  progress,
  startBenchWorker,
  WALLETS,
  type Engine,
  type Fixture,
  type Shape,
} from './engine';
import type { LoadJob, LoadProcess, LoadShape } from './generator';
import { closedLoop, combineResults, type LoadResult, type Send } from './load';
import { fmtMs, fmtRate } from './format';
import { failure, httpClient, idOf, pickPair, type ApiTarget, type SenderSpec } from './senders';
import { webhookDeliveries } from './webhooks';
import { emptyWorkflow } from './workflows';

export const LEDGER_CLIENTS = 16;
const WORKFLOW_CONCURRENCY = 32;
export const API_CONCURRENCY = 32;
const WARMUP_S = 1;
const CLOSED_S = 4;
/**
 * The API rows' closed-loop estimates run longer: at saturation a payment takes one to two
 * seconds, and a 4 s window would count only two or three per client (a quarter either way).
 */
const API_CLOSED_S = 10;
const API_WARMUP_S = 2;
export const OPEN_S = 6;
/** The open rows of (3), (4) and (5): fractions of the closed-loop estimate, ids b to e. */
export const RATE_FRACTIONS = [0.25, 0.5, 0.75, 1];
/** Row (6): transfers per second while webhooks are delivered. */
const WEBHOOK_TRANSFER_RATE = 15;

export type Row = {
  id: string;
  scenario: string;
  load: string;
  result: LoadResult | null;
  /** Shown instead of figures when there is no result. */
  note?: string;
  /**
   * The process shape of the engine it measured (API rows), or whose way of starting a
   * workflow it measures (2b: a client start to a worker elsewhere; 2d: eager, in-process).
   */
  shape?: Shape;
  /** Cores busy on average while it ran. */
  cpu?: CpuGroups;
  /**
   * Throughput as a fraction of the bare workflow rate of its shape, in the same configuration:
   * 2d (eager start, in-process) for the single shape, 2b (a client start) for the split one.
   */
  ofEmptyWorkflow?: number;
  /** (3i), (4i): the lowest and highest of the rounds' own ratios to (2i). */
  ofEmptyWorkflowRange?: [number, number];
  /** The hot-wallet row (3h): throughput as a fraction of the spread-out transfers' (3). */
  ofSpreadOut?: number;
};

/** One engine's run: what the rows need. */
export type Bench = {
  engine: Engine;
  fixture: Fixture;
  load: LoadProcess;
  tuning: Partial<WorkerOptions>;
  /** Aborted by Ctrl-C: the load stops, then the engine. */
  signal: AbortSignal;
};

export async function measure(
  id: string,
  scenario: string,
  load: string,
  run: () => Promise<LoadResult>,
): Promise<Row> {
  progress(`${id} ${scenario} (${load})`);
  const before = cpuSnapshot();
  const started = performance.now();
  const result = await run();
  const cpu = coresUsed(before, cpuSnapshot(), (performance.now() - started) / 1000);
  progress(
    `   ${fmtRate(result.throughput)}, p50 ${fmtMs(result.p50)}, p99 ${fmtMs(result.p99)}, errors ${result.errors}`,
  );
  for (const [kind, count] of Object.entries(result.errorKinds)) {
    progress(`   error x${count}: ${kind}`);
  }
  return { id, scenario, load, result, cpu };
}

/** A closed loop in the engine's process (rows 1, 2d and 7b). */
const closedHere = (bench: Bench, concurrency: number, send: Send) =>
  closedLoop({
    concurrency,
    durationS: CLOSED_S,
    warmupS: WARMUP_S,
    send,
    signal: bench.signal,
  });

const closedShape = (concurrency: number, durationS = CLOSED_S, warmupS = WARMUP_S): LoadShape => ({
  kind: 'closed',
  concurrency,
  durationS,
  warmupS,
});

/** A job for the load generator's process. */
const remote = (bench: Bench, sender: SenderSpec, shape: LoadShape) => () =>
  bench.load.run({ sender, shape } satisfies LoadJob, bench.signal);

const apiTarget = (bench: Bench): ApiTarget => ({
  apiUrl: bench.engine.apiUrl,
  headers: bench.fixture.headers,
});

// ---------------------------------------------------------------------------------------------
// (1) The ledger alone.

/**
 * The ledger core of a transfer, in one database transaction: lock both wallets in the fixed
 * order, check them, post the balanced ledger transaction.
 */
async function ledgerTransfer(
  pool: DatabasePool,
  applicationId: string,
  fromId: string,
  toId: string,
  amount: bigint,
): Promise<void> {
  await pool.transaction(async (trx) => {
    const accounts = await lockAccounts(trx, [fromId, toId]);
    const from = accounts.get(fromId);
    const to = accounts.get(toId);
    if (!from || !to) throw new Error('wallet not found');
    if (from.currency !== to.currency) throw new Error('currencies differ');
    if (from.balance < amount) throw new Error('insufficient funds');
    await postLedgerTransaction(trx, {
      applicationId,
      mode: 'test',
      transactionId: null,
      kind: 'bench_transfer',
      postings: transferPostings(from.id, to.id, from.currency, amount),
    });
  });
}

export async function ledgerScenarios(bench: Bench): Promise<Row[]> {
  const { pool } = bench.engine;
  const { applicationId, wallets } = bench.fixture;
  const hot = wallets.slice(0, 2);
  const load = `closed, ${LEDGER_CLIENTS} clients`;
  const activity = createTransferActivities({ pool }).transferFunds;
  return [
    await measure('1a', `ledger core, ${WALLETS} wallets`, load, () =>
      closedHere(bench, LEDGER_CLIENTS, async () => {
        const [from, to] = pickPair(wallets);
        await ledgerTransfer(pool, applicationId, from, to, 1n);
      }),
    ),
    await measure('1b', 'ledger core, hot pair (2 wallets)', load, () =>
      closedHere(bench, LEDGER_CLIENTS, async () => {
        const [from, to] = pickPair(hot);
        await ledgerTransfer(pool, applicationId, from, to, 1n);
      }),
    ),
    await measure('1c', `transfer activity's DB work, ${WALLETS} wallets`, load, () =>
      closedHere(bench, LEDGER_CLIENTS, async () => {
        const [from, to] = pickPair(wallets);
        await activity({
          transactionId: randomUUID(),
          applicationId,
          mode: 'test',
          fromWalletId: from,
          toWalletId: to,
          amount: '1',
          description: '',
        });
      }),
    ),
  ];
}

// ---------------------------------------------------------------------------------------------
// (2) Temporal alone.

export async function orchestrationScenarios(bench: Bench): Promise<Row[]> {
  const { engine } = bench;
  const { taskQueue, worker } = await startBenchWorker(engine, bench.tuning, 'orchestration');
  const load = `closed, ${WORKFLOW_CONCURRENCY} in flight`;
  const namespace = engine.config.temporal.namespace;
  const run = (workflowType: string) =>
    remote(
      bench,
      {
        kind: 'workflow',
        address: engine.temporal.address,
        namespace,
        payloadKeys: engine.payloadKeys,
        taskQueue,
        workflowType,
      },
      closedShape(WORKFLOW_CONCURRENCY),
    );
  const eager = eagerEmptyWorkflow(engine, taskQueue);
  try {
    return [
      await measure('2', 'workflow + 1 no-op activity', load, run('activityWorkflow')),
      {
        ...(await measure('2b', 'workflow, returns at once', load, run('emptyWorkflow'))),
        shape: 'split',
      },
      await measure('2c', 'workflow + 1 no-op local activity', load, run('localActivityWorkflow')),
      {
        ...(await measure(
          '2d',
          'workflow, returns at once, eager start',
          `${load}, in-process`,
          () => closedHere(bench, WORKFLOW_CONCURRENCY, eager),
        )),
        shape: 'single',
      },
    ];
  } finally {
    await worker.stop();
  }
}

/**
 * The empty workflow started eagerly, as the single shape's API starts a payment: the server
 * hands the first workflow task back in the start's answer, to a worker on the client's own
 * connection; so this client shares the benchmark workers' connection, in this process.
 */
function eagerEmptyWorkflow(engine: Engine, taskQueue: string): Send {
  const eager = new Client({
    connection: engine.nativeConnection,
    namespace: engine.config.temporal.namespace,
    dataConverter: engine.dataConverter,
  });
  return async () => {
    await eager.workflow.execute(emptyWorkflow, {
      taskQueue,
      workflowId: `bench-${randomUUID()}`,
      requestEagerStart: true,
    });
  };
}

// ---------------------------------------------------------------------------------------------
// (3) to (5) through the API.

/** A closed-loop estimate of the capacity, then the open model at `fractions` of it. */
async function apiScenarios(
  bench: Bench,
  prefix: string,
  name: string,
  unit: string,
  sender: SenderSpec,
  fractions: readonly number[],
): Promise<Row[]> {
  const estimate = await measure(
    prefix,
    `${name}: closed-loop estimate`,
    `closed, ${API_CONCURRENCY} clients`,
    remote(bench, sender, closedShape(API_CONCURRENCY, API_CLOSED_S, API_WARMUP_S)),
  );
  const rows = [estimate];
  const capacity = estimate.result!.throughput;
  for (const fraction of fractions) {
    const rate = Math.max(1, Math.round(capacity * fraction));
    // The same id for the same fraction whichever fractions run: 3c is always 50 %.
    const letter = String.fromCharCode(98 + RATE_FRACTIONS.indexOf(fraction));
    rows.push(
      await measure(
        `${prefix}${letter}`,
        `${name} at ${Math.round(fraction * 100)}%`,
        `open, ${rate} ${unit}/s x ${OPEN_S}s`,
        remote(bench, sender, { kind: 'open', rate, durationS: OPEN_S }),
      ),
    );
  }
  return rows;
}

export const transferScenarios = (bench: Bench, fractions: readonly number[]) =>
  apiScenarios(
    bench,
    '3',
    'API transfer',
    'req',
    { kind: 'transfer', ...apiTarget(bench), wallets: bench.fixture.wallets },
    fractions,
  );

/** Row (3q)'s backlog of webhook deliveries, to an endpoint that never answers. */
export const WEBHOOK_BACKLOG = 10_000;

/** Row (3q)'s backlog: BENCH_BACKLOG_DELIVERIES (a smaller run, to try it out), else the most. */
export function backlogSize(env: NodeJS.ProcessEnv): number {
  const text = env.BENCH_BACKLOG_DELIVERIES;
  if (text === undefined) return WEBHOOK_BACKLOG;
  const n = Number(text.replace(/_/g, ''));
  if (!Number.isInteger(n) || n < 1 || n > WEBHOOK_BACKLOG) {
    throw new Error(
      `BENCH_BACKLOG_DELIVERIES ${text}: a whole number from 1 to ${WEBHOOK_BACKLOG}`,
    );
  }
  return n;
}

/** Rows (3w) and (3q) compare two p99s within a tenth: they need more samples than (3c) takes. */
const BACKLOG_OPEN_S = 30;

/**
 * (3q): transfers at half their closed-loop capacity, as (3c), without (3w) then with a backlog
 * of undeliverable webhook deliveries; their queue of its own keeps the p99 near (3w)'s.
 */
export async function backlogScenarios(bench: Bench): Promise<Row[]> {
  const sender: SenderSpec = {
    kind: 'transfer',
    ...apiTarget(bench),
    wallets: bench.fixture.wallets,
  };
  const estimate = await remote(
    bench,
    sender,
    closedShape(API_CONCURRENCY, API_CLOSED_S, API_WARMUP_S),
  )();
  const rate = Math.max(1, Math.round(estimate.throughput * 0.5));
  const load = `open, ${rate} req/s x ${BACKLOG_OPEN_S}s`;
  const without = await measure(
    '3w',
    'API transfer at 50%, no webhook backlog',
    load,
    remote(bench, sender, { kind: 'open', rate, durationS: BACKLOG_OPEN_S }),
  );
  const endpoint = await silentEndpoint();
  const api = httpClient(bench.engine.apiUrl, bench.fixture.headers);
  const count = backlogSize(process.env);
  try {
    await backUpDeliveries({ ...bench, api, url: endpoint.url, count });
    const withBacklog = await measure(
      '3q',
      `API transfer at 50%, ${count.toLocaleString('en')} webhook deliveries backed up`,
      load,
      remote(bench, sender, { kind: 'open', rate, durationS: BACKLOG_OPEN_S }),
    );
    const ratio = (withBacklog.result?.p99 ?? NaN) / (without.result?.p99 ?? NaN);
    progress(`   p99 with the backlog / without: ${ratio.toFixed(2)} (target at most 1.10)`);
    return [without, withBacklog];
  } finally {
    api.close();
    await endpoint.close();
  }
}

/** (3h): every transfer out of one well-funded wallet, to the others spread out. */
export const hotWalletScenarios = (bench: Bench) => {
  const [hot, ...others] = bench.fixture.wallets;
  return apiScenarios(
    bench,
    '3h',
    'API transfer out of 1 hot wallet',
    'req',
    { kind: 'transfer', ...apiTarget(bench), wallets: others, from: hot! },
    [0.5],
  );
};

export const cardScenarios = (bench: Bench, fractions: readonly number[]) =>
  apiScenarios(
    bench,
    '5',
    'card deposit',
    'req',
    { kind: 'card', ...apiTarget(bench), wallets: bench.fixture.wallets },
    fractions,
  );

/** (5r): partial refunds of card deposits, each a saga with the sandbox's refund step. */
export const refundScenarios = (bench: Bench, fractions: readonly number[]) =>
  apiScenarios(
    bench,
    '5r',
    'card refund',
    'req',
    { kind: 'refund', ...apiTarget(bench), wallets: bench.fixture.wallets },
    fractions,
  );

const ok = (status: number) => status >= 200 && status < 300;

export async function escrowScenarios(bench: Bench, fractions: readonly number[]): Promise<Row[]> {
  const unavailable = (note: string): Row[] => {
    progress(`4 escrow: ${note}`);
    return [{ id: '4', scenario: 'escrow hold + release', load: '-', result: null, note }];
  };
  // One flow first: the endpoints are young, and a broken one should not stop the benchmark.
  const api = httpClient(bench.engine.apiUrl, bench.fixture.headers);
  try {
    const [from, to] = pickPair(bench.fixture.wallets);
    const probe = await api.post('/api/v1/escrow/hold', {
      wallet_id: from,
      amount: 0.01,
      recipient_wallet_id: to,
    });
    if (probe.status === 404) return unavailable('n/a (escrow endpoints not available)');
    if (!ok(probe.status)) return unavailable(`n/a (${failure('probe hold', probe).message})`);
    const release = await api.post(`/api/v1/escrow/${idOf(probe.body, 'hold')}/release`, {
      recipient_wallet_id: to,
    });
    if (!ok(release.status)) {
      return unavailable(`n/a (${failure('probe release', release).message})`);
    }
  } finally {
    api.close();
  }
  return apiScenarios(
    bench,
    '4',
    'escrow hold + release',
    'flows',
    { kind: 'escrow', ...apiTarget(bench), wallets: bench.fixture.wallets },
    fractions,
  );
}

// ---------------------------------------------------------------------------------------------
// (2i), (3i), (4i): the ratios, interleaved.

/**
 * Rounds of the interleaved rows, and each burst's measured window and warm-up. Six rounds of
 * three kinds, the order rotating: each kind takes each place in a round twice.
 */
const INTERLEAVED_ROUNDS = 6;
const INTERLEAVED_S = 4;
const INTERLEAVED_WARMUP_S = 2;

/**
 * The order of the interleaved bursts: `rounds` rotating rounds of the `kinds`, each kind in each
 * place alike when `rounds` is a multiple of `kinds`; first an unmeasured burst (`round` null) of
 * the last round's final kind, so that every measured burst follows a burst, not an idle server.
 */
export function interleavedSchedule(
  kinds: number,
  rounds: number,
): { kind: number; round: number | null }[] {
  const measured: { kind: number; round: number | null }[] = [];
  for (let round = 0; round < rounds; round++) {
    for (let turn = 0; turn < kinds; turn++) measured.push({ kind: (round + turn) % kinds, round });
  }
  return [{ kind: measured[measured.length - 1]!.kind, round: null }, ...measured];
}

/**
 * The shape's bare workflow (2d single, 2b split), API transfers and escrow flows at saturation,
 * in bursts that take turns so that the machine's drift falls on all three alike (see
 * docs/benchmarks.md "The rows"). Latency is not shown: the bursts are at saturation.
 */
export async function interleavedScenarios(bench: Bench): Promise<Row[]> {
  const { engine } = bench;
  const { taskQueue, worker } = await startBenchWorker(engine, bench.tuning, 'interleaved');
  const shape = closedShape(WORKFLOW_CONCURRENCY, INTERLEAVED_S, INTERLEAVED_WARMUP_S);
  const bare: { scenario: string; run: () => Promise<LoadResult> } =
    engine.shape === 'single'
      ? {
          scenario: 'workflow, returns at once, eager start (as 2d), interleaved',
          run: () =>
            closedLoop({
              concurrency: WORKFLOW_CONCURRENCY,
              durationS: INTERLEAVED_S,
              warmupS: INTERLEAVED_WARMUP_S,
              send: eagerEmptyWorkflow(engine, taskQueue),
              signal: bench.signal,
            }),
        }
      : {
          scenario: 'workflow, returns at once (as 2b), interleaved',
          run: remote(
            bench,
            {
              kind: 'workflow',
              address: engine.temporal.address,
              namespace: engine.config.temporal.namespace,
              payloadKeys: engine.payloadKeys,
              taskQueue,
              workflowType: 'emptyWorkflow',
            },
            shape,
          ),
        };
  const kinds = [
    { id: '2i', ...bare },
    {
      id: '3i',
      scenario: 'API transfer (as 3), interleaved with 2i',
      run: remote(
        bench,
        { kind: 'transfer', ...apiTarget(bench), wallets: bench.fixture.wallets },
        shape,
      ),
    },
    {
      id: '4i',
      scenario: 'escrow hold + release (as 4), interleaved with 2i',
      run: remote(
        bench,
        { kind: 'escrow', ...apiTarget(bench), wallets: bench.fixture.wallets },
        shape,
      ),
    },
  ];
  const bursts = kinds.map(() => [] as { result: LoadResult; cpu: CpuGroups; seconds: number }[]);
  try {
    for (const { kind: k, round } of interleavedSchedule(kinds.length, INTERLEAVED_ROUNDS)) {
      if (round === null) {
        progress(`${kinds[k]!.id} lead-in, not measured`);
        await kinds[k]!.run();
        continue;
      }
      progress(`${kinds[k]!.id} round ${round + 1} of ${INTERLEAVED_ROUNDS}`);
      const before = cpuSnapshot();
      const started = performance.now();
      const result = await kinds[k]!.run();
      const after = cpuSnapshot();
      const seconds = (performance.now() - started) / 1000;
      progress(`   ${fmtRate(result.throughput)}, errors ${result.errors}`);
      bursts[k]!.push({ result, cpu: coresUsed(before, after, 1), seconds });
    }
  } finally {
    await worker.stop();
  }
  const load = `closed, ${WORKFLOW_CONCURRENCY}, ${INTERLEAVED_ROUNDS} x ${INTERLEAVED_S} s, taking turns`;
  const rows = kinds.map(({ id, scenario }, k): Row => {
    const own = bursts[k]!;
    return {
      id,
      scenario,
      load,
      result: combineResults(own.map((b) => b.result)),
      cpu: coresOver(own),
    };
  });
  const empty = bursts[0]!.map((b) => b.result.throughput);
  for (const [k, row] of rows.entries()) {
    if (k === 0 || !row.result || !rows[0]!.result?.throughput) continue;
    row.ofEmptyWorkflow = row.result.throughput / rows[0]!.result.throughput;
    const perRound = bursts[k]!.map((b, round) => b.result.throughput / empty[round]!);
    row.ofEmptyWorkflowRange = [Math.min(...perRound), Math.max(...perRound)];
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// (6) webhooks, (7) analytics.

export async function webhookScenario(bench: Bench): Promise<Row> {
  const api = httpClient(bench.engine.apiUrl, bench.fixture.headers);
  try {
    return await measure(
      '6',
      'webhook deliveries while transfers run (latency: movement to delivery)',
      `open, ${WEBHOOK_TRANSFER_RATE} transfers/s x ${OPEN_S}s`,
      () =>
        webhookDeliveries({
          api,
          transfers: remote(
            bench,
            { kind: 'transfer', ...apiTarget(bench), wallets: bench.fixture.wallets },
            { kind: 'open', rate: WEBHOOK_TRANSFER_RATE, durationS: OPEN_S },
          ),
          signal: bench.signal,
        }),
    );
  } finally {
    api.close();
  }
}

export async function analyticsScenarios(bench: Bench): Promise<Row[]> {
  await seedAnalytics(bench.engine, bench.fixture);
  const payments = `${ANALYTICS_PAYMENTS / 1_000_000}M payments`;
  return [
    await measure(
      '7a',
      `GET /api/v1/analytics/dashboard, ${payments}`,
      'closed, 1 client',
      remote(
        bench,
        { kind: 'dashboard', ...apiTarget(bench), minimumCount: ANALYTICS_PAYMENTS * 0.9 },
        closedShape(1),
      ),
    ),
    await measure(
      '7b',
      `dashboard query alone (src/db/analytics.ts), ${payments}`,
      'closed, 1 client, in-process',
      () => closedHere(bench, 1, dashboardQuery(bench.engine, bench.fixture)),
    ),
  ];
}

/** The bare workflow row each shape's API rows are held against. */
export const BARE_WORKFLOW: Readonly<Record<Shape, string>> = { single: '2d', split: '2b' };

/**
 * The ratios, within each shape: (3) to (5) against its bare workflow rate (BARE_WORKFLOW),
 * and the hot wallet (3h) against (3).
 */
export function addRatios(rows: Row[]): void {
  const rate = (id: string, shape?: Shape) =>
    rows.find((r) => r.id === id && (shape === undefined || r.shape === shape))?.result?.throughput;
  for (const row of rows) {
    if (!row.result || !row.shape) continue;
    const bare = rate(BARE_WORKFLOW[row.shape]);
    const spreadOut = rate('3', row.shape);
    if (bare && /^[345]/.test(row.id) && !row.id.endsWith('i')) {
      row.ofEmptyWorkflow = row.result.throughput / bare;
    }
    if (spreadOut && row.id === '3h') row.ofSpreadOut = row.result.throughput / spreadOut;
  }
}
