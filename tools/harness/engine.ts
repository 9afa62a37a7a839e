import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import type { NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import { startApi, type RunningApi } from '../../src/api/server';
import { loadConfig, type Config } from '../../src/config';
import type { DatabasePool } from '../../src/db/pool';
import type { Logger } from '../../src/observability/logger';
import { createWorker, runningConnection, type QueueWorkers } from '../../src/worker/create-worker';
import { temporalDataConverter } from '../../src/temporal/data-converter';
import { connectTemporal, temporalConnectionOptions } from '../../src/temporal/connection';

type ScratchOptions = {
  databaseUrl: string;
  temporalAddress: string;
  taskQueuePrefix: string;
  workflowBundle?: string;
  requestTimeoutMs: number;
  env?: Record<string, string>;
};

/** How long opening a database connection may take on throwaway servers (tests, benchmark). */
export const SCRATCH_CONNECT_TIMEOUT_MS = 10_000;

/**
 * The environment of an engine run against throwaway servers (tests, benchmark): the API on a
 * free loopback port, its own task queue, the prebuilt workflow bundle. The benchmark gives the
 * same variables to the API and worker processes it starts.
 */
export function scratchEnv(options: ScratchOptions): Record<string, string> {
  return {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    DATABASE_URL: options.databaseUrl,
    TEMPORAL_ADDRESS: options.temporalAddress,
    TEMPORAL_TASK_QUEUE: `${options.taskQueuePrefix}-${randomUUID()}`,
    TEMPORAL_WEBHOOK_TASK_QUEUE: `${options.taskQueuePrefix}-webhooks-${randomUUID()}`,
    TEMPORAL_MAINTENANCE_TASK_QUEUE: `${options.taskQueuePrefix}-maintenance-${randomUUID()}`,
    ...(options.workflowBundle ? { TEMPORAL_WORKFLOW_BUNDLE: options.workflowBundle } : {}),
    API_REQUEST_TIMEOUT_MS: String(options.requestTimeoutMs),
    // Throwaway servers share a busy machine, where opening a connection can take seconds; a
    // database that is down refuses at once, so outages are still answered in time.
    DATABASE_CONNECT_TIMEOUT_MS: String(SCRATCH_CONNECT_TIMEOUT_MS),
    ...options.env,
  };
}

/** The configuration of an engine run in-process against throwaway servers (`scratchEnv`). */
export function scratchConfig(options: ScratchOptions): Config {
  return loadConfig(scratchEnv(options));
}

export type RunningWorker = {
  worker: QueueWorkers;
  /** Settles when the worker stops; rejects if it fails. */
  done: Promise<void>;
  stop: () => Promise<void>;
};

/** Runs created workers until `stop`, which shuts them down and waits for them. */
export function keepRunning(created: Worker | QueueWorkers): RunningWorker {
  // A lone worker (the benchmark's) serves no engine queue.
  const worker: QueueWorkers =
    'byQueue' in created
      ? created
      : {
          byQueue: {},
          run: () => created.run(),
          shutdown: () => {
            if (created.getState() === 'RUNNING') created.shutdown();
          },
        };
  const done = worker.run();
  return {
    worker,
    done,
    stop: async () => {
      // The SDK shuts a worker down on its shutdown signals by itself; otherwise, do it here.
      worker.shutdown();
      await done;
    },
  };
}

/**
 * The engine's worker, polling; `stop` also closes the connection it opened. `onFailure` hears
 * at once of a worker that fails while running.
 */
export async function runWorker(
  options: Parameters<typeof createWorker>[0] & { onFailure?: (error: unknown) => void },
): Promise<RunningWorker> {
  const { onFailure, ...workerOptions } = options;
  const { workers, connection, ownsConnection } = await createWorker(workerOptions);
  const running = keepRunning(workers);
  if (onFailure) running.done.catch(onFailure);
  let stopping: Promise<void> | undefined;
  return {
    ...running,
    // Idempotent: a test may stop the worker before the engine's close stops it again.
    stop: () =>
      (stopping ??= (async () => {
        await running.stop();
        if (ownsConnection) await connection.close();
      })()),
  };
}

export type Engine = {
  api: RunningApi;
  worker: RunningWorker;
  /** A Temporal client on the engine's namespace. */
  client: Client;
  /** Stops the API, then the worker, then closes the client; the pool is the caller's. */
  close: () => Promise<void>;
};

/**
 * The engine in this process: the worker (on `pool`, or with `connection` when given) and the
 * API (with its own pool, as in production), plus a Temporal client. Whatever started is closed
 * again if a later part fails.
 */
export async function startEngine(options: {
  config: Config;
  pool: DatabasePool;
  logger: Logger;
  connection?: NativeConnection;
  tuning?: Partial<WorkerOptions>;
  onWorkerFailure?: (error: unknown) => void;
}): Promise<Engine> {
  const { config } = options;
  const databaseUrl = config.database.url;
  if (!databaseUrl) throw new Error('startEngine needs config.database.url');
  const stops: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  };
  try {
    const worker = await runWorker({
      config,
      pool: options.pool,
      connection: options.connection,
      tuning: options.tuning,
      onFailure: options.onWorkerFailure,
    });
    stops.push(worker.stop);
    const connection = await connectTemporal(temporalConnectionOptions(config));
    stops.push(() => connection.close());
    const client = new Client({
      connection,
      namespace: config.temporal.namespace,
      dataConverter: temporalDataConverter(config),
    });
    const api = await startApi(config, options.logger, databaseUrl, {
      workerConnection: () => runningConnection(worker.worker),
    });
    stops.push(api.close);
    return { api, worker, client, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}
