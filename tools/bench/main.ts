/**
 * `npm run bench`: what the engine sustains on this machine, against throwaway servers; its rows
 * and options are in docs/benchmarks.md. Progress goes to stderr: stdout holds only the result.
 */
import os from 'node:os';
import type { WorkerOptions } from '@temporalio/worker';
import { ledgerInvariantProblems } from '../../src/db/ledger-audit';
import { eagerStarts, paymentsStarted } from '../../src/observability/metrics';
import { installTemporalRuntime } from '../harness/temporal';
import {
  progress,
  setUp,
  SHAPES,
  startServers,
  startShape,
  WALLETS,
  type Engine,
  type Fixture,
  type Servers,
  type Shape,
} from './engine';
import { batchScenarios } from './batches';
import { forkLoadProcess } from './generator';
import { dropSearchIndexes, searchPayments, searchScenarios } from './search';
import { reconciliationScenarios } from './reconciliation';
import { runProfile, type ProfileReport } from './profile';
import { paymentCosts } from './cost';
import { render, sectionTitle, type ConfigurationReport, type Report } from './render';
import {
  addRatios,
  analyticsScenarios,
  backlogScenarios,
  cardScenarios,
  refundScenarios,
  escrowScenarios,
  hotWalletScenarios,
  interleavedScenarios,
  LEDGER_CLIENTS,
  ledgerScenarios,
  OPEN_S,
  orchestrationScenarios,
  RATE_FRACTIONS,
  transferScenarios,
  webhookScenario,
  type Bench,
  type Row,
} from './scenarios';

const SECTIONS = [
  'ledger',
  'orchestration',
  'api',
  'hotwallet',
  'escrow',
  'card',
  'webhooks',
  'analytics',
  'interleaved',
  'search',
  'backlog',
  'reconciliation',
  'batches',
] as const;
type Section = (typeof SECTIONS)[number];
/**
 * Row (8) seeds ten million payments, (3q) leaves ten thousand deliveries retrying for days, (9)
 * seeds a million payments and records: only when asked for by name.
 */
const DEFAULT_SECTIONS = SECTIONS.filter(
  (s) => s !== 'search' && s !== 'backlog' && s !== 'reconciliation',
);
/**
 * What a configuration after the first measures, and the open rows it keeps; the ledger rows
 * for the floor of its payments' cost (cost.ts), its Postgres being configured apart.
 */
const SHORT_SECTIONS: ReadonlySet<Section> = new Set([
  'ledger',
  'orchestration',
  'api',
  'hotwallet',
  'escrow',
]);
const SHORT_FRACTIONS = [0.5];

const CONFIGURATIONS = ['file', 'memory'] as const;
type Configuration = (typeof CONFIGURATIONS)[number];

type Options = {
  json: boolean;
  temporal: Configuration[];
  shapes: Shape[];
  durable: boolean;
  profile: boolean;
  tuning: Partial<WorkerOptions>;
  only: Set<Section>;
  searchPayments: number;
  withoutSearchIndexes: boolean;
};

function parseOptions(argv: readonly string[]): Options {
  const options: Options = {
    json: false,
    temporal: [...CONFIGURATIONS],
    shapes: [...SHAPES],
    durable: false,
    profile: false,
    tuning: {},
    only: new Set(DEFAULT_SECTIONS),
    searchPayments: searchPayments(undefined, process.env),
    withoutSearchIndexes: false,
  };
  const list = <T extends string>(value: string, known: readonly T[], what: string): T[] => {
    const wanted = value.split(',');
    for (const w of wanted) if (!known.includes(w as T)) throw new Error(`unknown ${what} ${w}`);
    return wanted as T[];
  };
  for (const arg of argv) {
    const [name, value] = arg.split(/=(.*)/s, 2) as [string, string | undefined];
    if (name === '--json') options.json = true;
    else if (name === '--durable') options.durable = true;
    else if (name === '--temporal-file') options.temporal = ['file'];
    else if (name === '--temporal' && value) {
      options.temporal = [...new Set(list(value, CONFIGURATIONS, 'configuration'))];
    } else if (name === '--shape' && value) {
      options.shapes = [...new Set(list(value, SHAPES, 'shape'))];
    } else if (name === '--profile') options.profile = true;
    else if (name === '--tuning' && value) {
      options.tuning = JSON.parse(value) as Partial<WorkerOptions>;
    } else if (name === '--only' && value) {
      options.only = new Set(list(value, SECTIONS, 'section'));
    } else if (name === '--search-payments' && value) {
      options.searchPayments = searchPayments(value, process.env);
    } else if (name === '--without-search-indexes') options.withoutSearchIndexes = true;
    else throw new Error(`unknown option ${arg}`);
  }
  if (options.profile && !options.shapes.includes('single')) {
    throw new Error('--profile instruments the in-process engine: it needs --shape=single');
  }
  if (Object.keys(options.tuning).length && options.shapes.includes('split')) {
    // `npm run worker` takes its configuration from the environment alone.
    throw new Error('--tuning reaches the in-process worker only: use it with --shape=single');
  }
  return options;
}

/** The sections measured in each shape; the others once, in the first or the last shape. */
const PER_SHAPE: ReadonlySet<Section> = new Set([
  'api',
  'batches',
  'hotwallet',
  'escrow',
  'interleaved',
  'card',
]);

/**
 * One configuration's rows on one shape (`full`, or the short list). The last shape checks the
 * ledger invariant before (7) seeds its million payments, which keep every balance by
 * construction and would only slow the check.
 */
async function measureRows(
  bench: Bench,
  options: Pick<Options, 'only' | 'searchPayments'>,
  at: { full: boolean; first: boolean; last: boolean },
): Promise<{ rows: Row[]; invariant: string[] }> {
  const { only } = options;
  const wanted = (section: Section) =>
    only.has(section) &&
    (at.full || SHORT_SECTIONS.has(section)) &&
    (PER_SHAPE.has(section) ||
      (['webhooks', 'analytics', 'search', 'backlog', 'reconciliation'].includes(section)
        ? at.last
        : at.first));
  const fractions = at.full ? RATE_FRACTIONS : SHORT_FRACTIONS;
  const rows: Row[] = [];
  const { shape } = bench.engine;
  const ofShape = (measured: Row[]) => measured.map((row) => ({ ...row, shape }));
  if (wanted('ledger')) rows.push(...(await ledgerScenarios(bench)));
  if (wanted('orchestration')) rows.push(...(await orchestrationScenarios(bench)));
  if (wanted('api')) rows.push(...ofShape(await transferScenarios(bench, fractions)));
  if (wanted('hotwallet')) rows.push(...ofShape(await hotWalletScenarios(bench)));
  if (wanted('escrow')) rows.push(...ofShape(await escrowScenarios(bench, fractions)));
  // Before (5) and (6): the webhook row's subscription stays, and every later payment's event
  // then starts deliveries to its closed endpoint, which would share the machine with the bursts.
  if (wanted('interleaved')) rows.push(...ofShape(await interleavedScenarios(bench)));
  if (wanted('batches')) {
    const transfers = rows.find((r) => r.id === '3' && r.shape === shape)?.result?.throughput;
    rows.push(...ofShape(await batchScenarios(bench, transfers)));
  }
  if (wanted('card')) {
    rows.push(...ofShape(await cardScenarios(bench, fractions)));
    rows.push(...ofShape(await refundScenarios(bench, fractions)));
  }
  if (wanted('webhooks')) rows.push(...ofShape([await webhookScenario(bench)]));
  if (!at.last) return { rows, invariant: [] };
  progress('checking the ledger invariant');
  const invariant = await ledgerInvariantProblems(bench.engine.pool);
  if (wanted('analytics')) {
    const [api, query] = await analyticsScenarios(bench);
    rows.push({ ...api!, shape }, query!);
  }
  if (wanted('search')) {
    const measured = await searchScenarios(bench, options.searchPayments);
    rows.push(
      ...measured.map((row) => (row.load.includes('in-process') ? row : { ...row, shape })),
    );
  }
  // After the invariant: the seeded payments have no ledger, which the matching never reads.
  if (wanted('reconciliation')) rows.push(...ofShape(await reconciliationScenarios(bench)));
  // Last: its deliveries go on retrying after it.
  if (wanted('backlog')) rows.push(...ofShape(await backlogScenarios(bench)));
  return { rows, invariant };
}

/**
 * How many of the payments the API started went eagerly to the engine's worker (all sections):
 * one that did not took the server's task queue and a poll (src/api/workflow-starts.ts `eagerStart`).
 */
async function eagerShare(): Promise<string> {
  const [started, eager] = await Promise.all([paymentsStarted.get(), eagerStarts.get()]);
  const parts = started.values.map(({ labels, value }) => {
    const took = eager.values.find((v) => v.labels.type === labels.type)?.value ?? 0;
    return `${String(labels.type)} ${took} of ${value}`;
  });
  return `Payments the single shape's API started eagerly on its worker: ${parts.join(', ') || 'none'}`;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  // Ctrl-C is handled below: Postgres and Temporal must stop with the workers.
  installTemporalRuntime('ERROR', { shutdownSignals: [] });
  /** Aborted by Ctrl-C: the load stops, then the engine and the load generator. */
  const interrupted = new AbortController();
  progress('starting the load generator process');
  const load = await forkLoadProcess();
  let engine: Engine | undefined;
  let servers: Servers | undefined;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress(`${signal}: stopping`);
      interrupted.abort();
      void (async () => {
        await engine?.close().catch(() => undefined);
        await Promise.allSettled([servers?.close(), load.close()]);
      })().finally(() => process.exit(130));
    });
  }
  const configurations: ConfigurationReport[] = [];
  let profile: ProfileReport | undefined;
  try {
    for (const [i, name] of options.temporal.entries()) {
      const durable = name === 'file' || options.durable;
      const configuration: ConfigurationReport = {
        name,
        postgres: durable ? 'fsync on' : 'fsync off, synchronous_commit off',
        temporal: name === 'file' ? 'on a file (WAL)' : 'in memory',
        shapes: options.shapes,
        rows: [],
        invariant: [],
      };
      progress(`== ${sectionTitle(configuration)}`);
      servers = await startServers({
        durable,
        temporalFile: name === 'file',
        ledgerClients: LEDGER_CLIENTS,
      });
      if (options.withoutSearchIndexes) {
        progress('dropping the list and search indexes (migrations 0017 and 0020)');
        await dropSearchIndexes(servers.pool);
      }
      try {
        let fixture: Fixture | undefined;
        // The shapes one after the other on the same servers, each in the order asked for.
        for (const [s, shape] of options.shapes.entries()) {
          progress(`-- ${shape} shape`);
          engine = await startShape(servers, shape, options.tuning);
          try {
            if (!fixture) {
              progress(`creating ${WALLETS} users and wallets through the API, funding them`);
              fixture = await setUp(engine);
            }
            const bench = {
              engine,
              fixture,
              load,
              tuning: options.tuning,
              signal: interrupted.signal,
            };
            const measured = await measureRows(bench, options, {
              full: i === 0,
              first: s === 0,
              last: s === options.shapes.length - 1,
            });
            configuration.rows.push(...measured.rows);
            configuration.invariant.push(...measured.invariant);
            if (i === 0 && options.profile && shape === 'single') {
              const estimate =
                configuration.rows.find((r) => r.id === '3' && r.shape === 'single')?.result
                  ?.throughput ?? 20;
              profile = await runProfile(engine, fixture, {
                rate: Math.max(1, Math.round(estimate / 2)),
                durationS: OPEN_S,
                tuning: options.tuning,
                load,
                signal: interrupted.signal,
              });
            }
          } finally {
            progress(`stopping the ${shape} shape`);
            await engine.close();
            engine = undefined;
          }
        }
        addRatios(configuration.rows);
        Object.assign(configuration, paymentCosts(configuration.rows, options.shapes));
        configurations.push(configuration);
      } finally {
        progress('stopping the servers');
        await servers.close();
        servers = undefined;
      }
    }
  } finally {
    await load.close();
  }
  const cpu = os.cpus();
  const report: Report = {
    environment: {
      cpus: cpu.length,
      cpuModel: cpu[0]?.model.trim() ?? 'unknown',
      node: process.version,
      tuning: options.tuning,
    },
    configurations,
    ...(profile ? { profile } : {}),
    seconds: process.uptime(),
  };
  if (configurations.some((c) => c.invariant.length)) process.exitCode = 1;
  if (options.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    process.stdout.write(`${render(report)}\n`);
    if (options.shapes.includes('single')) process.stdout.write(`${await eagerShare()}\n`);
    if (profile) process.stdout.write(`\n${profile.text}\n`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
