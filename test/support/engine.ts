import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { loadConfig, type Config } from '../../config';
import { createLogger } from '../../api/logger';
import { startApi, type RunningApi } from '../../api/server';
import { createApplication, updateApplication } from '../../db/applications';
import { createCredential } from '../../db/credentials';
import type { DatabasePool } from '../../db/pool';
import type { Currency } from '../../domain/money';
import type { Mode } from '../../domain/types';
import { createWorker } from '../../worker/create-worker';
import { createTestDatabase } from './database';

export type TestEngine = {
  url: string;
  pool: DatabasePool;
  config: Config;
  temporal: Client;
  /** Every JSON log line the API wrote. */
  logs: string[];
  close: () => Promise<void>;
};

/**
 * The real engine for one test file: its own database (cloned from the template), a real
 * worker on its own task queue of the shared Temporal dev server, and the real API on port 0.
 */
export async function startTestEngine(
  options: { requestTimeoutMs?: number; env?: Record<string, string> } = {},
): Promise<TestEngine> {
  const address = process.env.TEST_TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEST_TEMPORAL_ADDRESS is not set: run the tests with npm test');
  const database = await createTestDatabase();
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: address,
    TEMPORAL_TASK_QUEUE: `test-${randomUUID()}`,
    TEMPORAL_WORKFLOW_BUNDLE: process.env.TEST_WORKFLOW_BUNDLE,
    API_REQUEST_TIMEOUT_MS: String(options.requestTimeoutMs ?? 30_000),
    ...options.env,
  });
  quietTemporalRuntime();
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger('info', sink);
  const nativeConnection = await NativeConnection.connect({ address });
  const { worker } = await createWorker({
    config,
    pool: database.pool,
    connection: nativeConnection,
  });
  const running = worker.run();
  const api: RunningApi = await startApi(config, logger, database.url);
  const connection = await Connection.connect({ address });
  const temporal = new Client({ connection });
  return {
    url: api.url,
    pool: database.pool,
    config,
    temporal,
    logs,
    close: async () => {
      await api.close();
      await stopWorker(worker, running);
      await nativeConnection.close();
      await connection.close();
      await database.pool.end();
    },
  };
}

let runtimeInstalled = false;

/** The SDK logs every declined activity as a warning; tests assert outcomes instead. */
export function quietTemporalRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // Already installed by another suite in this jest worker.
  }
}

async function stopWorker(worker: Worker, running: Promise<void>): Promise<void> {
  if (worker.getState() === 'RUNNING') worker.shutdown();
  await running;
}

export type TestApp = {
  id: string;
  credentials: Record<Mode, { apiKey: string; secretKey: string }>;
};

/** An application with Test and Live credentials; rate limits raised unless told otherwise. */
export async function createTestApp(
  pool: DatabasePool,
  options: { currency?: Currency; rateLimits?: Record<string, number> | null } = {},
): Promise<TestApp> {
  const app = await createApplication(pool, {
    name: `app-${randomUUID().slice(0, 8)}`,
    baseCurrency: options.currency ?? 'SLE',
  });
  if (options.rateLimits !== null) {
    const high = 100_000;
    await updateApplication(pool, app.id, {
      rateLimits: options.rateLimits ?? {
        default: high,
        card_deposits: high,
        mobile_money_deposits: high,
        transfers: high,
        card_payouts: high,
        mobile_money_cashouts: high,
        admin: high,
      },
    });
  }
  const test = await createCredential(pool, { applicationId: app.id, mode: 'test' });
  const live = await createCredential(pool, { applicationId: app.id, mode: 'live' });
  return {
    id: app.id,
    credentials: {
      test: { apiKey: test.api_key, secretKey: test.secret_key },
      live: { apiKey: live.api_key, secretKey: live.secret_key },
    },
  };
}
