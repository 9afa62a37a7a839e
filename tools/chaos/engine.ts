import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/worker/ports';
import { commandLine, isAlive, readPidFile, waitFor } from '../harness/processes';
import { apiReady } from '../harness/split';

const root = path.resolve(__dirname, '..', '..');

/** The engine's own processes a run kills and starts again (the servers have supervisors). */
export type ProcessKind = 'node' | 'api' | 'worker';

/** One rolling restart: a new process started and ready, then the old one sent SIGTERM. */
export type Roll = {
  kind: 'api' | 'worker';
  /** The old process and its replacement (0 when the replacement did not start). */
  pid: number;
  newPid: number;
  /** Whether the replacement came up (else the old one was left running). */
  up: boolean;
  /** The old process's exit code after SIGTERM (null: a signal ended it, not itself). */
  exitCode: number | null;
  /** From the replacement's start to the old process's exit. */
  tookMs: number;
  /** From SIGTERM to the old process's exit (null when it was not sent one). */
  stopMs: number | null;
};

/**
 * The engine under a chaos run, on ports and a data folder of its own: `single`, a real `npm
 * start`; `split` (split.ts), two `npm run api` and two `npm run worker` beside the servers.
 * `close` stops everything it started, a killed process's leftovers included.
 */
export type ChaosEngine = {
  dir: string;
  /** The addresses the clients use, spread over them: each API's, or the load balancer's. */
  urls: string[];
  /** Requests each API answered, when a load balancer counts them. */
  answeredByApi?: () => Promise<number[]>;
  /**
   * Rolls the `index`th API or worker (modulo their count) as an orchestrator rolls a
   * deployment: a replacement first, then SIGTERM to the old one and a wait for its exit.
   */
  roll?: (kind: 'api' | 'worker', index: number) => Promise<Roll>;
  databaseUrl: string;
  /** The kinds of its own processes `restart` takes. */
  processKinds: readonly ProcessKind[];
  /** Starts everything and waits until it answers. */
  start: () => Promise<void>;
  /** The pids of the servers, Postgres and the dev server (their supervisors restart them). */
  serverPids: () => { postgres: number | null; temporal: number | null };
  /**
   * SIGKILL to one process of `kind` (the `pick(count)`th of them), then, as the operator (or an
   * orchestrator) would, starts it again: the pid killed, and whether the restart came up.
   */
  restart: (
    kind: ProcessKind,
    pick: (count: number) => number,
  ) => Promise<{ pid: number; restarted: Promise<boolean> }>;
  /** Whether it is whole: every API answers `/readyz` 200 (and every worker polls). */
  ready: () => Promise<boolean>;
  /** The pids of every engine process it started, for the check that none is left. */
  started: () => number[];
  /** Output of the current processes, for a failure message. */
  output: () => string;
  close: () => Promise<void>;
};

/**
 * A real `npm start` (tools/scripts/start.ts), in a process group of its own, that the run can
 * kill (`node`) and start again.
 */
export async function createChaosEngine(log: (line: string) => void): Promise<ChaosEngine> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-chaos-'));
  // As root, Postgres runs as the postgres user: it must be able to enter the folder.
  await chmod(dir, 0o755);
  const dataDir = path.join(dir, 'data');
  const pgPort = await freePort();
  const apiPort = await freePort();
  const { DATABASE_URL: _db, TEMPORAL_ADDRESS: _temporal, ...inherited } = process.env;
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(apiPort),
    EMBEDDED_PG_PORT: String(pgPort),
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    LOG_LEVEL: 'warn',
    // A request waits at most this long for its payment before a 504 (it is retried anyway).
    API_REQUEST_TIMEOUT_MS: '10000',
  };
  if (process.env.TEST_WORKFLOW_BUNDLE)
    env.TEMPORAL_WORKFLOW_BUNDLE = process.env.TEST_WORKFLOW_BUNDLE;
  const started: ChildProcess[] = [];
  let current: ChildProcess | null = null;
  let output = '';

  const pgPid = () => readPidFile(path.join(dataDir, 'pg', 'postmaster.pid'));
  const temporalPid = () => readPidFile(path.join(dataDir, 'temporal.pid'));
  const running = (child: ChildProcess | null) =>
    child !== null && child.exitCode === null && child.signalCode === null;

  async function start(): Promise<void> {
    output = '';
    const child = spawn(process.execPath, ['--import', 'tsx', 'tools/scripts/start.ts'], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    started.push(child);
    current = child;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const banner = /API {10}(http:\/\/\S+)/;
    const up = await waitFor(() => banner.test(output) || !running(child), 180_000);
    if (!up || !running(child)) throw new Error(`npm start did not come up:\n${output}`);
  }

  async function killNode(): Promise<void> {
    const child = current;
    if (!child || !running(child)) return;
    child.kill('SIGKILL');
    await waitFor(() => !running(child), 10_000);
  }

  /** Kills `pid` if it is still a process of this run's folder (a reused pid is not ours). */
  const killOurs = (pid: number | null) => {
    if (pid !== null && isAlive(pid) && commandLine(pid).includes(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone meanwhile */
      }
    }
  };

  async function close(): Promise<void> {
    for (const child of started) {
      if (running(child)) {
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          child.kill('SIGTERM');
        }
      }
    }
    await waitFor(() => started.every((child) => !running(child)), 12_000);
    for (const child of started) {
      if (running(child)) {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* gone meanwhile */
        }
      }
    }
    // A server left by a killed start (its group died with it, the server did not).
    const servers = [pgPid(), temporalPid()];
    if (servers.some((pid) => pid !== null && isAlive(pid))) {
      await waitFor(() => servers.every((pid) => pid === null || !isAlive(pid)), 8_000);
      servers.forEach(killOurs);
      await waitFor(() => servers.every((pid) => pid === null || !isAlive(pid)), 5_000);
    }
    const orphans = servers.filter((pid) => pid !== null && isAlive(pid));
    if (orphans.length) log(`warning: processes still alive after the run: ${orphans.join(', ')}`);
    await rm(dir, { recursive: true, force: true });
  }

  const url = `http://127.0.0.1:${apiPort}`;
  return {
    dir,
    urls: [url],
    databaseUrl: `postgres://postgres:postgres@127.0.0.1:${pgPort}/wallet`,
    processKinds: ['node'],
    start,
    serverPids: () => ({ postgres: pgPid(), temporal: temporalPid() }),
    restart: async () => {
      const pid = running(current) ? current!.pid! : 0;
      await killNode();
      // The operator's part: start it again (it stops what the killed one left running).
      return {
        pid,
        restarted: start().then(
          () => true,
          () => false,
        ),
      };
    },
    ready: () => apiReady(url),
    started: () => started.map((child) => child.pid!).filter(Boolean),
    output: () => output,
    close,
  };
}
