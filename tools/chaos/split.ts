import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { freePort } from '../../src/worker/ports';
import { commandLine, isAlive, readPidFile, waitFor } from '../harness/processes';
import {
  apiReady,
  startEngineProcess,
  waitUntilReady,
  workerPolling,
  type EngineProcess,
} from '../harness/split';
import { startBalancer, type Balancer } from './balancer';
import type { ChaosEngine, ProcessKind, Roll } from './engine';

const root = path.resolve(__dirname, '..', '..');
/** How many API and how many worker processes. */
const EACH = 2;
/** How long a process may take to be ready after a (re)start. */
const START_MS = 120_000;
/** How long a process sent SIGTERM may take to exit: its grace time (the default) and a margin. */
const STOP_MS = 35_000;

/**
 * The split shape under a chaos run, as production runs the engine: two `npm run api` behind
 * nginx (balancer.ts) and two `npm run worker` on the servers of servers.ts (a process group of
 * its own). The run starts a killed API or worker again, as an orchestrator would, and rolls them.
 */
export async function createSplitChaosEngine(log: (line: string) => void): Promise<ChaosEngine> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-chaos-split-'));
  // As root, Postgres runs as the postgres user: it must be able to enter the folder.
  await chmod(dir, 0o755);
  const dataDir = path.join(dir, 'data');
  const pgPort = await freePort();
  const temporalPort = await freePort();
  // Two ports an API: the running one's, and its replacement's during a roll.
  const apiPorts: [number, number][] = [];
  for (let i = 0; i < EACH; i++) apiPorts.push([await freePort(), await freePort()]);
  const sides = apiPorts.map(() => 0);
  const balancerPort = await freePort();
  const { DATABASE_URL: _db, TEMPORAL_ADDRESS: _temporal, ...inherited } = process.env;
  const shared: NodeJS.ProcessEnv = {
    ...inherited,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    EMBEDDED_PG_PORT: String(pgPort),
    TEMPORAL_PORT: String(temporalPort),
    TEMPORAL_UI_PORT: String(await freePort()),
    LOG_LEVEL: 'warn',
    // A request waits at most this long for its payment before a 504 (it is retried anyway).
    API_REQUEST_TIMEOUT_MS: '10000',
  };
  if (process.env.TEST_WORKFLOW_BUNDLE)
    shared.TEMPORAL_WORKFLOW_BUNDLE = process.env.TEST_WORKFLOW_BUNDLE;
  const databaseUrl = `postgres://postgres:postgres@127.0.0.1:${pgPort}/wallet`;
  const temporalAddress = `127.0.0.1:${temporalPort}`;
  const engineEnv = { ...shared, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporalAddress };
  const urlOf = (port: number) => `http://127.0.0.1:${port}`;
  const apiUrl = (i: number) => urlOf(apiPorts[i]![sides[i]!]!);
  const namespace = 'default';
  const taskQueue = 'payments';

  let servers: ChildProcess | null = null;
  let balancer: Balancer | null = null;
  let serversOutput = '';
  const apis: EngineProcess[] = [];
  const workers: EngineProcess[] = [];
  const pids: number[] = [];
  const running = (child: ChildProcess | null) =>
    child !== null && child.exitCode === null && child.signalCode === null;
  const pgPid = () => readPidFile(path.join(dataDir, 'pg', 'postmaster.pid'));
  const temporalPid = () => readPidFile(path.join(dataDir, 'temporal.pid'));

  // One connection for the workers' readiness, opened again after a failure (a dev server kill).
  let connection: Promise<Connection> | null = null;
  const polling = async (pid: number) => {
    connection ??= Connection.connect({ address: temporalAddress, connectTimeout: 2_000 });
    try {
      return await workerPolling(await connection, namespace, taskQueue, pid);
    } catch {
      const failed = connection;
      connection = null;
      void failed?.then((c) => c.close()).catch(() => undefined);
      return false;
    }
  };

  const launchApi = (i: number, side: number) => {
    const port = apiPorts[i]![side]!;
    const api = startEngineProcess(
      'api',
      { ...engineEnv, PORT: String(port) },
      { keepStdout: true },
    );
    pids.push(api.pid);
    return { process: api, ready: waitUntilReady(api, () => apiReady(urlOf(port)), START_MS) };
  };
  const launchWorker = () => {
    const worker = startEngineProcess('worker', engineEnv, { keepStdout: true });
    pids.push(worker.pid);
    return { process: worker, ready: waitUntilReady(worker, () => polling(worker.pid), START_MS) };
  };
  const startApi = (i: number) => {
    const { process: api, ready } = launchApi(i, sides[i]!);
    apis[i] = api;
    return ready;
  };
  const startWorker = (i: number) => {
    const { process: worker, ready } = launchWorker();
    workers[i] = worker;
    return ready;
  };

  async function roll(kind: 'api' | 'worker', index: number): Promise<Roll> {
    const list = kind === 'api' ? apis : workers;
    const i = index % list.length;
    const old = list[i]!;
    const began = Date.now();
    const side = 1 - sides[i]!;
    const next = kind === 'api' ? launchApi(i, side) : launchWorker();
    const up = await next.ready.then(
      () => true,
      () => false,
    );
    if (!up) {
      await next.process.kill();
      const tookMs = Date.now() - began;
      return { kind, pid: old.pid, newPid: 0, up, exitCode: null, tookMs, stopMs: null };
    }
    list[i] = next.process;
    if (kind === 'api') sides[i] = side;
    const stopping = Date.now();
    await old.stop(STOP_MS);
    const exitCode = await old.exited;
    return {
      kind,
      pid: old.pid,
      newPid: next.process.pid,
      up,
      exitCode,
      tookMs: Date.now() - began,
      stopMs: Date.now() - stopping,
    };
  }

  async function start(): Promise<void> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'tools/chaos/servers.ts'], {
      cwd: root,
      env: shared,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    servers = child;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (serversOutput += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (serversOutput += chunk));
    const up = await waitFor(
      () => serversOutput.includes('servers ready') || !running(child),
      180_000,
    );
    if (!up || !running(child)) throw new Error(`the servers did not come up:\n${serversOutput}`);
    const indexes = Array.from({ length: EACH }, (_, i) => i);
    await Promise.all(indexes.map(startWorker));
    await Promise.all(indexes.map(startApi));
    balancer = await startBalancer({
      dir: path.join(dir, 'nginx'),
      port: balancerPort,
      upstreams: apiPorts.flat(),
    });
  }

  async function restart(kind: ProcessKind, pick: (count: number) => number) {
    const list = kind === 'api' ? apis : workers;
    const i = pick(list.length);
    const killed = list[i]!;
    await killed.kill();
    const restarted = (kind === 'api' ? startApi(i) : startWorker(i)).then(
      () => true,
      () => false,
    );
    return { pid: killed.pid, restarted };
  }

  async function ready(): Promise<boolean> {
    const answers = await Promise.all([
      ...apis.map((_, i) => apiReady(apiUrl(i))),
      ...workers.map((worker) => worker.running() && polling(worker.pid)),
    ]);
    return (balancer?.running() ?? false) && answers.every(Boolean);
  }

  async function close(): Promise<void> {
    await balancer?.stop();
    await Promise.all([...apis, ...workers].map((child) => child.stop()));
    const group = servers;
    if (group && running(group)) {
      try {
        process.kill(-group.pid!, 'SIGTERM');
      } catch {
        group.kill('SIGTERM');
      }
      if (!(await waitFor(() => !running(group), 12_000))) {
        try {
          process.kill(-group.pid!, 'SIGKILL');
        } catch {
          /* gone meanwhile */
        }
      }
    }
    await connection?.then((c) => c.close()).catch(() => undefined);
    // A server left behind by its supervisor's death (a reused pid, not of this folder, is not).
    const left = [pgPid(), temporalPid()].filter(
      (pid): pid is number => pid !== null && isAlive(pid) && commandLine(pid).includes(dir),
    );
    if (left.length) await waitFor(() => left.every((pid) => !isAlive(pid)), 8_000);
    for (const pid of left.filter(isAlive)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone meanwhile */
      }
    }
    await waitFor(() => left.every((pid) => !isAlive(pid)), 5_000);
    const orphans = left.filter(isAlive);
    if (orphans.length) log(`warning: processes still alive after the run: ${orphans.join(', ')}`);
    await rm(dir, { recursive: true, force: true });
  }

  return {
    dir,
    urls: [urlOf(balancerPort)],
    answeredByApi: async () => {
      const counts = (await balancer?.answeredBy()) ?? new Map<number, number>();
      return apiPorts.map(([a, b]) => (counts.get(a) ?? 0) + (counts.get(b) ?? 0));
    },
    roll,
    databaseUrl,
    processKinds: ['api', 'worker'],
    start,
    serverPids: () => ({ postgres: pgPid(), temporal: temporalPid() }),
    restart,
    ready,
    started: () => [
      ...pids,
      ...(servers?.pid ? [servers.pid] : []),
      ...(balancer ? [balancer.pid] : []),
    ],
    output: () =>
      [
        serversOutput.slice(-2_000),
        ...[...apis, ...workers].map((child) => `${child.role} ${child.pid}: ${child.output()}`),
      ].join('\n'),
    close,
  };
}
