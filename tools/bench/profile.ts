/**
 * `npm run bench -- --profile` (docs/benchmarks.md "Options"): where one API transfer's and one
 * escrow flow's time and CPU go, through a second copy of the API (built as src/api/server.ts builds
 * it, plus tracing) and an instrumented worker, both in the engine's process.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Client } from '@temporalio/client';
import { connectTemporal, temporalConnectionOptions } from '../../src/temporal/connection';
import { temporal as proto } from '@temporalio/proto';
import { type ActivityInterceptorsFactory, type WorkerOptions } from '@temporalio/worker';
import { createEngineWorker } from '../../src/worker/engine-worker';
import pg from 'pg';
import { createTransferActivities } from '../../src/activities/transfer';
import { createApp } from '../../src/api/app';
import { createLogger } from '../../src/observability/logger';
import { createWalletMemory } from '../../src/cache/wallet-memory';
import { createCredentialCache } from '../../src/cache/credential-cache';
import { createDatabasePool } from '../../src/db/pool';
import { keepRunning } from '../harness/engine';
import { createProviders } from '../../src/providers';
import { coresUsed, cpuSnapshot, threadMsPer, threadSnapshot, type CpuGroups } from './cpu';
import {
  progress,
  startBenchWorker,
  startWorker,
  transferAttributes,
  type Engine,
  type Fixture,
} from './engine';
import type { LoadProcess } from './generator';
import { closedLoop, openLoop, percentile, type LoadResult, type Send } from './load';
import { pickPair } from './senders';
import { renderVisibilityCost, visibilitySchemaCost, type VisibilityCost } from './visibility';
import { transferWithActivity, transferWithLocalActivity } from './workflows';

type Trace = {
  began: number;
  total: number;
  queries: { label: string; ms: number }[];
  temporalStart: number;
  temporalResult: number;
  workflowIds: string[];
};

const traces = new AsyncLocalStorage<Trace>();

const newTrace = (): Trace => ({
  began: performance.now(),
  total: 0,
  queries: [],
  temporalStart: 0,
  temporalResult: 0,
  workflowIds: [],
});

/** What a statement is, by its text: the benchmark's transfer path, then the first words. */
const LABELS: [RegExp, string][] = [
  [/^DISCARD ALL/, 'DISCARD ALL (slonik reset on release)'],
  [/^START TRANSACTION|^BEGIN/, 'BEGIN'],
  [/^COMMIT/, 'COMMIT'],
  [/FROM credentials c JOIN applications/, 'auth: credential + rate limits'],
  [/UPDATE credentials SET last_used/, 'auth: last_used update'],
  [/INSERT INTO rate_limit_counters/, 'rate-limit counter upsert'],
  // The ledger's statement also writes the event and the request's answer (src/db/money-steps.ts).
  [/INSERT INTO ledger_transactions/, 'insert ledger transaction'],
  [/INSERT INTO idempotency_keys/, 'idempotency claim'],
  [/UPDATE idempotency_keys/, 'idempotency complete'],
  [/FROM wallets w\b/, 'wallet lookup (ownedWallet)'],
  [/SELECT id, application_id, mode, is_active FROM wallets/, 'wallet state check'],
  [/FROM transactions WHERE id =/, 'find payment record'],
  [/FROM ledger_accounts[\s\S]*FOR (NO KEY )?UPDATE/, 'lock accounts (FOR NO KEY UPDATE)'],
  [/INSERT INTO transactions/, 'insert payment record'],
  [/INSERT INTO ledger_entries/, 'insert ledger entries'],
  [/INSERT INTO events/, 'insert event (outbox)'],
];

function labelOf(text: string): string {
  const trimmed = text.trim();
  for (const [pattern, label] of LABELS) if (pattern.test(trimmed)) return label;
  return trimmed.replace(/\s+/g, ' ').slice(0, 50);
}

let postgresTraced = false;

/**
 * Records every statement node-postgres sends inside a trace context (one per HTTP request or
 * activity execution): below slonik, whose interceptors do not see its BEGIN and COMMIT.
 */
function tracePostgres(): void {
  if (postgresTraced) return;
  postgresTraced = true;
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = prototype.query;
  prototype.query = function tracedQuery(this: unknown, ...args: unknown[]): unknown {
    const trace = traces.getStore();
    const began = performance.now();
    const result = original.apply(this, args);
    if (!trace || !(result instanceof Promise)) return result;
    const first = args[0];
    const text =
      typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? '');
    const record = () =>
      trace.queries.push({ label: labelOf(text), ms: performance.now() - began });
    return result.then(
      (value: unknown) => {
        record();
        return value;
      },
      (error: unknown) => {
        record();
        throw error;
      },
    );
  };
}

/** Times `start` and the handle's `result` of every workflow the API runs, per request. */
function traceTemporal(client: Client): void {
  const workflow = client.workflow;
  const start = workflow.start.bind(workflow);
  workflow.start = (async (...args: Parameters<typeof start>) => {
    const trace = traces.getStore();
    const began = performance.now();
    const handle = await start(...args);
    if (!trace) return handle;
    trace.temporalStart += performance.now() - began;
    trace.workflowIds.push(handle.workflowId);
    return timedResult(handle, trace);
  }) as typeof workflow.start;
  // The API waits for a payment's result on a handle of its own (src/api/workflow-starts.ts).
  const getHandle = workflow.getHandle.bind(workflow);
  workflow.getHandle = ((...args: Parameters<typeof getHandle>) => {
    const trace = traces.getStore();
    const handle = getHandle(...args);
    return trace ? timedResult(handle, trace) : handle;
  }) as typeof workflow.getHandle;
}

/** The handle, its `result()` wait added to the trace's time waiting for the result. */
function timedResult<H extends { result: () => Promise<unknown> }>(handle: H, trace: Trace): H {
  const result = handle.result.bind(handle);
  return Object.assign(handle, {
    result: async (): Promise<unknown> => {
      const waiting = performance.now();
      try {
        return await result();
      } finally {
        trace.temporalResult += performance.now() - waiting;
      }
    },
  });
}

const activityTracing =
  (done: Trace[]): ActivityInterceptorsFactory =>
  () => ({
    inbound: {
      execute: (input, next) => {
        const trace = newTrace();
        return traces.run(trace, async () => {
          try {
            return await next(input);
          } finally {
            trace.total = performance.now() - trace.began;
            done.push(trace);
          }
        });
      },
    },
  });

/** The instrumented copy of the API: src/api/server.ts's construction, with tracing around it. */
async function startTracedApi(
  engine: Engine,
  done: Trace[],
): Promise<{ url: string; close: () => Promise<void> }> {
  const { config } = engine;
  const pool = await createDatabasePool(engine.databaseUrl, {
    maximumPoolSize: config.database.poolSize,
    preparedStatements: config.database.preparedStatements,
  });
  const connection = await connectTemporal(temporalConnectionOptions(config));
  const { dataConverter } = engine;
  const temporal = new Client({ connection, namespace: config.temporal.namespace, dataConverter });
  traceTemporal(temporal);
  // As the engine's API runs: payments started eagerly on the in-process worker's connection,
  // credentials and active wallets kept in memory (src/api/server.ts).
  const eager = new Client({
    connection: engine.nativeConnection,
    namespace: config.temporal.namespace,
    dataConverter,
  });
  traceTemporal(eager);
  const credentials = createCredentialCache();
  const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const logger = createLogger('info', sink);
  const app = createApp({
    config,
    pool,
    temporal,
    eagerTemporal: () => eager,
    credentials,
    wallets: createWalletMemory(),
    logger,
    providers: createProviders({ config, pool }),
  });
  const handle = app.callback();
  const server = http.createServer((request, response) => {
    const trace = newTrace();
    response.on('finish', () => {
      trace.total = performance.now() - trace.began;
      done.push(trace);
    });
    traces.run(trace, () => void handle(request, response));
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await connection.close();
      await pool.end();
    },
  };
}

// ---------------------------------------------------------------------------------------------

const mean = (xs: readonly number[]) =>
  xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN;

type StatementStats = { label: string; perRequest: number; meanMs: number };

function statements(traces_: readonly Trace[]): StatementStats[] {
  const byLabel = new Map<string, number[]>();
  for (const t of traces_) {
    for (const q of t.queries) byLabel.set(q.label, [...(byLabel.get(q.label) ?? []), q.ms]);
  }
  return [...byLabel.entries()].map(([label, ms]) => ({
    label,
    perRequest: ms.length / traces_.length,
    meanMs: mean(ms),
  }));
}

type Side = {
  count: number;
  meanMs: number;
  p50Ms: number;
  roundTrips: number;
  dbMs: number;
  statements: StatementStats[];
};

function side(done: readonly Trace[]): Side {
  const totals = done.map((t) => t.total).sort((a, b) => a - b);
  return {
    count: done.length,
    meanMs: mean(totals),
    p50Ms: percentile(totals, 50),
    roundTrips: mean(done.map((t) => t.queries.length)),
    dbMs: mean(done.map((t) => t.queries.reduce((a, q) => a + q.ms, 0))),
    statements: statements(done),
  };
}

const eventName = (type: number | null | undefined) =>
  (proto.api.enums.v1.EventType[type ?? 0] ?? 'UNKNOWN')
    .replace(/^EVENT_TYPE_/, '')
    .toLowerCase()
    .replace(/_(\w)/g, (_, c: string) => c.toUpperCase());

/** Mean time between consecutive history events, by transition, over some workflows. */
async function timeline(
  engine: Engine,
  workflowIds: readonly string[],
): Promise<{ step: string; meanMs: number }[]> {
  const steps = new Map<string, number[]>();
  const order: string[] = [];
  for (const id of workflowIds) {
    const history = await engine.client.workflow.getHandle(id).fetchHistory();
    const events = history.events ?? [];
    const at = (i: number) => {
      const t = events[i]!.eventTime!;
      return Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6;
    };
    // Events named by type and occurrence: the second workflow task is `workflowTaskStarted#2`.
    const seen = new Map<string, number>();
    const names = events.map((e) => {
      const name = eventName(e.eventType);
      const n = (seen.get(name) ?? 0) + 1;
      seen.set(name, n);
      return n > 1 ? `${name}#${n}` : name;
    });
    for (let i = 1; i < events.length; i += 1) {
      const step = `${names[i - 1]} -> ${names[i]}`;
      if (!steps.has(step)) {
        steps.set(step, []);
        order.push(step);
      }
      steps.get(step)!.push(at(i) - at(i - 1));
    }
  }
  return order.map((step) => ({ step, meanMs: mean(steps.get(step)!) }));
}

// ---------------------------------------------------------------------------------------------
// What-ifs: proposals measured without changing the engine's source.

export type WhatIf = { name: string; load: string; result: LoadResult; cores: CpuGroups };

async function measured(name: string, load: string, run: () => Promise<LoadResult>) {
  progress(`profile what-if: ${name}`);
  const before = cpuSnapshot();
  const began = performance.now();
  const result = await run();
  const cores = coresUsed(before, cpuSnapshot(), (performance.now() - began) / 1000);
  return { name, load, result, cores };
}

async function whatIfs(
  engine: Engine,
  fixture: Fixture,
  tuning: Partial<WorkerOptions>,
): Promise<WhatIf[]> {
  const input = () => {
    const [from, to] = pickPair(fixture.wallets);
    return {
      transactionId: randomUUID(),
      applicationId: fixture.applicationId,
      mode: 'test' as const,
      fromWalletId: from,
      toWalletId: to,
      amount: '1',
      description: '',
    };
  };
  const closed = (concurrency: number, send: Send) =>
    closedLoop({ concurrency, durationS: 5, warmupS: 1, send });
  const results: WhatIf[] = [];

  const taskQueue = `bench-what-if-${randomUUID()}`;
  const worker = keepRunning(
    await createEngineWorker({
      connection: engine.nativeConnection,
      taskQueue,
      workflowBundle: { code: engine.benchBundle },
      activities: {
        noop: () => Promise.resolve(),
        ...createTransferActivities({ pool: engine.workerPool }),
      },
      maxConcurrentActivityTaskExecutions: engine.config.database.poolSize,
      ...tuning,
      dataConverter: engine.dataConverter,
    }),
  );
  try {
    for (const [name, workflow] of [
      [
        'transfer workflow, regular activity (before local activities), no SAs',
        transferWithActivity,
      ],
      ['transfer workflow, local activity (as today), no SAs', transferWithLocalActivity],
    ] as const) {
      results.push(
        await measured(name, 'closed, 32 in flight, client only', () =>
          closed(32, async () => {
            await engine.client.workflow.execute(workflow, {
              taskQueue,
              workflowId: `bench-transfer-${randomUUID()}`,
              args: [input()],
            });
          }),
        ),
      );
    }
  } finally {
    await worker.stop();
  }

  // The activity's database work alone, twice: the difference is the run's own variation.
  const transferFunds = createTransferActivities({ pool: engine.pool }).transferFunds;
  for (let round = 0; round < 2; round += 1) {
    results.push(
      await measured('transfer activity DB work alone', 'closed, 16 clients', () =>
        closed(16, async () => {
          await transferFunds(input());
        }),
      ),
    );
  }
  return results;
}

export type ProfileReport = {
  rate: number;
  load: LoadResult;
  /** CPU milliseconds per successful transfer, by process, net of the idle baseline. */
  cpuMsPerTransfer: CpuGroups;
  /** CPU milliseconds per transfer in the engine's process, by thread (cpu.ts threadSnapshot). */
  threadMsPerTransfer: { kind: string; ms: number }[];
  /** Postgres' own counters per transfer, every connection (the outbox relay's included). */
  postgresPerTransfer: PostgresCounters;
  /** Cores busy while idle, and while under the profile's load. */
  idleCores: CpuGroups;
  loadCores: CpuGroups;
  api: Side & { temporalStartMs: number; temporalResultMs: number; otherMs: number };
  activity: Side;
  workflowTimeline: { step: string; meanMs: number }[];
  whatIfs: WhatIf[];
  serverByShape: ServerCost[];
  visibility: VisibilityCost[];
  escrow: EscrowProfile;
  text: string;
};

/** Escrow hold-then-release flows through the same instrumented API and worker. */
type EscrowProfile = {
  rate: number;
  load: LoadResult;
  /** Per flow (two API requests, two ledger steps), API side and activity side. */
  apiRoundTrips: number;
  stepRoundTrips: number;
  postgres: PostgresCounters;
  cpuMs: CpuGroups;
};

export async function runProfile(
  engine: Engine,
  fixture: Fixture,
  options: {
    rate: number;
    durationS: number;
    tuning: Partial<WorkerOptions>;
    load: LoadProcess;
    signal?: AbortSignal;
  },
): Promise<ProfileReport> {
  tracePostgres();
  const requests: Trace[] = [];
  const activities: Trace[] = [];
  progress('profile: restarting the worker with activity tracing');
  await engine.stopWorker();
  engine.stopWorker = await startWorker(engine, {
    ...options.tuning,
    interceptors: { activity: [activityTracing(activities)] },
  });
  const api = await startTracedApi(engine, requests);
  let load: LoadResult;
  let cpu: CpuGroups;
  let idle: CpuGroups;
  let threadsBefore: Map<string, number>;
  let threadsAfter: Map<string, number>;
  let countersBefore: PostgresCounters;
  let countersAfter: PostgresCounters;
  let transferRequests: Trace[];
  let transferSteps: Trace[];
  let escrow: EscrowProfile;
  try {
    progress('profile: 3s idle, for the CPU baseline');
    const quiet = cpuSnapshot();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    idle = coresUsed(quiet, cpuSnapshot(), 3);
    progress(`profile: ${options.rate} transfers/s for ${options.durationS}s, traced`);
    countersBefore = await postgresCounters(engine);
    threadsBefore = threadSnapshot();
    const before = cpuSnapshot();
    const began = performance.now();
    load = await options.load.run(
      {
        sender: {
          kind: 'transfer',
          apiUrl: api.url,
          headers: fixture.headers,
          wallets: fixture.wallets,
        },
        shape: { kind: 'open', rate: options.rate, durationS: options.durationS },
      },
      options.signal,
    );
    cpu = coresUsed(before, cpuSnapshot(), (performance.now() - began) / 1000);
    threadsAfter = threadSnapshot();
    countersAfter = await postgresCounters(engine);
    transferRequests = requests.splice(0);
    transferSteps = activities.splice(0);
    escrow = await escrowFlows(engine, fixture, api.url, idle, options, () => ({
      requests: requests.splice(0),
      steps: activities.splice(0),
    }));
  } finally {
    await api.close();
  }
  const seconds = Math.max(load.elapsed, options.durationS);
  const cpuMsPerTransfer = cpuMsPer(cpu, idle, seconds, load.ok);
  const apiSide = side(transferRequests);
  const temporalStartMs = mean(transferRequests.map((t) => t.temporalStart));
  const temporalResultMs = mean(transferRequests.map((t) => t.temporalResult));
  const apiDbAwaited = mean(
    transferRequests.map((t) =>
      t.queries.filter((q) => !q.label.startsWith('DISCARD')).reduce((a, q) => a + q.ms, 0),
    ),
  );
  const report: Omit<ProfileReport, 'text'> = {
    rate: options.rate,
    load,
    cpuMsPerTransfer,
    threadMsPerTransfer: threadMsPer(threadsBefore, threadsAfter, load.ok),
    postgresPerTransfer: countersPer(countersBefore, countersAfter, load.ok),
    idleCores: idle,
    loadCores: cpu,
    api: {
      ...apiSide,
      temporalStartMs,
      temporalResultMs,
      otherMs: apiSide.meanMs - apiDbAwaited - temporalStartMs - temporalResultMs,
    },
    activity: side(transferSteps),
    workflowTimeline: await timeline(
      engine,
      transferRequests
        .flatMap((t) => t.workflowIds)
        .filter((_, i) => i % 5 === 0)
        .slice(0, 40),
    ),
    whatIfs: await whatIfs(engine, fixture, options.tuning),
    serverByShape: await serverByShape(engine, options.tuning),
    visibility: await visibilitySchemaCost(engine, options.signal),
    escrow,
  };
  return { ...report, text: render(report) };
}

/**
 * Escrow flows (a hold, then its release: tools/bench/senders.ts) at half the transfers' rate
 * through the instrumented API: round trips per flow on each side, Postgres' counters and the CPU
 * per flow. `taken` hands over (and clears) the traces recorded since the last call.
 */
async function escrowFlows(
  engine: Engine,
  fixture: Fixture,
  apiUrl: string,
  idle: CpuGroups,
  options: { rate: number; durationS: number; load: LoadProcess; signal?: AbortSignal },
  taken: () => { requests: Trace[]; steps: Trace[] },
): Promise<EscrowProfile> {
  const rate = Math.max(1, Math.round(options.rate / 2));
  progress(`profile: ${rate} escrow flows/s for ${options.durationS}s, traced`);
  const countersBefore = await postgresCounters(engine);
  taken();
  const before = cpuSnapshot();
  const began = performance.now();
  const load = await options.load.run(
    {
      sender: { kind: 'escrow', apiUrl, headers: fixture.headers, wallets: fixture.wallets },
      shape: { kind: 'open', rate, durationS: options.durationS },
    },
    options.signal,
  );
  const cpu = coresUsed(before, cpuSnapshot(), (performance.now() - began) / 1000);
  const { requests, steps } = taken();
  const countersAfter = await postgresCounters(engine);
  const flows = Math.max(1, load.ok);
  const trips = (traces_: readonly Trace[]) =>
    traces_.reduce((a, t) => a + t.queries.length, 0) / flows;
  return {
    rate,
    load,
    apiRoundTrips: trips(requests),
    stepRoundTrips: trips(steps),
    postgres: countersPer(countersBefore, countersAfter, flows),
    cpuMs: cpuMsPer(cpu, idle, Math.max(load.elapsed, options.durationS), flows),
  };
}

/**
 * CPU milliseconds per operation by process, from the cores busy over `seconds`, net of what
 * each process burns idle (pollers, timers, background work).
 */
function cpuMsPer(cpu: CpuGroups, idle: CpuGroups, seconds: number, operations: number) {
  const per = (k: keyof CpuGroups) =>
    (Math.max(0, cpu[k] - idle[k]) * seconds * 1000) / Math.max(1, operations);
  return {
    node: per('node'),
    load: per('load'),
    postgres: per('postgres'),
    temporal: per('temporal'),
    other: per('other'),
  } satisfies CpuGroups;
}

const f1 = (n: number) => (Number.isNaN(n) ? '-' : n.toFixed(1));

function render(r: Omit<ProfileReport, 'text'>): string {
  const lines: string[] = [];
  const row = (label: string, value: string, extra = '') =>
    lines.push(`  ${label.padEnd(44)} ${value.padStart(9)}  ${extra}`.trimEnd());
  const statementRows = (s: Side) => {
    for (const st of [...s.statements].sort(
      (a, b) => b.perRequest * b.meanMs - a.perRequest * a.meanMs,
    )) {
      row(`    ${st.label}`, `${f1(st.meanMs)} ms`, `x${st.perRequest.toFixed(2)} per transfer`);
    }
  };
  lines.push(
    `Profile of (3): ${r.load.ok} transfers at ${r.rate}/s (open model), instrumented API and worker`,
    `  client latency p50 ${f1(r.load.p50)} ms, p99 ${f1(r.load.p99)} ms, errors ${r.load.errors}`,
    '',
    '  API request (server side)                         mean',
  );
  row('total, HTTP in to response out', `${f1(r.api.meanMs)} ms`, `p50 ${f1(r.api.p50Ms)} ms`);
  row(
    'Postgres, awaited (auth, rate limit, idem., ...)',
    `${f1(r.api.dbMs)} ms`,
    `${r.api.roundTrips.toFixed(1)} round trips`,
  );
  statementRows(r.api);
  row('Temporal start (StartWorkflowExecution)', `${f1(r.api.temporalStartMs)} ms`);
  row('Temporal wait for the result', `${f1(r.api.temporalResultMs)} ms`);
  row('rest (Koa, zod, JSON, pino, pool waits)', `${f1(r.api.otherMs)} ms`);
  lines.push('', '  transferFunds activity (worker side)');
  row('total, activity execution', `${f1(r.activity.meanMs)} ms`, `p50 ${f1(r.activity.p50Ms)} ms`);
  row('Postgres', `${f1(r.activity.dbMs)} ms`, `${r.activity.roundTrips.toFixed(1)} round trips`);
  statementRows(r.activity);
  lines.push('', '  workflow history, mean gap between events (server clock)');
  for (const step of r.workflowTimeline) row(`    ${step.step}`, `${f1(step.meanMs)} ms`);
  const c = r.cpuMsPerTransfer;
  const cores = (g: CpuGroups) =>
    `node ${g.node.toFixed(2)}, load generator ${g.load.toFixed(2)}, Postgres ${g.postgres.toFixed(2)}, ` +
    `Temporal ${g.temporal.toFixed(2)}, other processes ${g.other.toFixed(2)}`;
  lines.push(
    '',
    `  CPU per transfer, net of idle: node ${f1(c.node)} ms (API + worker), ` +
      `load generator ${f1(c.load)} ms, Postgres ${f1(c.postgres)} ms, Temporal server ${f1(c.temporal)} ms`,
    `  cores busy idle: ${cores(r.idleCores)}`,
    `  cores busy under this load: ${cores(r.loadCores)}`,
    `  Postgres round trips per transfer: ${(r.api.roundTrips + r.activity.roundTrips).toFixed(1)} ` +
      `(API ${r.api.roundTrips.toFixed(1)}, activity ${r.activity.roundTrips.toFixed(1)})`,
    `  node's CPU per transfer by thread: ` +
      r.threadMsPerTransfer.map((t) => `${t.kind} ${t.ms.toFixed(2)} ms`).join(', '),
    `  Postgres' counters per transfer (every connection, the outbox relay's too): ` +
      `${r.postgresPerTransfer.commits.toFixed(2)} commits, ` +
      `${r.postgresPerTransfer.inserted.toFixed(2)} rows inserted, ` +
      `${r.postgresPerTransfer.updated.toFixed(2)} updated`,
    '',
    `  Temporal server CPU per workflow by the workflow's shape (eager start in the engine's ` +
      `process, open model at ${SHAPE_RATE}/s, ${SHAPE_S}s each, twice in turn)`,
  );
  for (const shape of r.serverByShape) {
    lines.push(
      `    ${shape.name.padEnd(62)} Temporal ${shape.temporalMs.map(f1).join(' / ').padStart(11)} ms` +
        `  node ${shape.nodeMs.map(f1).join(' / ')} ms`,
    );
  }
  const e = r.escrow;
  lines.push(
    '',
    `  Escrow hold + release: ${e.load.ok} flows at ${e.rate}/s (open model), the same API and worker`,
    `    Postgres round trips per flow: ${(e.apiRoundTrips + e.stepRoundTrips).toFixed(1)} ` +
      `(API ${e.apiRoundTrips.toFixed(1)} in 2 requests, ledger steps ${e.stepRoundTrips.toFixed(1)} in 2)`,
    `    Postgres' counters per flow: ${e.postgres.commits.toFixed(2)} commits, ` +
      `${e.postgres.inserted.toFixed(2)} rows inserted, ${e.postgres.updated.toFixed(2)} updated`,
    `    CPU per flow, net of idle: node ${f1(e.cpuMs.node)} ms, load generator ${f1(e.cpuMs.load)} ms, ` +
      `Postgres ${f1(e.cpuMs.postgres)} ms, Temporal server ${f1(e.cpuMs.temporal)} ms`,
  );
  lines.push('', ...renderVisibilityCost(r.visibility));
  lines.push('', "  What-ifs (closed loop, 5s each, load in the engine's process)");
  for (const w of r.whatIfs) {
    const g = w.cores;
    lines.push(
      `    ${w.name.padEnd(62)} ${`${w.result.throughput.toFixed(1)}/s`.padStart(8)}  ` +
        `p50 ${f1(w.result.p50).padStart(6)} ms  p99 ${f1(w.result.p99).padStart(6)} ms  ` +
        `errors ${w.result.errors}  cores ${g.node.toFixed(2)}/${g.postgres.toFixed(2)}/` +
        `${g.temporal.toFixed(2)} (node/pg/temporal)`,
    );
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Postgres' own counters, and what the Temporal server spends on a workflow by its shape.

type PostgresCounters = { commits: number; inserted: number; updated: number };

const NO_COUNTERS: PostgresCounters = { commits: 0, inserted: 0, updated: 0 };

/**
 * The database's transaction and row counters (pg_stat_database). A backend reports them when it
 * goes idle, at most once a second: the reads wait that long first.
 */
async function postgresCounters(engine: Engine): Promise<PostgresCounters> {
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const client = new pg.Client({ connectionString: engine.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ c: string; i: string; u: string }>(
      `SELECT xact_commit AS c, tup_inserted AS i, tup_updated AS u
       FROM pg_stat_database WHERE datname = current_database()`,
    );
    const row = rows[0];
    return row ? { commits: +row.c, inserted: +row.i, updated: +row.u } : NO_COUNTERS;
  } finally {
    await client.end();
  }
}

const countersPer = (
  before: PostgresCounters,
  after: PostgresCounters,
  operations: number,
): PostgresCounters => {
  const per = (k: keyof PostgresCounters) => (after[k] - before[k]) / Math.max(1, operations);
  return { commits: per('commits'), inserted: per('inserted'), updated: per('updated') };
};

type ServerCost = { name: string; temporalMs: number[]; nodeMs: number[] };

const SHAPE_RATE = 40;
const SHAPE_S = 6;

/**
 * The Temporal server's CPU per workflow, for workflows that add one by one what the transfer
 * workflow adds to an empty one; started eagerly at a fixed rate, each shape in turn, twice, so
 * that the differences show against the run's own variation.
 */
async function serverByShape(
  engine: Engine,
  tuning: Partial<WorkerOptions>,
): Promise<ServerCost[]> {
  const { taskQueue, worker } = await startBenchWorker(engine, tuning, 'shapes');
  const eager = new Client({
    connection: engine.nativeConnection,
    namespace: engine.config.temporal.namespace,
    dataConverter: engine.dataConverter,
  });
  const attributes = transferAttributes();
  const shapes = [
    ['empty', 'emptyWorkflow', false],
    ['empty, with the payment search attributes', 'emptyWorkflow', true],
    ['+ the PaymentStatus upsert', 'statusWorkflow', true],
    ['+ a patched marker', 'patchedStatusWorkflow', true],
    ['+ a local activity (the shape of the transfer workflow)', 'transferShapedWorkflow', true],
  ] as const;
  const costs = shapes.map(([name]): ServerCost => ({ name, temporalMs: [], nodeMs: [] }));
  try {
    for (let round = 0; round < 2; round += 1) {
      for (const [i, [name, workflowType, withAttributes]] of shapes.entries()) {
        progress(`profile: server CPU by shape, ${name}`);
        const send = async () => {
          await eager.workflow.start(workflowType, {
            taskQueue,
            workflowId: `bench-shape-${randomUUID()}`,
            requestEagerStart: true,
            ...(withAttributes ? { typedSearchAttributes: attributes } : {}),
          });
        };
        await openLoop({ rate: SHAPE_RATE, durationS: 1, send });
        const before = cpuSnapshot();
        const began = performance.now();
        const result = await openLoop({ rate: SHAPE_RATE, durationS: SHAPE_S, send });
        // The last workflows complete after their start answered.
        await new Promise((resolve) => setTimeout(resolve, 500));
        const seconds = (performance.now() - began) / 1000;
        const cores = coresUsed(before, cpuSnapshot(), seconds);
        const per = (c: number) => (c * seconds * 1000) / Math.max(1, result.ok);
        costs[i]!.temporalMs.push(per(cores.temporal));
        costs[i]!.nodeMs.push(per(cores.node));
      }
    }
  } finally {
    await worker.stop();
  }
  return costs;
}
