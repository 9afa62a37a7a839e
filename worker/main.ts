import { DefaultLogger, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { loadConfig, requireDatabaseUrl, temporalAddress } from '../config';
import { createLogger } from '../observability/logger';
import { createDatabasePool } from '../db/pool';
import { Client, Connection } from '@temporalio/client';
import { createWorker } from './create-worker';
import { ensureSchedules } from './schedules';

/** `npm run worker`: the Temporal worker alone (production); needs DATABASE_URL and Temporal. */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.log.level);
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) } },
  });
  const pool = await createDatabasePool(requireDatabaseUrl(config), {
    maximumPoolSize: config.database.poolSize,
  });
  const { worker, connection } = await createWorker({ config, pool });
  const clientConnection = await Connection.connect({ address: temporalAddress(config) });
  await ensureSchedules(
    new Client({ connection: clientConnection, namespace: config.temporal.namespace }),
    config.temporal.taskQueue,
    config.reconciliation,
  );
  await clientConnection.close();
  logger.info({ taskQueue: config.temporal.taskQueue }, 'worker running');
  process.once('SIGINT', () => worker.shutdown());
  process.once('SIGTERM', () => worker.shutdown());
  await worker.run();
  await connection.close();
  await pool.end();
  logger.info('worker stopped');
}

main().catch((error: unknown) => {
  process.stderr.write(`worker failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
