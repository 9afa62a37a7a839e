import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig, type Config } from '../config';
import { createDatabasePool } from '../db/pool';
import { startEngine } from '../harness/engine';
import { createFixtureApplication } from '../harness/fixtures';
import { openLocalDatabase } from '../harness/postgres';
import {
  installTemporalRuntime,
  registerSearchAttributes,
  startTemporalDevServer,
} from '../harness/temporal';
import { createLogger, type Logger } from '../observability/logger';
import { ensureSchedules } from '../worker/schedules';

/**
 * `npm start`: the whole engine on one machine. Postgres (embedded unless DATABASE_URL), the
 * Temporal development server with its Web UI (unless TEMPORAL_ADDRESS), migrations, the
 * worker and the API. State lives under `.data/`; Ctrl-C stops everything.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.log.level);
  await mkdir(config.dataDir, { recursive: true });
  installTemporalRuntime('WARN');
  const stops: (() => Promise<void>)[] = [];
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping');
    for (const stop of stops.reverse()) {
      await stop().catch((error: unknown) => logger.error({ err: error }, 'stop failed'));
    }
    process.exit(code);
  };
  process.once('SIGINT', () => void shutdown(0));
  process.once('SIGTERM', () => void shutdown(0));

  try {
    const database = await openLocalDatabase(config, logger);
    stops.push(database.stop);

    let uiUrl: string | null = null;
    if (config.temporal.address) {
      await registerSearchAttributes(config.temporal.address, config.temporal.namespace);
    } else {
      logger.info('starting the Temporal development server');
      const temporal = await startTemporalDevServer({
        port: config.temporal.port,
        uiPort: config.temporal.uiPort,
        dbFile: path.join(config.dataDir, 'temporal.sqlite'),
        log: (line) => logger.debug({ temporal: line }),
      });
      stops.push(temporal.stop);
      uiUrl = temporal.uiUrl;
    }
    const running = { ...config, database: { ...config.database, url: database.url } };

    const pool = await createDatabasePool(database.url, {
      maximumPoolSize: config.database.poolSize,
    });
    stops.push(() => pool.end());
    const engine = await startEngine({
      config: running,
      pool,
      logger,
      onWorkerFailure: (error) => {
        logger.error({ err: error }, 'worker failed');
        void shutdown(1);
      },
    });
    stops.push(engine.close);
    await ensureSchedules(engine.client, config.temporal.taskQueue, config.reconciliation);
    const api = engine.api;

    const demo = await demoCredentials(running, database.url, logger);
    const lines = [
      '',
      `  API          ${api.url}   (docs: ${api.url}/docs)`,
      `  Temporal UI  ${uiUrl ?? `(external Temporal at ${config.temporal.address})`}`,
      `  Postgres     ${database.url.replace(/:[^:@/]+@/, ':***@')}`,
    ];
    if (demo.created) {
      lines.push(
        '',
        '  Demo application (Test Mode), saved to .data/demo-credentials.json:',
        `    api-key:    ${demo.credentials.api_key}`,
        `    secret-key: ${demo.credentials.secret_key}`,
      );
    } else {
      lines.push('', '  Demo credentials: .data/demo-credentials.json');
    }
    lines.push('', '  Ctrl-C stops everything; the data stays under .data/.', '');
    process.stdout.write(`${lines.join('\n')}\n`);
  } catch (error) {
    logger.error({ err: error }, 'start failed');
    await shutdown(1);
  }
}

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
