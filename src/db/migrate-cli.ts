import { loadConfig, requireDatabaseUrl } from '../config';
import { createLogger } from '../observability/logger';
import { migrate } from './migrate';

/** `npm run migrate`: applies pending migrations to DATABASE_URL and exits. */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.log.level);
  const result = await migrate(requireDatabaseUrl(config));
  logger.info(result, 'migrations applied');
}

main().catch((error: unknown) => {
  process.stderr.write(
    `migrate failed: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exitCode = 1;
});
