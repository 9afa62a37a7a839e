import { Client } from '@temporalio/client';
import { NativeConnection, type Worker, type WorkerOptions } from '@temporalio/worker';
import type { DatabasePool } from '../db/pool';
import type { Config } from '../config';
import { createActivities } from '../activities';
import { ensureWebhookRelay } from '../activities/webhooks';
import { createProviders, type Providers } from '../providers';
import { resolutionSinks } from '../temporal/resolutions';
import { paymentSinks } from '../temporal/settlements';
import { createEngineWorker } from './engine-worker';
import { preloadedModules } from './bundle';
import { temporalDataConverter } from '../temporal/data-converter';
import { sdkConnectionOptions, temporalConnectionOptions } from '../temporal/connection';
import {
  workerTracingOptions,
  workflowInterceptorsModule,
  type Tracing,
} from '../observability/tracing';

/**
 * The worker: one task queue for every payment workflow and activity. A prebuilt bundle
 * (TEMPORAL_WORKFLOW_BUNDLE) skips bundling at start-up, but with `tracing` it must have been
 * built with the workflow interceptors, as worker/resilient.ts builds it.
 */
export async function createWorker(options: {
  config: Config;
  pool: DatabasePool;
  connection?: NativeConnection;
  /** Defaults to the providers the configuration describes. */
  providers?: Providers;
  tuning?: Partial<WorkerOptions>;
  /** OpenTelemetry tracing (observability/tracing.ts); off when undefined. */
  tracing?: Tracing;
}): Promise<{ worker: Worker; connection: NativeConnection; ownsConnection: boolean }> {
  const { config } = options;
  const dataConverter = temporalDataConverter(config);
  const connection =
    options.connection ??
    (await NativeConnection.connect(sdkConnectionOptions(temporalConnectionOptions(config))));
  const workflowsPath = require.resolve('../workflows');
  const workflowSource = config.temporal.workflowBundlePath
    ? { workflowBundle: { codePath: config.temporal.workflowBundlePath } }
    : { workflowsPath, bundlerOptions: { preloadModules: preloadedModules(workflowsPath) } };
  const tracing = workerTracingOptions(options.tracing);
  if (options.tracing && 'workflowsPath' in workflowSource) {
    tracing.interceptors = {
      ...tracing.interceptors,
      workflowModules: [workflowInterceptorsModule],
    };
  }
  const worker = await createEngineWorker({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    dataConverter,
    activities: createActivities({
      pool: options.pool,
      config,
      providers: options.providers ?? createProviders({ config, pool: options.pool }),
    }),
    ...workflowSource,
    ...tracing,
    sinks: { ...tracing.sinks, ...paymentSinks, ...resolutionSinks },
    // Every activity holds at most one database connection: no more at once than the pool has,
    // so that none waits for a connection inside its start-to-close timeout.
    maxConcurrentActivityTaskExecutions: config.database.poolSize,
    // A payment starts eagerly on this worker (api/temporal.ts `eagerStart`) only if one of
    // these slots is free when the API starts it; the SDK's default runs out under load, and a
    // free slot costs nothing.
    maxConcurrentWorkflowTaskExecutions: config.temporal.workflowTaskSlots,
    ...options.tuning,
  });
  // The webhook outbox relay runs whenever a worker does (the maintenance schedule checks too).
  await ensureWebhookRelay(
    new Client({ connection, namespace: config.temporal.namespace, dataConverter }),
    config.temporal.taskQueue,
  );
  return { worker, connection, ownsConnection: !options.connection };
}

/**
 * The connection of a worker while it runs: a client on it can start workflows eagerly on this
 * worker (api/temporal.ts `eagerStart`); null once it stops, so that starts go the usual way.
 */
export function runningConnection(worker: Worker | undefined): NativeConnection | null {
  return worker?.getState() === 'RUNNING' ? (worker.connection ?? null) : null;
}
