import { loadConfig, requireDatabaseUrl } from '../config';
import { createLogger } from '../observability/logger';
import { startApi } from './server';

/** `npm run api`: the HTTP API alone (production); needs DATABASE_URL and a Temporal server. */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.log.level);
  const api = await startApi(config, logger, requireDatabaseUrl(config));
  logger.info({ url: api.url }, 'api listening');
  const stop = () => {
    logger.info('api stopping');
    api.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `api failed to start: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exit(1);
});
