import path from 'node:path';
import pg from 'pg';
import type { Config } from '../config';
import type { Logger } from '../api/logger';
import { startEmbeddedPostgres } from '../db/embedded';
import { migrate } from '../db/migrate';

export const LOCAL_DATABASE = 'wallet';

export type LocalDatabase = { url: string; stop: () => Promise<void> };

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function ensureDatabase(serverUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } finally {
    await client.end();
  }
}

/**
 * The database of a local run: DATABASE_URL when set; else the embedded Postgres under
 * `.data/pg`, reused when `npm start` already runs it, started here otherwise. Migrations are
 * applied either way (safe to run twice).
 */
export async function openLocalDatabase(config: Config, logger: Logger): Promise<LocalDatabase> {
  if (config.database.url) {
    await migrate(config.database.url);
    return { url: config.database.url, stop: () => Promise.resolve() };
  }
  const port = config.database.embeddedPort;
  const url = (db: string) => `postgres://postgres:postgres@127.0.0.1:${port}/${db}`;
  if (await answers(url('postgres'))) {
    await ensureDatabase(url('postgres'), LOCAL_DATABASE);
    await migrate(url(LOCAL_DATABASE));
    return { url: url(LOCAL_DATABASE), stop: () => Promise.resolve() };
  }
  logger.info({ port }, 'starting embedded postgres');
  const embedded = await startEmbeddedPostgres({
    dir: path.join(config.dataDir, 'pg'),
    port,
    log: (line) => logger.debug({ postgres: line }),
  });
  await ensureDatabase(embedded.url('postgres'), LOCAL_DATABASE);
  await migrate(embedded.url(LOCAL_DATABASE));
  return { url: embedded.url(LOCAL_DATABASE), stop: () => embedded.stop() };
}
