import { parseArgs } from 'node:util';
import { Client } from '@temporalio/client';
import { loadConfig, requireDatabaseUrl, startFailure } from '../config';
import { createLogger, type Logger } from '../observability/logger';
import { startMetricsServer } from '../observability/metrics';
import { freePort } from './ports';
import { createDatabasePool, whenDatabaseAnswers } from '../db/pool';
import {
  checkTemporalAccepts,
  openTemporalConnection,
  temporalConnectionOptions,
} from '../temporal/connection';
import { DefaultLogger, makeTelemetryFilterString, Runtime } from '@temporalio/worker';
import { runResilientWorker } from './resilient';
import { ensureSchedules } from './schedules';
import { temporalDataConverter } from '../temporal/data-converter';
import {
  parseQueueList,
  QUEUE_KINDS,
  QueueListError,
  taskQueueOf,
  type QueueKind,
} from '../temporal/task-queues';

/** The `--queues LIST` of the command line (all of them by default). */
function queuesArgument(args: string[]): QueueKind[] {
  const { values } = parseArgs({ args, options: { queues: { type: 'string' } } });
  return values.queues === undefined ? [...QUEUE_KINDS] : parseQueueList(values.queues);
}

/**
 * `npm run worker [-- --queues LIST]`: the workers alone, one per task queue (docs/operations.md).
 * They outlive a Temporal or Postgres outage: rebuilt until Temporal answers, the maintenance
 * worker then creating the schedules. SIGINT or SIGTERM stops them.
 */
async function main(): Promise<void> {
  let queues: QueueKind[];
  try {
    queues = queuesArgument(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof QueueListError) && !(error instanceof TypeError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  const config = loadConfig();
  const logger = createLogger(config.log.level);
  await checkTemporalAccepts(temporalConnectionOptions(config));
  // The SDK's own metrics go to its Prometheus exporter on a loopback port of its own; the
  // worker's metrics endpoint (WORKER_METRICS_PORT) serves them after the engine's.
  const temporalMetricsPort =
    config.metrics.workerPort === undefined ? undefined : await freePort();
  // Signals are handled below: the worker is stopped, then the pool closed.
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) },
      ...(temporalMetricsPort === undefined
        ? {}
        : { metrics: { prometheus: { bindAddress: `127.0.0.1:${temporalMetricsPort}` } } }),
    },
    shutdownSignals: [],
  });
  const metrics =
    config.metrics.workerPort === undefined
      ? undefined
      : await startMetricsServer({
          port: config.metrics.workerPort,
          host: config.api.host,
          temporalMetricsUrl: `http://127.0.0.1:${temporalMetricsPort}/metrics`,
        });
  if (metrics) logger.info({ url: metrics.url }, 'worker metrics listening');
  const pool = await whenDatabaseAnswers(
    () =>
      createDatabasePool(requireDatabaseUrl(config), {
        maximumPoolSize: config.database.poolSize,
        connectTimeoutMs: config.database.connectTimeoutMs,
        preparedStatements: config.database.preparedStatements,
      }),
    (error, retryInMs) => logger.warn({ err: error, retryInMs }, 'waiting for Postgres'),
  );
  const graceMs = config.temporal.workerShutdownGraceMs;
  // On SIGTERM it stops polling and lets its running activities finish for the grace time.
  const worker = runResilientWorker({
    config,
    pool,
    logger,
    queues,
    tuning: { shutdownGraceTime: graceMs },
  });
  const schedules = new AbortController();
  if (queues.includes('maintenance')) void createSchedules(config, logger, schedules.signal);
  await worker.ready;
  logger.info({ taskQueues: queues.map((kind) => taskQueueOf(config, kind)) }, 'worker running');
  const stop = () => {
    logger.info({ graceMs }, 'worker stopping: finishing its running activities');
    schedules.abort();
    void worker
      .stop(graceMs + STOP_MARGIN_MS)
      .then(() => metrics?.close())
      .then(() => pool.end())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** What the worker may take beyond its grace time to cancel its activities and let go. */
const STOP_MARGIN_MS = 5_000;

/** The engine's schedules, created once Temporal answers (retried every few seconds until). */
async function createSchedules(
  config: ReturnType<typeof loadConfig>,
  logger: Logger,
  signal: AbortSignal,
): Promise<void> {
  const connection = openTemporalConnection(temporalConnectionOptions(config));
  try {
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        await ensureSchedules(
          new Client({
            connection,
            namespace: config.temporal.namespace,
            dataConverter: temporalDataConverter(config),
          }),
          config.temporal.maintenanceTaskQueue,
          config.reconciliation,
        );
        return;
      } catch (error) {
        logger.warn({ err: error, attempt }, 'schedules not created yet: Temporal does not answer');
        await new Promise((resolve) => setTimeout(resolve, Math.min(30_000, 1_000 * attempt)));
      }
    }
  } finally {
    await connection.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`worker failed: ${startFailure(error)}\n`);
  process.exit(1);
});
