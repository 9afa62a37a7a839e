/**
 * The engine under test on throwaway servers (harness/), in this process or as `npm run api` and
 * `npm run worker` (split.ts), and its fixture: an application, its credential, funded wallets.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Client } from '@temporalio/client';
import { NativeConnection, type WorkerOptions } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import { createEngineWorker } from '../../src/worker/engine-worker';
import { payloadKeys, temporalDataConverter } from '../../src/temporal/data-converter';
import { sdkConnectionOptions, temporalConnectionOptions } from '../../src/temporal/connection';
import { paymentSearchAttributes } from '../../src/api/workflow-starts';
import { formatPayloadKeys, loadConfig, type Config } from '../../src/config';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool';
import {
  keepRunning,
  runWorker,
  scratchEnv,
  startEngine as startInProcess,
} from '../harness/engine';
import { createFixtureApplication, fundWallet } from '../harness/fixtures';
import type { EmbeddedDatabase } from '../harness/postgres';
import { startScratchServers } from '../harness/scratch';
import { writeWorkflowBundle, type DevServer } from '../harness/temporal';
import { bundleWorkflows } from '../../src/worker/bundle';
import { createLogger } from '../../src/observability/logger';
import { failure, httpClient, idOf } from './senders';
import { startSplit } from './split';

export const WALLETS = 64;
/** Every funded wallet gets this much (minor units); each benchmark movement moves 0.01. */
const FUNDING = 10n ** 12n;
const DATABASE = 'bench';
/** The API's request deadline here: a transfer slower than this is an error (504). */
const REQUEST_TIMEOUT_MS = 10_000;

const began = performance.now();

/** A progress line on stderr (stdout holds only the result). */
export function progress(message: string): void {
  const s = ((performance.now() - began) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[bench ${s}s] ${message}\n`);
}

export type Engine = {
  dir: string;
  postgres: EmbeddedDatabase;
  temporal: DevServer;
  databaseUrl: string;
  config: Config;
  /** For setup, funding and the ledger benchmark; the API and the worker have their own. */
  pool: DatabasePool;
  workerPool: DatabasePool;
  nativeConnection: NativeConnection;
  /** The engine's data converter, for the benchmark's own workers and clients. */
  dataConverter: DataConverter;
  /** Its keys as TEMPORAL_PAYLOAD_KEYS writes them, for the load processes' clients. */
  payloadKeys: string;
  client: Client;
  benchBundle: string;
  apiUrl: string;
  /** The process the API runs in (this one in the single shape). */
  apiPid: number;
  /** The process the payments worker runs in (this one in the single shape). */
  workerPid: number;
  /** The process the maintenance worker runs in (this one in the single shape). */
  maintenanceWorkerPid: number;
  /** Stops the engine's worker (the profile replaces it with an instrumented one). */
  stopWorker: () => Promise<void>;
  close: () => Promise<void>;
  /** How the API and the worker run: in this process, or as processes of their own. */
  shape: Shape;
};

export const SHAPES = ['single', 'split'] as const;
export type Shape = (typeof SHAPES)[number];

/**
 * A worker for the benchmark's trivial workflows (tools/bench/workflows.ts) with the no-op
 * activity, on a task queue of its own; stop it with `worker.stop()`.
 */
export async function startBenchWorker(
  engine: Engine,
  tuning: Partial<WorkerOptions>,
  name: string,
) {
  const taskQueue = `bench-${name}-${randomUUID()}`;
  const worker = keepRunning(
    await createEngineWorker({
      connection: engine.nativeConnection,
      taskQueue,
      workflowBundle: { code: engine.benchBundle },
      activities: { noop: () => Promise.resolve() },
      ...tuning,
      dataConverter: engine.dataConverter,
    }),
  );
  return { taskQueue, worker };
}

export async function startWorker(
  engine: Pick<Engine, 'config' | 'workerPool' | 'nativeConnection'>,
  tuning: Partial<WorkerOptions>,
): Promise<() => Promise<void>> {
  const worker = await runWorker({
    config: engine.config,
    pool: engine.workerPool,
    connection: engine.nativeConnection,
    tuning,
  });
  return worker.stop;
}

/** The servers of one configuration, which its shapes are measured on one after the other. */
export type Servers = Omit<
  Engine,
  'shape' | 'client' | 'apiUrl' | 'apiPid' | 'workerPid' | 'maintenanceWorkerPid' | 'stopWorker'
> & {
  /** The engine's environment, as the split shape's processes are given it. */
  env: Record<string, string>;
};

export async function startServers(options: {
  durable: boolean;
  temporalFile: boolean;
  ledgerClients: number;
}): Promise<Servers> {
  const servers = await startScratchServers({
    prefix: 'wallet-bench-',
    database: DATABASE,
    fast: !options.durable,
    temporalOnFile: options.temporalFile,
    onStart: ({ dir, postgresPort, temporalPort }) =>
      progress(`starting Postgres on ${postgresPort} and Temporal on ${temporalPort} (${dir})`),
  });
  const cleanups: (() => Promise<unknown>)[] = [servers.stop];
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      for (const cleanup of [...cleanups].reverse()) await cleanup().catch(() => undefined);
    })());
  try {
    const { dir, postgres, temporal, databaseUrl } = servers;
    progress('bundling workflows');
    const [bundlePath, benchBundle] = await Promise.all([
      writeWorkflowBundle(dir),
      bundleWorkflows(require.resolve('./workflows')),
    ]);
    const env = scratchEnv({
      databaseUrl,
      temporalAddress: temporal.address,
      taskQueuePrefix: 'bench-payments',
      workflowBundle: bundlePath,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      // Row (6) delivers webhooks to an endpoint on loopback; the keys stay in the run's folder.
      env: {
        DATA_DIR: dir,
        WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32',
        WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
      },
    });
    const config = loadConfig(env);
    const pool = await createDatabasePool(databaseUrl, {
      maximumPoolSize: options.ledgerClients,
      preparedStatements: config.database.preparedStatements,
    });
    cleanups.push(() => pool.end());
    const workerPool = await createDatabasePool(databaseUrl, {
      maximumPoolSize: config.database.poolSize,
      preparedStatements: config.database.preparedStatements,
    });
    cleanups.push(() => workerPool.end());
    const nativeConnection = await NativeConnection.connect(
      sdkConnectionOptions(temporalConnectionOptions(config)),
    );
    cleanups.push(() => nativeConnection.close());
    return {
      dir,
      postgres,
      temporal,
      databaseUrl,
      config,
      env,
      pool,
      workerPool,
      nativeConnection,
      dataConverter: temporalDataConverter(config),
      payloadKeys: formatPayloadKeys(payloadKeys(config)),
      benchBundle,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The engine in one shape on `servers`: `single`, the worker and the API in this process as
 * `npm start` runs them; `split`, `npm run api` and `npm run worker` as processes of their own.
 * Its `close` stops the shape and leaves the servers running.
 */
export async function startShape(
  servers: Servers,
  shape: Shape,
  tuning: Partial<WorkerOptions>,
): Promise<Engine> {
  if (shape === 'split') {
    progress('starting `npm run api` and `npm run worker` as processes of their own');
    const split = await startSplit(servers);
    return { ...servers, shape, ...split };
  }
  progress('starting the worker and the API in this process');
  // Access-log lines are written (their cost is real) but thrown away.
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  const inProcess = await startInProcess({
    config: servers.config,
    pool: servers.workerPool,
    logger: createLogger('info', sink),
    connection: servers.nativeConnection,
    tuning,
  });
  // The worker the profile may have put in place of the first one is stopped with the engine.
  const engine: Engine = {
    ...servers,
    shape,
    client: inProcess.client,
    apiUrl: inProcess.api.url,
    apiPid: process.pid,
    workerPid: process.pid,
    maintenanceWorkerPid: process.pid,
    stopWorker: inProcess.worker.stop,
    close: async () => {
      await engine.stopWorker();
      await inProcess.close();
    },
  };
  return engine;
}

export type Fixture = {
  applicationId: string;
  headers: Record<string, string>;
  wallets: string[];
};

export async function setUp(engine: Engine): Promise<Fixture> {
  const app = await createFixtureApplication(engine.pool, { name: 'bench', modes: ['test'] });
  const { apiKey, secretKey } = app.credentials.test;
  const headers = { 'api-key': apiKey, 'secret-key': secretKey };
  const api = httpClient(engine.apiUrl, headers);
  try {
    const wallets = await Promise.all(
      Array.from({ length: WALLETS }, async (_, i) => {
        const user = await api.post('/api/v1/users/create/', {
          app_user_id: `bench-${i}`,
          name: `Bench User ${i}`,
          phone_number: '+23276000000',
        });
        if (user.status !== 200) throw failure('create user', user);
        const wallet = await api.post(`/api/v1/wallets/create/${idOf(user.body, 'user')}/`);
        if (wallet.status !== 200) throw failure('create wallet', wallet);
        return idOf(wallet.body, 'wallet');
      }),
    );
    for (const wallet of wallets) await fundWallet(engine.pool, wallet, FUNDING, 'bench_funding');
    return { applicationId: app.id, headers, wallets };
  } finally {
    api.close();
  }
}

/** The payment search attributes of a made-up transfer, for workflows of the transfer's shape. */
export function transferAttributes() {
  return paymentSearchAttributes({ applicationId: randomUUID(), mode: 'test' }, 'transfer', [
    randomUUID(),
    randomUUID(),
  ]);
}
