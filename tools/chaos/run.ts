import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { createDatabasePool } from '../../src/db/pool';
import { isAlive } from '../harness/processes';
import { settleBatches } from './batches';
import { checkBank } from './checks';
import { currencyProbe, type CliRun, type CurrencyProbe } from './currency';
import { createChaosEngine, type ChaosEngine, type ProcessKind, type Roll } from './engine';
import { chaosClient, createMeter, type ChaosClient } from './http';
import { seeded, type Random } from './random';
import { createSplitChaosEngine } from './split';
import { Wire } from './wire';
import { newHistory, runOperation, setUpWallets, type History } from './workload';
import { checkReconLane, runReconLane, setUpReconLane } from './reconciliation';

/** The faults of each shape: the servers, and the engine's own processes. */
export const FAULTS = ['temporal', 'postgres', 'node'] as const;
export const SPLIT_FAULTS = ['temporal', 'postgres', 'api', 'worker'] as const;
export type Fault = (typeof FAULTS)[number] | (typeof SPLIT_FAULTS)[number];
export const SHAPES = ['single', 'split'] as const;
export type Shape = (typeof SHAPES)[number];
export const faultsOf = (shape: Shape): readonly Fault[] =>
  shape === 'split' ? SPLIT_FAULTS : FAULTS;

export type ChaosOptions = {
  /** `single`: `npm start`; `split`: two `npm run api` and two `npm run worker` (default single). */
  shape?: Shape;
  durationMs: number;
  clients: number;
  seed: number;
  faults: readonly Fault[];
  /** Wallets (at least 2); the first quarter are onboarded for card payouts. */
  wallets: number;
  /**
   * Split shape: every this many ms (the first a second into the load), one API or one worker,
   * in turn, is rolled (replaced, then sent SIGTERM); 0 or absent: none.
   */
  rollEveryMs?: number;
  log: (line: string) => void;
};

export type FaultRecord = { kind: Fault; atMs: number; pid: number; recoveryMs: number | null };

export type RollRecord = Roll & { atMs: number };

export type ChaosReport = {
  seed: number;
  shape: Shape;
  /** The run's temporary folder (removed): the servers it started named it. */
  dir: string;
  /** The pids of the engine's processes it started (all gone when it returns). */
  processes: number[];
  /** Requests sent through each API (the clients are spread over them). */
  requestsByApi: number[];
  history: History;
  faults: FaultRecord[];
  /** The rolling restarts, in order. */
  rolls: RollRecord[];
  /** Attempts that failed, by kind (see `createMeter`), and when each did (ms into the load). */
  failures: Record<string, number>;
  failedAtMs: number[];
  /** Retried answers that are fine (a 503 with Retry-After, the API's own 504), by kind. */
  retriedFor: Record<string, number>;
  /** The longest time during the load without a definitive answer to any client. */
  longestPauseMs: number;
  /** When, in ms into the load, it ended. */
  longestPauseEndedAtMs: number;
  violations: string[];
  notes: string[];
  requests: number;
  retries: number;
};

/** How long a component may take to come back before the run counts it as not recovered. */
const RECOVERY_LIMIT_MS = 120_000;
/** The pause between two rounds of the currency probe (tools/chaos/currency.ts). */
const CURRENCY_ROUND_GAP_MS = 5_000;
/** The quiet time between two faults (drawn from this range, in ms). */
const FAULT_GAP_MS = [8_000, 16_000] as const;

const root = path.resolve(__dirname, '..', '..');
const run = promisify(execFile);

/** `npm run cli` against the run's database, whatever its exit status. */
async function runCli(databaseUrl: string, args: string[]): Promise<CliRun> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', 'tools/cli/main.ts', ...args],
      {
        cwd: root,
        env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
        timeout: 60_000,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** `npm run cli` against the run's database; its JSON answer. */
async function cli(databaseUrl: string, args: string[]): Promise<Record<string, unknown>> {
  const answer = await runCli(databaseUrl, args);
  if (answer.code !== 0) throw new Error(`cli ${args.join(' ')}: ${answer.stderr}`);
  return JSON.parse(answer.stdout) as Record<string, unknown>;
}

/** A Test Mode application made with the CLI: fees on, rate limits out of reach. */
async function createApplication(engine: ChaosEngine, runId: string, currency: 'SLE' | 'USD') {
  const created = (await cli(engine.databaseUrl, [
    'apps',
    'create',
    '--name',
    `chaos ${runId} ${currency}`,
    '--currency',
    currency,
    '--escrow-fee-bps',
    '100',
  ])) as {
    application: { id: string };
    credentials: { test: { api_key: string; secret_key: string } };
  };
  const id = created.application.id;
  const limits = [
    'default',
    'transfers',
    'mobile_money_deposits',
    'mobile_money_cashouts',
    'card_payouts',
    'card_deposits',
    'refunds',
    'reconciliation',
    'batches',
  ];
  await cli(engine.databaseUrl, [
    'apps',
    'update',
    '--app',
    id,
    ...['mobile_money=150', 'mobile_money_cashout=200', 'card_payout=100'].flatMap((f) => [
      '--fee',
      f,
    ]),
    ...limits.flatMap((category) => ['--rate-limit', `${category}=1000000`]),
  ]);
  const { api_key: apiKey, secret_key: secretKey } = created.credentials.test;
  return { id, credentials: { apiKey, secretKey } };
}

/** Polls until the engine is ready again; the time it took, or null past the limit. */
async function recovery(
  engine: ChaosEngine,
  since: number,
  replaced: () => boolean,
): Promise<number | null> {
  const deadline = since + RECOVERY_LIMIT_MS;
  while (Date.now() < deadline) {
    if (replaced() && (await engine.ready())) return Date.now() - since;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return null;
}

const isProcess = (kind: Fault): kind is ProcessKind =>
  kind === 'node' || kind === 'api' || kind === 'worker';

/** Kills one component with SIGKILL and waits for the engine to be whole again. */
async function inject(
  engine: ChaosEngine,
  kind: Fault,
  startedAt: number,
  random: Random,
): Promise<FaultRecord> {
  const at = Date.now();
  if (isProcess(kind)) {
    const { pid, restarted } = await engine.restart(kind, (count) => random.int(0, count - 1));
    let up = false;
    void restarted.then((ok) => (up = ok));
    const recoveryMs = await recovery(engine, at, () => up);
    return { kind, atMs: at - startedAt, pid, recoveryMs };
  }
  const pid = engine.serverPids()[kind] ?? 0;
  if (pid > 0 && isAlive(pid)) process.kill(pid, 'SIGKILL');
  const current = () => engine.serverPids()[kind];
  const recoveryMs = await recovery(engine, at, () => {
    const now = current();
    return now !== null && now !== pid && isAlive(now);
  });
  return { kind, atMs: at - startedAt, pid, recoveryMs };
}

/**
 * The bank test (docs/testing.md "Chaos test"): clients moving money through every kind of payment
 * while the servers and the engine's processes are SIGKILLed at random, then the checks
 * (checks.ts). Everything it started is stopped before it returns.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { log } = options;
  const shape = options.shape ?? 'single';
  const unknown = options.faults.filter((f) => !faultsOf(shape).includes(f));
  if (unknown.length) throw new Error(`faults ${unknown.join(', ')} are not of the ${shape} shape`);
  const runId = `chaos-${options.seed}-${Date.now().toString(36)}`;
  const engine =
    shape === 'split' ? await createSplitChaosEngine(log) : await createChaosEngine(log);
  const history = newHistory();
  const faults: FaultRecord[] = [];
  const notes: string[] = [];
  let violations: string[] = [];
  let clients: ChaosClient[] = [];
  const meter = createMeter();
  const rolls: RollRecord[] = [];
  let requestsByApi: number[] | null = null;
  let loadStartedAt = Date.now();
  let probe: CurrencyProbe | null = null;
  // Stopped from the outside (Ctrl-C): nothing it started may be left running.
  const onSignal = () => void engine.close().finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    log(
      shape === 'split'
        ? `starting the servers, two npm run api behind nginx and two npm run worker in ${engine.dir}`
        : `starting npm start in ${engine.dir}`,
    );
    await engine.start();
    const app = await createApplication(engine, runId, 'SLE');
    // One client per API; the first also sets up and checks.
    clients = engine.urls.map((url) => chaosClient(url, app.credentials, meter));
    const api = clients[0]!;
    const wallets = await setUpWallets({
      api,
      history,
      count: Math.max(2, options.wallets),
      payable: Math.max(1, Math.floor(options.wallets / 4)),
      runId,
    });
    log(
      `application ${app.id}: ${wallets.all.length} wallets (${wallets.payable.length} onboarded for card payouts), each funded by a deposit`,
    );

    const usdApp = await createApplication(engine, runId, 'USD');
    const usdApi = chaosClient(engine.urls[0]!, usdApp.credentials, meter);
    const [usdWallet] = (
      await setUpWallets({
        api: usdApi,
        history: newHistory(),
        count: 1,
        payable: 0,
        runId: `${runId}-usd`,
        fund: false,
      })
    ).all;
    probe = currencyProbe({
      bank: { id: app.id, api, wallets, history },
      usd: { id: usdApp.id, api: usdApi, wallet: usdWallet! },
      cli: (args) => runCli(engine.databaseUrl, args),
    });

    // Provider reconciliation runs through the faults, on an application of its own.
    const reconApp = await createApplication(engine, `${runId}-recon`, 'SLE');
    const reconApi = chaosClient(engine.urls[0]!, reconApp.credentials, meter);
    const setUpPool = await createDatabasePool(engine.databaseUrl, { maximumPoolSize: 1 });
    const recon = await setUpReconLane({
      api: reconApi,
      pool: setUpPool,
      applicationId: reconApp.id,
      runId: `${runId}-recon`,
    }).finally(() => setUpPool.end());

    // Operators resolve cashouts while the provider pays them: one admin per client, whose
    // admin rate limit is its own; one more adjusts the reconciliation's exceptions.
    const admins: ChaosClient[] = [];
    for (let i = 0; i <= options.clients; i++) {
      const made = (await cli(engine.databaseUrl, [
        'admins',
        'create',
        '--name',
        `${runId}-${i}`,
      ])) as {
        api_key: string;
        secret_key: string;
      };
      const url = engine.urls[i % engine.urls.length]!;
      admins.push(chaosClient(url, { apiKey: made.api_key, secretKey: made.secret_key }, meter));
    }

    const startedAt = Date.now();
    loadStartedAt = startedAt;
    meter.start();
    const endAt = startedAt + options.durationMs;
    // A roll and a fault never overlap: each is measured on an engine otherwise whole.
    let turn: Promise<unknown> = Promise.resolve();
    const exclusive = <T>(step: () => Promise<T>): Promise<T> => {
      const done = turn.then(step);
      turn = done.catch(() => undefined);
      return done;
    };
    let operations = 0;
    const client = async (index: number) => {
      const random = seeded(options.seed * 1_000 + index);
      const through = clients[index % clients.length]!;
      for (let n = 0; Date.now() < endAt && n < 100_000; n++) {
        await runOperation({
          api: through,
          admin: admins[index],
          random,
          wallets,
          history,
          key: `${runId}-c${index}-${n}`,
        });
        operations += 1;
      }
    };
    const currencyRounds = async () => {
      const random = seeded(options.seed * 1_000 + 998);
      for (let n = 0; Date.now() < endAt; n++) {
        await probe!.round(random, `${runId}-currency-${n}`);
        await new Promise((resolve) => setTimeout(resolve, CURRENCY_ROUND_GAP_MS));
      }
    };
    const nemesis = async () => {
      if (!options.faults.length) return;
      const random = seeded(options.seed * 1_000 + 999);
      // Every kind once in a shuffled order, then at random: a short run still kills each.
      const plan = [...options.faults].sort(() => random.next() - 0.5);
      for (let i = 0; i < 1_000; i++) {
        await new Promise((resolve) => setTimeout(resolve, random.int(...FAULT_GAP_MS)));
        if (Date.now() > endAt - 3_000 && i >= options.faults.length) return;
        // Supervision gives up on a server that fails 6 times within 2 minutes (docs/operations.md): the
        // test kills a server at most 4 times in that window, so that a give-up is a finding.
        const recent = (k: Fault) =>
          faults.filter((f) => f.kind === k && startedAt + f.atMs > Date.now() - 120_000).length;
        const allowed = options.faults.filter((k) => isProcess(k) || recent(k) < 4);
        if (!plan[i] && !allowed.length) continue;
        const kind = plan[i] ?? random.pick(allowed);
        const record = await exclusive(() => {
          log(`fault: kill -9 ${kind}`);
          return inject(engine, kind, startedAt, random);
        });
        faults.push(record);
        log(
          `  ${kind} (pid ${record.pid}) ${record.recoveryMs === null ? 'did NOT recover' : `recovered in ${record.recoveryMs} ms`}`,
        );
        if (record.recoveryMs === null) return;
      }
    };
    const roller = async () => {
      const every = options.rollEveryMs ?? 0;
      if (!every || !engine.roll) return;
      const roll = engine.roll;
      for (let n = 0; ; n++) {
        const at = startedAt + 1_000 + n * every;
        if (at > endAt - 3_000) return;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
        // API 0, worker 0, API 1, worker 1, and again.
        const kind = n % 2 === 0 ? 'api' : 'worker';
        const record = await exclusive(async () => {
          log(`roll: ${kind} ${Math.floor(n / 2)}, a new one first, then SIGTERM to the old`);
          const began = Date.now();
          return { ...(await roll(kind, Math.floor(n / 2))), atMs: began - startedAt };
        });
        rolls.push(record);
        log(
          `  ${kind} ${record.pid} -> ${record.newPid}: ${record.up ? `exit ${record.exitCode} after ${record.tookMs} ms (${record.stopMs} ms after SIGTERM)` : 'the new one did NOT come up'}`,
        );
      }
    };
    const progress = setInterval(
      () => log(`  ${operations} operations, ${sum(clients, 'retries')} retries`),
      15_000,
    );
    try {
      await Promise.all([
        nemesis(),
        roller(),
        currencyRounds(),
        runReconLane({
          lane: recon,
          api: reconApi,
          admin: admins[options.clients]!,
          endAt,
          runId: `${runId}-recon`,
        }),
        ...Array.from({ length: options.clients }, (_, i) => client(i)),
      ]);
    } finally {
      clearInterval(progress);
    }
    meter.answered();
    log(`load stopped after ${Date.now() - startedAt} ms: ${operations} operations`);

    // Quiet: every component up, and pending money out given a moment to settle.
    if ((await recovery(engine, Date.now(), () => true)) === null) {
      violations.push('the engine was not ready after the load');
    }
    const pool = await createDatabasePool(engine.databaseUrl, { maximumPoolSize: 2 });
    try {
      await settleBatches(api, pool, history);
      await settle(api, history);
      const indefinite = Object.values(history.tally).reduce((sum, t) => sum + t.indefinite, 0);
      violations = [
        ...violations,
        ...(await checkBank({ pool, api, history, applicationId: app.id, indefinite, notes })),
        ...(await probe.check(pool)),
        ...(await checkReconLane({ pool, api: reconApi, lane: recon, notes })),
      ];
    } finally {
      await pool.end();
    }
    for (const fault of faults) {
      if (fault.recoveryMs === null)
        violations.push(`${fault.kind} killed at ${fault.atMs} ms did not recover`);
    }
    violations.push(...rollViolations(rolls));
    // Kills drop requests by design; without them, not one request may fail.
    const failed = meter.failedAt.length;
    if (!options.faults.length && failed) {
      violations.push(`${failed} attempts failed without a fault (see failures)`);
    }
    requestsByApi = (await engine.answeredByApi?.()) ?? null;
  } catch (error) {
    violations.push(`the run failed: ${error instanceof Error ? error.message : String(error)}`);
    notes.push(engine.output().slice(-4_000));
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await engine.close();
  }
  return {
    seed: options.seed,
    shape,
    dir: engine.dir,
    processes: engine.started(),
    requestsByApi: requestsByApi ?? clients.map((client) => client.stats.requests),
    history,
    faults,
    rolls,
    failures: Object.fromEntries(meter.failures),
    failedAtMs: meter.failedAt.map((f) => f.at - loadStartedAt),
    retriedFor: Object.fromEntries(meter.retried),
    longestPauseMs: meter.longestPauseMs,
    longestPauseEndedAtMs: meter.longestPauseEnded - loadStartedAt,
    violations,
    notes,
    requests: sum(clients, 'requests'),
    retries: sum(clients, 'retries'),
  };
}

/** A replacement that did not come up, or an old process that did not exit 0 on SIGTERM. */
function rollViolations(rolls: RollRecord[]): string[] {
  return rolls.flatMap((r) => {
    if (!r.up) return [`the ${r.kind} rolled at ${r.atMs} ms: its replacement did not come up`];
    if (r.exitCode !== 0) {
      return [`the ${r.kind} ${r.pid} rolled at ${r.atMs} ms exited ${r.exitCode} on SIGTERM`];
    }
    return [];
  });
}

const sum = (clients: ChaosClient[], stat: 'requests' | 'retries') =>
  clients.reduce((total, client) => total + client.stats[stat], 0);

/** Waits (bounded) for the acknowledged money out still pending to end. */
async function settle(api: ChaosClient, history: History): Promise<void> {
  const deadline = Date.now() + 30_000;
  let pending = [...history.moneyOut.keys()];
  while (pending.length && Date.now() < deadline) {
    const still: string[] = [];
    for (const id of pending) {
      const outcome = await api.get(`/api/v1/transactions/${id}`);
      if (outcome.kind === 'ok' && Wire.transaction.parse(outcome.body).status === 'pending') {
        still.push(id);
      }
    }
    pending = still;
    if (pending.length) await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}
