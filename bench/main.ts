/**
 * `npm run bench`: what the engine sustains on this machine, measured in one run against a
 * throwaway Postgres and a Temporal development server (in memory, or on a file: --temporal-file).
 *
 *   (1) the ledger alone: balanced double-entry transfers straight into Postgres;
 *   (2) Temporal alone: trivial workflows on the same server;
 *   (3) transfers through the real API and worker, open-model load at a few arrival rates;
 *   (4) escrow hold-then-release through the API (n/a while POST /api/v1/escrow/hold is 404);
 *   (5) card deposits through the API, charged at once by the Test Mode card sandbox;
 *   (6) webhook deliveries to a loopback endpoint while transfers run (bench/webhooks.ts);
 *   (7) the dashboard's analytics with a million payments seeded in SQL (bench/analytics.ts).
 *
 * Options: --json (print the results as JSON instead of the table), --durable (Postgres with
 * fsync and synchronous commit on), --temporal-file (the dev server on a file in the durable
 * configuration `npm start` ships, instead of in memory), --tuning='{"maxConcurrentActivityTaskPolls":20}' (worker
 * options for both workers), --only=ledger,orchestration,api,escrow,card,webhooks,analytics, --profile (see profile.ts).
 * Progress goes to stderr; stdout holds only the result. The engine is started by engine.ts, the
 * load by load.ts, the trivial workflows live in workflows.ts, CPU accounting in cpu.ts.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { Worker, type WorkerOptions } from '@temporalio/worker';
import { createTransferActivities } from '../activities/transfer';
import type { DatabasePool } from '../db/pool';
import { lockAccounts, postLedgerTransaction } from '../db/ledger';
import { ledgerInvariantProblems } from '../db/ledger-audit';
import { transferPostings } from '../domain/ledger';
import { keepRunning } from '../harness/engine';
import { installTemporalRuntime } from '../harness/temporal';
import { coresUsed, cpuSnapshot, type CpuGroups } from './cpu';
import {
  failure,
  httpClient,
  idOf,
  pickPair,
  progress,
  setUp,
  startEngine,
  transferSender,
  WALLETS,
  type Engine,
  type Fixture,
  type HttpClient,
} from './engine';
import { ANALYTICS_PAYMENTS, dashboardQuery, dashboardSender, seedAnalytics } from './analytics';
import { closedLoop, openLoop, type LoadResult, type Send } from './load';
import { runProfile, type ProfileReport } from './profile';
import { webhookDeliveries } from './webhooks';
import { activityWorkflow, emptyWorkflow, localActivityWorkflow } from './workflows';

const LEDGER_CLIENTS = 16;
const WORKFLOW_CONCURRENCY = 32;
const API_CONCURRENCY = 32;
const WARMUP_S = 1;
const CLOSED_S = 5;
const OPEN_S = 8;
const RATE_FRACTIONS = [0.25, 0.5, 0.75, 1];
const SECTIONS = [
  'ledger',
  'orchestration',
  'api',
  'escrow',
  'card',
  'webhooks',
  'analytics',
] as const;
/** Row (6): transfers per second while webhooks are delivered. */
const WEBHOOK_TRANSFER_RATE = 15;
type Section = (typeof SECTIONS)[number];

type Options = {
  json: boolean;
  durable: boolean;
  temporalFile: boolean;
  profile: boolean;
  tuning: Partial<WorkerOptions>;
  only: Set<Section>;
};

function parseOptions(argv: readonly string[]): Options {
  const options: Options = {
    json: false,
    durable: false,
    temporalFile: false,
    profile: false,
    tuning: {},
    only: new Set(SECTIONS),
  };
  for (const arg of argv) {
    const [name, value] = arg.split(/=(.*)/s, 2) as [string, string | undefined];
    if (name === '--json') options.json = true;
    else if (name === '--durable') options.durable = true;
    else if (name === '--temporal-file') options.temporalFile = true;
    else if (name === '--profile') options.profile = true;
    else if (name === '--tuning' && value) {
      options.tuning = JSON.parse(value) as Partial<WorkerOptions>;
    } else if (name === '--only' && value) {
      const wanted = value.split(',');
      for (const w of wanted) {
        if (!SECTIONS.includes(w as Section)) throw new Error(`unknown section ${w}`);
      }
      options.only = new Set(wanted as Section[]);
    } else throw new Error(`unknown option ${arg}`);
  }
  return options;
}

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

// ---------------------------------------------------------------------------------------------
// The scenarios.

type Row = {
  id: string;
  scenario: string;
  load: string;
  result: LoadResult | null;
  /** Shown instead of figures when there is no result. */
  note?: string;
  /** Cores busy on average while it ran. */
  cpu?: CpuGroups;
  /** Throughput as a fraction of the orchestration limit (2). */
  ofOrchestration?: number;
};

async function measure(
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

/** Aborted by Ctrl-C: the load stops, then the engine. */
const interrupted = new AbortController();

const closed = (concurrency: number, send: Send) =>
  closedLoop({
    concurrency,
    durationS: CLOSED_S,
    warmupS: WARMUP_S,
    send,
    signal: interrupted.signal,
  });

async function ledgerScenarios(engine: Engine, fixture: Fixture): Promise<Row[]> {
  const { pool } = engine;
  const { applicationId, wallets } = fixture;
  const hot = wallets.slice(0, 2);
  const load = `closed, ${LEDGER_CLIENTS} clients`;
  const activity = createTransferActivities({ pool }).transferFunds;
  return [
    await measure('1a', `ledger core, ${WALLETS} wallets`, load, () =>
      closed(LEDGER_CLIENTS, async () => {
        const [from, to] = pickPair(wallets);
        await ledgerTransfer(pool, applicationId, from, to, 1n);
      }),
    ),
    await measure('1b', 'ledger core, hot pair (2 wallets)', load, () =>
      closed(LEDGER_CLIENTS, async () => {
        const [from, to] = pickPair(hot);
        await ledgerTransfer(pool, applicationId, from, to, 1n);
      }),
    ),
    await measure('1c', `transfer activity's DB work, ${WALLETS} wallets`, load, () =>
      closed(LEDGER_CLIENTS, async () => {
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

async function orchestrationScenarios(engine: Engine, options: Options): Promise<Row[]> {
  const taskQueue = `bench-orchestration-${randomUUID()}`;
  const worker = keepRunning(
    await Worker.create({
      connection: engine.nativeConnection,
      taskQueue,
      workflowBundle: { code: engine.benchBundle },
      activities: { noop: () => Promise.resolve() },
      ...options.tuning,
    }),
  );
  const load = `closed, ${WORKFLOW_CONCURRENCY} in flight`;
  const run = (workflow: () => Promise<string>) => () =>
    closed(WORKFLOW_CONCURRENCY, async () => {
      await engine.client.workflow.execute(workflow, {
        taskQueue,
        workflowId: `bench-${randomUUID()}`,
      });
    });
  try {
    return [
      await measure('2', 'workflow + 1 no-op activity', load, run(activityWorkflow)),
      await measure('2b', 'workflow, returns at once', load, run(emptyWorkflow)),
      await measure('2c', 'workflow + 1 no-op local activity', load, run(localActivityWorkflow)),
    ];
  } finally {
    await worker.stop();
  }
}

/** A closed-loop estimate of the capacity, then the open model at fractions of it. */
async function apiScenarios(
  prefix: string,
  name: string,
  unit: string,
  send: Send,
): Promise<Row[]> {
  const estimate = await measure(
    prefix,
    `${name}: closed-loop estimate`,
    `closed, ${API_CONCURRENCY} clients`,
    () => closed(API_CONCURRENCY, send),
  );
  const rows = [estimate];
  const capacity = estimate.result!.throughput;
  for (const [i, fraction] of RATE_FRACTIONS.entries()) {
    const rate = Math.max(1, Math.round(capacity * fraction));
    rows.push(
      await measure(
        `${prefix}${String.fromCharCode(98 + i)}`,
        `${name} at ${Math.round(fraction * 100)}%`,
        `open, ${rate} ${unit}/s x ${OPEN_S}s`,
        () => openLoop({ rate, durationS: OPEN_S, send, signal: interrupted.signal }),
      ),
    );
  }
  return rows;
}

const ok = (status: number) => status >= 200 && status < 300;

function escrowSender(api: HttpClient, wallets: readonly string[]): Send {
  return async () => {
    const [from, to] = pickPair(wallets);
    const hold = await api.post(
      '/api/v1/escrow/hold',
      { wallet_id: from, amount: 0.01, recipient_wallet_id: to },
      { 'idempotency-key': randomUUID() },
    );
    if (!ok(hold.status)) throw failure('hold', hold);
    const release = await api.post(
      `/api/v1/escrow/${idOf(hold.body, 'hold')}/release`,
      { recipient_wallet_id: to },
      { 'idempotency-key': randomUUID() },
    );
    if (!ok(release.status)) throw failure('release', release);
  };
}

/** A card deposit the sandbox charges at once: the provider's step and the ledger's. */
function cardDepositSender(api: HttpClient, wallets: readonly string[]): Send {
  return async () => {
    const [wallet] = pickPair(wallets);
    const deposit = await api.post(
      '/api/v1/transactions/wallet/card-deposit',
      { wallet_id: wallet, amount: 0.01, payment_method_id: 'pm_card_visa' },
      { 'idempotency-key': randomUUID() },
    );
    if (!ok(deposit.status)) throw failure('card deposit', deposit);
  };
}

async function escrowScenarios(api: HttpClient, wallets: readonly string[]): Promise<Row[]> {
  const unavailable = (note: string): Row[] => {
    progress(`4 escrow: ${note}`);
    return [{ id: '4', scenario: 'escrow hold + release', load: '-', result: null, note }];
  };
  // One flow first: the endpoints are young, and a broken one should not stop the benchmark.
  const [from, to] = pickPair(wallets);
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
  if (!ok(release.status)) return unavailable(`n/a (${failure('probe release', release).message})`);
  return apiScenarios('4', 'escrow hold + release', 'flows', escrowSender(api, wallets));
}

// ---------------------------------------------------------------------------------------------
// Output.

const fmtRate = (n: number) => `${n >= 100 ? Math.round(n) : n.toFixed(1)}/s`;
const fmtMs = (n: number) => (Number.isNaN(n) ? '-' : n >= 100 ? n.toFixed(0) : n.toFixed(1));

/** Aligned columns; a shorter row's last cell (a note) runs on without widening its column. */
function table(header: string[], rows: string[][], rightAligned: Set<number>): string {
  const sized = (r: string[], i: number) => r.length === header.length || i < r.length - 1;
  const widths = header.map((_, i) =>
    Math.max(...[header, ...rows].map((r) => (sized(r, i) ? r[i]!.length : 0))),
  );
  const line = (cells: string[]) =>
    cells
      .map((c, i) => {
        if (i === cells.length - 1 && cells.length < header.length) return c;
        return rightAligned.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!);
      })
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

function render(report: Report): string {
  const header = [
    '#',
    'Scenario',
    'Load',
    'Throughput',
    'p50 ms',
    'p99 ms',
    'Errors',
    'vs (2)',
    'Cores node/pg/tmprl/other',
  ];
  const rows = report.rows.map((r) => {
    if (!r.result) return [r.id, r.scenario, r.note ?? ''];
    const c = r.cpu;
    return [
      r.id,
      r.scenario,
      r.load,
      fmtRate(r.result.throughput),
      fmtMs(r.result.p50),
      fmtMs(r.result.p99),
      `${r.result.errors}/${r.result.sent}`,
      r.ofOrchestration === undefined ? '' : `${(r.ofOrchestration * 100).toFixed(0)}%`,
      c ? [c.node, c.postgres, c.temporal, c.other].map((n) => n.toFixed(2)).join('/') : '',
    ];
  });
  const e = report.environment;
  const measured = report.rows.filter((r) => r.cpu);
  const others = measured.reduce((a, r) => a + r.cpu!.other, 0) / Math.max(1, measured.length);
  return [
    `Wallet engine benchmark: ${e.cpus} CPUs (${e.cpuModel}), Node ${e.node}, ` +
      `Postgres ${e.postgres}, Temporal dev server ${e.temporal}`,
    `Worker tuning: ${JSON.stringify(e.tuning)}`,
    '',
    table(header, rows, new Set([3, 4, 5, 6, 7, 8])),
    '',
    '(1) one DB transaction per transfer, no Temporal, no HTTP. (2) client.workflow.execute',
    'per workflow, no DB. (3)/(4)/(5) real HTTP through the API and the worker; open rows fire at',
    'a fixed arrival rate, latency from the scheduled send time. vs (2): throughput / row 2.',
    '(6) events delivered per second to a loopback endpoint; latency from the event written with',
    'the money movement to its arrival at the endpoint.',
    '(7) the dashboard analytics, 1 client in a loop, after a million payments (with their ledger',
    'transactions) were seeded in SQL into the application over 90 days; 7a through HTTP, 7b the query.',
    'Cores: CPU cores busy on average, this Node process (API, worker, load generator),',
    'Postgres, the Temporal server, and every other process on the machine.',
    ...(others > 0.2
      ? [
          `WARNING: other processes kept ${others.toFixed(2)} cores busy on average: ` +
            'the machine was not idle, figures are low.',
        ]
      : []),
    '',
    `Ledger invariant: ${report.invariant.length === 0 ? 'OK' : `FAIL (${report.invariant.join('; ')})`}`,
    `Total time: ${report.seconds.toFixed(0)}s`,
  ].join('\n');
}

type Report = {
  environment: {
    cpus: number;
    cpuModel: string;
    node: string;
    postgres: string;
    temporal: string;
    tuning: Partial<WorkerOptions>;
  };
  rows: Row[];
  invariant: string[];
  profile?: ProfileReport;
  seconds: number;
};

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  // Ctrl-C is handled below: Postgres and Temporal must stop with the workers.
  installTemporalRuntime('ERROR', { shutdownSignals: [] });
  const engine = await startEngine({ ...options, ledgerClients: LEDGER_CLIENTS });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress(`${signal}: stopping`);
      interrupted.abort();
      void engine.close().finally(() => process.exit(130));
    });
  }
  try {
    progress(`creating ${WALLETS} users and wallets through the API, funding them`);
    const fixture = await setUp(engine);
    const rows: Row[] = [];
    if (options.only.has('ledger')) rows.push(...(await ledgerScenarios(engine, fixture)));
    if (options.only.has('orchestration')) {
      rows.push(...(await orchestrationScenarios(engine, options)));
    }
    const api = httpClient(engine.apiUrl, fixture.headers);
    try {
      if (options.only.has('api')) {
        rows.push(
          ...(await apiScenarios('3', 'API transfer', 'req', transferSender(api, fixture.wallets))),
        );
      }
      if (options.only.has('escrow')) rows.push(...(await escrowScenarios(api, fixture.wallets)));
      if (options.only.has('card')) {
        rows.push(
          ...(await apiScenarios(
            '5',
            'card deposit',
            'req',
            cardDepositSender(api, fixture.wallets),
          )),
        );
      }
      if (options.only.has('webhooks')) {
        rows.push(
          await measure(
            '6',
            'webhook deliveries while transfers run (latency: movement to delivery)',
            `open, ${WEBHOOK_TRANSFER_RATE} transfers/s x ${OPEN_S}s`,
            () =>
              webhookDeliveries({
                api,
                wallets: fixture.wallets,
                rate: WEBHOOK_TRANSFER_RATE,
                durationS: OPEN_S,
                signal: interrupted.signal,
              }),
          ),
        );
      }
      if (options.only.has('analytics')) {
        await seedAnalytics(engine, fixture);
        const payments = `${ANALYTICS_PAYMENTS / 1_000_000}M payments`;
        rows.push(
          await measure(
            '7a',
            `GET /api/v1/analytics/dashboard, ${payments}`,
            'closed, 1 client',
            () => closed(1, dashboardSender(engine.apiUrl, fixture.headers)),
          ),
          await measure(
            '7b',
            `dashboard query alone (db/analytics.ts), ${payments}`,
            'closed, 1 client',
            () => closed(1, dashboardQuery(engine, fixture)),
          ),
        );
      }
    } finally {
      api.close();
    }
    const orchestration = rows.find((r) => r.id === '2')?.result?.throughput;
    for (const row of rows) {
      if (orchestration && row.result && /^[345]/.test(row.id)) {
        row.ofOrchestration = row.result.throughput / orchestration;
      }
    }
    let profile: ProfileReport | undefined;
    if (options.profile) {
      const estimate = rows.find((r) => r.id === '3')?.result?.throughput ?? 20;
      profile = await runProfile(engine, fixture, {
        rate: Math.max(1, Math.round(estimate / 2)),
        durationS: OPEN_S,
        tuning: options.tuning,
      });
    }
    progress('checking the ledger invariant');
    const invariant = await ledgerInvariantProblems(engine.pool);
    const cpu = os.cpus();
    const report: Report = {
      environment: {
        cpus: cpu.length,
        cpuModel: cpu[0]?.model.trim() ?? 'unknown',
        node: process.version,
        postgres: options.durable ? 'fsync on' : 'fsync off, synchronous_commit off',
        temporal: options.temporalFile ? 'on a file (WAL, npm start configuration)' : 'in memory',
        tuning: options.tuning,
      },
      rows,
      invariant,
      ...(profile ? { profile } : {}),
      seconds: process.uptime(),
    };
    if (invariant.length) process.exitCode = 1;
    if (options.json) {
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    } else {
      process.stdout.write(`${render(report)}\n`);
      if (profile) process.stdout.write(`\n${profile.text}\n`);
    }
  } finally {
    progress('stopping');
    await engine.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
