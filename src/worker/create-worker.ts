import { Client } from '@temporalio/client';
import { NativeConnection, type Worker, type WorkerOptions } from '@temporalio/worker';
import type { DatabasePool } from '../db/pool';
import type { Config } from '../config';
import { createQueueActivities } from '../activities';
import { ensureWebhookRelay } from '../activities/webhooks';
import { createProviders, type Providers } from '../providers';
import { resolutionSinks } from '../temporal/resolutions';
import { paymentSinks } from '../temporal/settlements';
import { QUEUE_KINDS, taskQueueOf, type QueueKind } from '../temporal/task-queues';
import { createEngineWorker } from './engine-worker';
import { bundleWorkflows } from './bundle';
import { temporalDataConverter } from '../temporal/data-converter';
import { sdkConnectionOptions, temporalConnectionOptions } from '../temporal/connection';
import {
  workerTracingOptions,
  workflowInterceptorsModule,
  type Tracing,
} from '../observability/tracing';

/** The workers of one process, one a task queue, run and stopped together. */
export type QueueWorkers = {
  byQueue: Partial<Record<QueueKind, Worker>>;
  /** Runs every worker; when one stops or fails, the others are shut down too. */
  run: () => Promise<void>;
  /** Shuts down the workers still running. */
  shutdown: () => void;
};

/** Workflows the maintenance worker keeps in memory between their tasks. */
const MAINTENANCE_CACHED_WORKFLOWS = 100;

/**
 * What each queue's worker may run at once: money, the pool's size in activities and the slots
 * eager starts need; webhooks, its attempts and the relay's round; maintenance, a few long runs.
 */
function queueTuning(config: Config, kind: QueueKind): Partial<WorkerOptions> {
  const tuning: Record<QueueKind, Partial<WorkerOptions>> = {
    payments: {
      maxConcurrentActivityTaskExecutions: config.database.poolSize,
      // A payment starts eagerly on this worker (src/api/workflow-starts.ts `eagerStart`) only if one of
      // these slots is free when the API starts it; a free slot costs nothing.
      maxConcurrentWorkflowTaskExecutions: config.temporal.workflowTaskSlots,
    },
    webhooks: {
      maxConcurrentActivityTaskExecutions: config.webhooks.attemptsPerWorker + 1,
      maxConcurrentLocalActivityExecutions: config.webhooks.attemptsPerWorker,
    },
    maintenance: {
      maxConcurrentActivityTaskExecutions: 4,
      // Each open reconciliation exception waits days on its timer: cached, thousands of them
      // would hold the worker's memory for nothing; replaying one when its timer fires is cheap.
      maxCachedWorkflows: MAINTENANCE_CACHED_WORKFLOWS,
    },
  };
  return tuning[kind];
}

/**
 * A worker per queue of `queues` (all by default) on one connection, each with its activities,
 * the workflows bundled once; a TEMPORAL_WORKFLOW_BUNDLE used with `tracing` must have been built
 * with the workflow interceptors, as src/worker/resilient.ts builds it.
 */
export async function createWorker(options: {
  config: Config;
  pool: DatabasePool;
  connection?: NativeConnection;
  queues?: readonly QueueKind[];
  /** Defaults to the providers the configuration describes. */
  providers?: Providers;
  tuning?: Partial<WorkerOptions>;
  /** OpenTelemetry tracing (src/observability/tracing.ts); off when undefined. */
  tracing?: Tracing;
}): Promise<{ workers: QueueWorkers; connection: NativeConnection; ownsConnection: boolean }> {
  const { config } = options;
  const queues = options.queues ?? QUEUE_KINDS;
  const dataConverter = temporalDataConverter(config);
  const workflowBundle = config.temporal.workflowBundlePath
    ? { codePath: config.temporal.workflowBundlePath }
    : {
        code: await bundleWorkflows(
          require.resolve('../workflows'),
          options.tracing ? [workflowInterceptorsModule] : [],
        ),
      };
  const connection =
    options.connection ??
    (await NativeConnection.connect(sdkConnectionOptions(temporalConnectionOptions(config))));
  try {
    const tracing = workerTracingOptions(options.tracing);
    const stopping = new AbortController();
    const activities = createQueueActivities({
      pool: options.pool,
      config,
      providers: options.providers ?? createProviders({ config, pool: options.pool }),
      stopping: stopping.signal,
    });
    const byQueue: Partial<Record<QueueKind, Worker>> = {};
    for (const kind of queues) {
      byQueue[kind] = await createEngineWorker({
        connection,
        namespace: config.temporal.namespace,
        taskQueue: taskQueueOf(config, kind),
        dataConverter,
        activities: activities[kind],
        workflowBundle,
        ...tracing,
        sinks: { ...tracing.sinks, ...paymentSinks, ...resolutionSinks },
        ...queueTuning(config, kind),
        ...options.tuning,
      });
    }
    if (byQueue.webhooks) {
      // The webhook outbox relay runs whenever its queue's worker does (the maintenance schedule
      // checks too).
      await ensureWebhookRelay(
        new Client({ connection, namespace: config.temporal.namespace, dataConverter }),
        config.temporal.webhookTaskQueue,
      );
    }
    return {
      workers: queueWorkers(byQueue, stopping),
      connection,
      ownsConnection: !options.connection,
    };
  } catch (error) {
    if (!options.connection) await connection.close().catch(() => undefined);
    throw error;
  }
}

function queueWorkers(
  byQueue: Partial<Record<QueueKind, Worker>>,
  stopping: AbortController,
): QueueWorkers {
  const workers = Object.values(byQueue);
  const shutdown = () => {
    stopping.abort();
    for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
  };
  return {
    byQueue,
    shutdown,
    run: async () => {
      const runs = workers.map((worker) => worker.run().finally(shutdown));
      const failed = (await Promise.allSettled(runs)).find((run) => run.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}

/**
 * The connection of the money queue's worker while it runs: a client on it can start payments
 * eagerly on this worker (src/api/workflow-starts.ts `eagerStart`); null once it stops, so that starts go
 * the usual way.
 */
export function runningConnection(workers: QueueWorkers | undefined): NativeConnection | null {
  const worker = workers?.byQueue.payments;
  return worker?.getState() === 'RUNNING' ? (worker.connection ?? null) : null;
}
