import { loadConfig, requireDatabaseUrl, startFailure } from '../config';
import { whenDatabaseAnswers } from '../db/pool';
import { createLogger } from '../observability/logger';
import { startApi } from './server';
import { checkTemporalAccepts, temporalConnectionOptions } from '../temporal/connection';

/**
 * `npm run api`: the HTTP API alone (production; needs DATABASE_URL and Temporal). It outlives
 * their outages without a restart: started during one, it waits for Postgres; while one lasts,
 * requests that need it answer 503 with Retry-After (docs/operations.md, Supervision and outages).
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.log.level);
  await checkTemporalAccepts(temporalConnectionOptions(config));
  const api = await whenDatabaseAnswers(
    () => startApi(config, logger, requireDatabaseUrl(config)),
    (error, retryInMs) => logger.warn({ err: error, retryInMs }, 'waiting for Postgres'),
  );
  logger.info({ url: api.url }, 'api listening');
  const stop = () => {
    const graceMs = config.api.shutdownGraceMs;
    logger.info({ graceMs }, 'api stopping: finishing the requests it started');
    api.drain(graceMs).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`api failed to start: ${startFailure(error)}\n`);
  process.exit(1);
});
