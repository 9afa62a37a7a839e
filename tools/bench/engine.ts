/**
 * The engine under test, started by the benchmark through the dev harness (harness/): Postgres
 * (embedded, in a temporary folder; fsync on or off), the Temporal development server (in
 * memory, or on a file in `npm start`'s durable configuration), the worker and the API, in this
 * process as the tests run them; and the fixture: an application, its credential, funded
 * wallets. The load comes from another process (tools/bench/generator.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Client } from '@temporalio/client';
import { NativeConnection, type WorkerOptions } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import { createEngineWorker } from '../../worker/engine-worker';
import { payloadKeys, temporalDataConverter } from '../../temporal/data-converter';
import { paymentSearchAttributes } from '../../api/temporal';
import { formatPayloadKeys, type Config } from '../../config';
import { createDatabasePool, type DatabasePool } from '../../db/pool';
import {
  keepRunning,
  runWorker,
  scratchConfig,
  startEngine as startInProcess,
} from '../harness/engine';
import { createFixtureApplication, fundWallet } from '../harness/fixtures';
import type { EmbeddedDatabase } from '../harness/postgres';
import { startScratchServers } from '../harness/scratch';
import { writeWorkflowBundle, type DevServer } from '../harness/temporal';
import { bundleWorkflows } from '../../worker/bundle';
import { createLogger } from '../../observability/logger';
import { failure, httpClient, idOf } from './senders';

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
  /** Stops the engine's worker (the profile replaces it with an instrumented one). */
  stopWorker: () => Promise<void>;
  close: () => Promise<void>;
};

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

export async function startEngine(options: {
  durable: boolean;
  temporalFile: boolean;
  tuning: Partial<WorkerOptions>;
  ledgerClients: number;
}): Promise<Engine> {
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
    const config = scratchConfig({
      databaseUrl,
      temporalAddress: temporal.address,
      taskQueuePrefix: 'bench-payments',
      workflowBundle: bundlePath,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      // Row (6) delivers webhooks to an endpoint on loopback; the key stays in memory.
      env: {
        WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32',
        WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
      },
    });
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
    const nativeConnection = await NativeConnection.connect({ address: temporal.address });
    cleanups.push(() => nativeConnection.close());

    progress('starting the worker and the API');
    // Access-log lines are written (their cost is real) but thrown away.
    const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
    // After the API: the worker the profile may have put in place of the first one.
    const started: { engine?: Engine } = {};
    cleanups.push(() => started.engine?.stopWorker() ?? Promise.resolve());
    const inProcess = await startInProcess({
      config,
      pool: workerPool,
      logger: createLogger('info', sink),
      connection: nativeConnection,
      tuning: options.tuning,
    });
    cleanups.push(inProcess.close);
    started.engine = {
      dir,
      postgres,
      temporal,
      databaseUrl,
      config,
      pool,
      workerPool,
      nativeConnection,
      dataConverter: temporalDataConverter(config),
      payloadKeys: formatPayloadKeys(payloadKeys(config)),
      client: inProcess.client,
      benchBundle,
      apiUrl: inProcess.api.url,
      stopWorker: inProcess.worker.stop,
      close,
    };
    return started.engine;
  } catch (error) {
    await close();
    throw error;
  }
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
  return paymentSearchAttributes(
    { applicationId: randomUUID(), mode: 'test', credentialId: randomUUID() },
    'transfer',
    [randomUUID(), randomUUID()],
  );
}
