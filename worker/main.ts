import { Client } from '@temporalio/client';
import { loadConfig, requireDatabaseUrl, temporalAddress } from '../config';
import { createLogger, type Logger } from '../observability/logger';
import { startMetricsServer } from '../observability/metrics';
import { freePort } from '../net/ports';
import { createDatabasePool, whenDatabaseAnswers } from '../db/pool';
import { openTemporalConnection } from '../temporal/connection';
import { DefaultLogger, makeTelemetryFilterString, Runtime } from '@temporalio/worker';
import { runResilientWorker } from './resilient';
import { ensureSchedules } from './schedules';
import { temporalDataConverter } from '../temporal/data-converter';

/**
 * `npm run worker`: the Temporal worker alone (production); needs DATABASE_URL and Temporal.
 * It outlives a Temporal or Postgres outage: the worker is rebuilt until Temporal answers
 * again, and the schedules are created as soon as it does. SIGINT or SIGTERM stops it.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.log.level);
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
    tuning: { shutdownGraceTime: graceMs },
  });
  const schedules = new AbortController();
  void createSchedules(config, logger, schedules.signal);
  await worker.ready;
  logger.info({ taskQueue: config.temporal.taskQueue }, 'worker running');
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
  const connection = openTemporalConnection(temporalAddress(config));
  try {
    for (let attempt = 1; !signal.aborted; attempt++) {
      try {
        await ensureSchedules(
          new Client({
            connection,
            namespace: config.temporal.namespace,
            dataConverter: temporalDataConverter(config),
          }),
          config.temporal.taskQueue,
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
  process.stderr.write(`worker failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
