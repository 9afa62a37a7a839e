import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import type { Config } from '../config';
import type { DatabasePool } from '../db/pool';
import type { Logger } from '../observability/logger';
import { acquireTracing, workflowInterceptorsModule, type Tracing } from '../observability/tracing';
import { bundleWorkflows } from './bundle';
import type { QueueKind } from '../temporal/task-queues';
import { createWorker, runningConnection, type QueueWorkers } from './create-worker';

export type ResilientWorker = {
  /** Settles when the first worker polls (rejects only if `stop` came first). */
  ready: Promise<void>;
  /** How many times the worker was rebuilt after a failure. */
  rebuilds: () => number;
  /** The current worker's connection while it runs (eager starts from the API in-process). */
  connection: () => NativeConnection | null;
  /** Shuts the worker down and waits for it, at most `graceMs`. */
  stop: (graceMs?: number) => Promise<void>;
};

const INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 15_000;
/** A worker that ran this long before failing starts the backoff over. */
const HEALTHY_RUN_MS = 60_000;

/**
 * The workflows bundled once into a file (unless TEMPORAL_WORKFLOW_BUNDLE names one), so that a
 * rebuilt worker starts at once instead of bundling again. With tracing, the bundle is always
 * made here, with the workflow interceptors (a prebuilt bundle has none).
 */
async function withWorkflowBundle(config: Config, tracing: Tracing | undefined): Promise<Config> {
  if (config.temporal.workflowBundlePath && !tracing) return config;
  const code = await bundleWorkflows(
    require.resolve('../workflows'),
    tracing ? [workflowInterceptorsModule] : [],
  );
  const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'wallet-worker-')), 'workflows.js');
  await writeFile(file, code);
  return { ...config, temporal: { ...config.temporal, workflowBundlePath: file } };
}

/**
 * The engine's worker, kept running through outages: when Temporal is unreachable or the worker
 * fails, it is rebuilt on a new connection after a doubling backoff instead of the process exiting.
 * Postgres outages need nothing here (Temporal retries the activities). `stop` flushes tracing.
 */
export function runResilientWorker(options: {
  config: Config;
  pool: DatabasePool;
  logger: Logger;
  /** The task queues to serve; all of them by default. */
  queues?: readonly QueueKind[];
  tuning?: Partial<WorkerOptions>;
}): ResilientWorker {
  const { logger } = options;
  let stopping = false;
  let current: QueueWorkers | undefined;
  let rebuilds = 0;
  let wake: (() => void) | undefined;
  let markReady: () => void = () => undefined;
  let refuseReady: (error: Error) => void = () => undefined;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    refuseReady = reject;
  });
  ready.catch(() => undefined);
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const tracing = acquireTracing(options.config.tracing);
  const loop = (async () => {
    const config = await withWorkflowBundle(options.config, tracing);
    let backoff = INITIAL_BACKOFF_MS;
    while (!stopping) {
      const began = Date.now();
      try {
        const { workers, connection } = await createWorker({
          config,
          pool: options.pool,
          queues: options.queues,
          tuning: options.tuning,
          tracing,
        });
        try {
          if (stopping) break;
          current = workers;
          const running = workers.run();
          markReady();
          await running;
        } finally {
          current = undefined;
          await connection.close().catch(() => undefined);
        }
        if (stopping) break;
        logger.error('worker stopped by itself: rebuilding it');
      } catch (error) {
        if (stopping) break;
        logger.error({ err: error, retryInMs: backoff }, 'worker failed: rebuilding it');
      }
      if (Date.now() - began > HEALTHY_RUN_MS) backoff = INITIAL_BACKOFF_MS;
      await pause(backoff);
      backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
      rebuilds += 1;
    }
  })().catch((error: unknown) => {
    // Only the bundling can end here: nothing to rebuild without the workflows' code.
    logger.error({ err: error }, 'the worker cannot be built');
    refuseReady(error instanceof Error ? error : new Error(String(error)));
    throw error;
  });
  loop.catch(() => undefined);

  return {
    ready,
    rebuilds: () => rebuilds,
    connection: () => runningConnection(current),
    stop: async (graceMs = 5_000) => {
      stopping = true;
      wake?.();
      refuseReady(new Error('the worker was stopped before it ran'));
      current?.shutdown();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          logger.warn('the worker did not stop in time; leaving it');
          resolve();
        }, graceMs);
      });
      await Promise.race([loop.catch(() => undefined), late]);
      clearTimeout(timer);
      await tracing?.release();
    },
  };
}
