import { Writable } from 'node:stream';
import type { Client } from '@temporalio/client';
import type { Config } from '../../src/config';
import type { DatabasePool } from '../../src/db/pool';
import type { Currency } from '../../src/domain/money';
import type { Mode } from '../../src/domain/types';
import {
  runWorker,
  scratchConfig,
  startEngine,
  type RunningWorker,
} from '../../tools/harness/engine';
import { createFixtureApplication, type FixtureApplication } from '../../tools/harness/fixtures';
import { installTemporalRuntime } from '../../tools/harness/temporal';
import { createLogger } from '../../src/observability/logger';
import { createTestDatabase } from './database';

export type TestEngine = {
  url: string;
  /** The API's metrics listener (`API_METRICS_PORT`), when the engine has one. */
  metricsUrl: string | undefined;
  pool: DatabasePool;
  config: Config;
  temporal: Client;
  /** Every JSON log line the API wrote. */
  logs: string[];
  /** Stops the engine's worker: payments then wait in Temporal (for 504 tests). */
  stopWorker: () => Promise<void>;
  /** Starts another worker on the engine's task queue. */
  startWorker: () => Promise<void>;
  close: () => Promise<void>;
};

export type TestEngineOptions = {
  requestTimeoutMs?: number;
  env?: Record<string, string>;
  /** Connections of the one pool the API, the worker and the test share (30 by default). */
  poolSize?: number;
};

/**
 * The real engine for one test file: its own database (cloned from the template), a real
 * worker on its own task queue of the shared Temporal dev server, and the real API on port 0.
 */
export async function startTestEngine(options: TestEngineOptions = {}): Promise<TestEngine> {
  const address = process.env.TEST_TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEST_TEMPORAL_ADDRESS is not set: run the tests with npm test');
  const database = await createTestDatabase(
    options.poolSize === undefined ? {} : { poolSize: options.poolSize },
  );
  const config = scratchConfig({
    databaseUrl: database.url,
    temporalAddress: address,
    taskQueuePrefix: 'test',
    workflowBundle: process.env.TEST_WORKFLOW_BUNDLE,
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
    env: options.env,
  });
  quietTemporalRuntime();
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const workers: RunningWorker[] = [];
  const engine = await startEngine({
    config,
    pool: database.pool,
    logger: createLogger('info', sink),
  }).catch(async (error: unknown) => {
    await database.pool.end();
    throw error;
  });
  return {
    url: engine.api.url,
    metricsUrl: engine.api.metricsUrl,
    pool: database.pool,
    config,
    temporal: engine.client,
    logs,
    stopWorker: () => engine.worker.stop(),
    startWorker: async () => {
      workers.push(await runWorker({ config, pool: database.pool }));
    },
    close: async () => {
      for (const worker of workers) await worker.stop();
      await engine.close();
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
    installTemporalRuntime('ERROR');
  } catch {
    // Already installed by another suite in this jest worker.
  }
}

export type TestApp = FixtureApplication;

export type TestAppOptions = { currency?: Currency; rateLimits?: Record<string, number> | null };

/** An application with Test and Live credentials; rate limits raised unless told otherwise. */
export function createTestApp(pool: DatabasePool, options: TestAppOptions = {}): Promise<TestApp> {
  return createFixtureApplication(pool, {
    modes: ['test', 'live'] satisfies Mode[],
    currency: options.currency,
    rateLimits: options.rateLimits,
  });
}
