import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { sql } from 'slonik';
import { z } from 'zod';
import { LISTEN_APPLICATION_NAME } from '../../tools/cli/webhooks-listen';
import { loadConfig } from '../../src/config';
import { migrate, type MigrationResult } from '../../src/db/migrate';
import { createDatabasePool, isDatabaseUnreachable, type DatabasePool } from '../../src/db/pool';
import { listenForEvents, RELAY_CHANNEL } from '../../src/db/webhook-listener';
import { freePort } from '../../src/worker/ports';
import {
  ensureDatabase,
  startEmbeddedPostgres,
  type EmbeddedDatabase,
} from '../../tools/harness/postgres';
import { makeCertificates } from '../support/tls-terminator';
import { pollUntil } from '../support/wait';
import { startWorkerProcess } from '../support/worker-process';

/**
 * docs/operations.md, Postgres over TLS: a server of its own with `ssl=on`, a certificate from
 * a CA made here and `hostssl` lines only; every path connects with verify-full, and another CA
 * or host name stops a process at start with one line.
 */

jest.setTimeout(120_000);

const root = path.resolve(__dirname, '..', '..');
const dir = mkdtempSync(path.join(tmpdir(), 'wallet-pgtls-'));
const file = (name: string) => path.join(dir, name);
let server: EmbeddedDatabase;
let port: number;
const opened: DatabasePool[] = [];
let migrated: MigrationResult;

/** The CA-signed server certificate's key, which the server (as `postgres` under root) must own. */
function ownServerKey(): void {
  chmodSync(file('server.key'), 0o600);
  if (userInfo().uid === 0) execFileSync('chown', ['postgres', file('server.key')]);
}

/** The database URL over TCP to `host` with `sslmode`. */
const urlOf = (host: string, sslmode: string, database = 'wallet') =>
  `postgres://postgres:postgres@${host}:${port}/${database}?sslmode=${sslmode}`;

/** The effective DATABASE_URL of a process with these two variables. */
const configured = (url: string, ca?: string) =>
  loadConfig({ ...process.env, DATABASE_URL: url, DATABASE_SSL_CA: ca }).database.url!;

beforeAll(async () => {
  await makeCertificates(dir);
  ownServerKey();
  writeFileSync(
    file('pg_hba.conf'),
    'hostssl all all 127.0.0.0/8 scram-sha-256\nhostssl all all ::1/128 scram-sha-256\n',
  );
  port = await freePort();
  server = await startEmbeddedPostgres({
    dir: file('pg'),
    port,
    fast: true,
    settings: {
      // 127.0.0.2 reaches the same server under an address its certificate does not name.
      listen_addresses: '127.0.0.1,127.0.0.2',
      ssl: 'on',
      ssl_cert_file: file('server.pem'),
      ssl_key_file: file('server.key'),
      hba_file: file('pg_hba.conf'),
    },
  });
  await ensureDatabase(urlOf('127.0.0.1', 'require', 'postgres'), 'wallet');
  // Every test below needs the schema: the migrations are the first to connect.
  migrated = await migrate(configured(urlOf('127.0.0.1', 'verify-full'), file('ca.pem')));
});

afterAll(async () => {
  for (const pool of opened) await pool.end();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function pool(url: string): Promise<DatabasePool> {
  const made = await createDatabasePool(url, { maximumPoolSize: 2 });
  opened.push(made);
  return made;
}

const encrypted = (db: DatabasePool) =>
  db.oneFirst(
    sql.type(z.object({ ssl: z.boolean() }))`
      SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`,
  );

type Run = { code: number | null; stdout: string; stderr: string };

/** `node --import tsx <script> ...args` with these database variables, until it exits. */
function runNode(script: string, args: string[], env: Record<string, string>): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: root,
    env: { ...process.env, DATA_DIR: file('data'), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('Postgres with sslmode=verify-full and DATABASE_SSL_CA', () => {
  const tlsEnv = () => ({
    DATABASE_URL: urlOf('127.0.0.1', 'verify-full'),
    DATABASE_SSL_CA: file('ca.pem'),
  });
  /** The application `apps create` made, for the tests after it. */
  let applicationId = '';

  it('migrates, pools and listens over verified TLS', async () => {
    const url = configured(urlOf('127.0.0.1', 'verify-full'), file('ca.pem'));
    expect(migrated.applied.length).toBeGreaterThan(0);
    const db = await pool(url);
    expect(await encrypted(db)).toBe(true);
    const listener = await listenForEvents(url);
    try {
      const listening = await db.oneFirst(
        sql.type(z.object({ ssl: z.boolean() }))`
          SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
          WHERE a.query LIKE 'LISTEN %'`,
      );
      expect(listening).toBe(true);
    } finally {
      await listener.close();
    }
  });

  it('verifies the host name localhost as well as the address', async () => {
    const db = await pool(configured(urlOf('localhost', 'verify-full'), file('ca.pem')));
    expect(await encrypted(db)).toBe(true);
  });

  it('runs the CLI and the API, whose requests read and write over TLS', async () => {
    const env = tlsEnv();
    const created = await runNode(
      'tools/cli/main.ts',
      ['apps', 'create', '--name', 'Over TLS', '--currency', 'USD'],
      env,
    );
    expect(created).toMatchObject({ code: 0 });
    const { application, credentials } = JSON.parse(created.stdout) as {
      application: { id: string };
      credentials: { test: { api_key: string; secret_key: string } };
    };
    const api = spawn(process.execPath, ['--import', 'tsx', 'src/api/main.ts'], {
      cwd: root,
      env: {
        ...process.env,
        ...env,
        DATA_DIR: file('data'),
        HOST: '127.0.0.1',
        PORT: '0',
        LOG_LEVEL: 'info',
        TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const exited = new Promise((resolve) => api.once('exit', resolve));
    try {
      let said = '';
      const url = await new Promise<string>((resolve, reject) => {
        api.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          said += chunk;
          const match = /"url":"(http:[^"]+)","msg":"api listening"/.exec(said);
          if (match) resolve(match[1]!);
        });
        api.once('exit', () => reject(new Error(`the API exited:\n${said}`)));
      });
      const res = await fetch(`${url}/api/v1/users/create/`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'api-key': credentials.test.api_key,
          'secret-key': credentials.test.secret_key,
        },
        body: JSON.stringify({ app_user_id: 'tls-1', name: 'Ada', phone_number: '+23276000001' }),
      });
      expect(res.status).toBe(200);
      const db = await pool(configured(urlOf('127.0.0.1', 'verify-full'), file('ca.pem')));
      const users = await db.oneFirst(
        sql.type(z.object({ n: z.number() }))`
          SELECT count(*)::int AS n FROM users
          WHERE application_id = ${application.id} AND app_user_id = 'tls-1'`,
      );
      expect(users).toBe(1);
      applicationId = application.id;
    } finally {
      api.kill('SIGTERM');
      await exited;
    }
  });

  it('runs the worker, whose pool and relay connect over TLS', async () => {
    const config = loadConfig({
      ...process.env,
      ...tlsEnv(),
      DATA_DIR: file('data'),
      TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: `pgtls-${port}`,
      TEMPORAL_WEBHOOK_TASK_QUEUE: `pgtls-webhooks-${port}`,
    });
    // Not the maintenance queue: its worker would create the server's one schedule of each kind,
    // which the files sharing this dev server read with keys of their own.
    const worker = await startWorkerProcess(config, {
      dataDir: file('data'),
      args: ['--queues', 'payments,webhooks'],
    });
    try {
      const db = await pool(configured(urlOf('127.0.0.1', 'verify-full'), file('ca.pem')));
      // The relay's LISTEN connection is the worker's own, opened by its first relay round.
      const relay = await pollUntil(
        () =>
          db.maybeOneFirst(
            sql.type(z.object({ ssl: z.boolean() }))`
              SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
              WHERE a.query = ${`LISTEN ${RELAY_CHANNEL}`} LIMIT 1`,
          ),
        (ssl) => ssl !== null,
      );
      expect(relay).toBe(true);
    } finally {
      await worker.stop();
    }
  });

  it('runs `cli webhooks listen`, whose LISTEN connection is over TLS', async () => {
    const listen = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'tools/cli/main.ts',
        ...['webhooks', 'listen', '--app', applicationId, '--mode', 'test'],
        ...['--forward-to', 'http://127.0.0.1:9/hook'],
      ],
      {
        cwd: root,
        env: { ...process.env, ...tlsEnv(), DATA_DIR: file('data'), LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const closed = new Promise<number | null>((resolve) => listen.once('close', resolve));
    try {
      let said = '';
      listen.stderr.setEncoding('utf8').on('data', (chunk: string) => (said += chunk));
      // The secret comes once the command listens.
      await new Promise<void>((resolve, reject) => {
        listen.stdout.once('data', () => resolve());
        listen.once('close', () => reject(new Error(`the command exited:\n${said}`)));
      });
      const db = await pool(configured(urlOf('127.0.0.1', 'verify-full'), file('ca.pem')));
      const listening = await db.oneFirst(
        sql.type(z.object({ ssl: z.boolean() }))`
          SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
          WHERE a.application_name = ${LISTEN_APPLICATION_NAME}`,
      );
      expect(listening).toBe(true);
    } finally {
      listen.kill('SIGTERM');
    }
    expect(await closed).toBe(0);
  });
});

describe('a certificate TLS refuses stops the process at start with one line', () => {
  const notSigned = `DATABASE_SSL_CA: the Postgres server's certificate is not signed by ${file('other-ca.pem')}`;

  it('another CA: the API exits with the line naming DATABASE_SSL_CA, without waiting', async () => {
    const run = await runNode('src/api/main.ts', [], {
      DATABASE_URL: urlOf('127.0.0.1', 'verify-full'),
      DATABASE_SSL_CA: file('other-ca.pem'),
      PORT: '0',
      TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS!,
    });
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`api failed to start: ${notSigned} (`);
    expect(run.stderr).not.toContain('waiting for Postgres');
  });

  it('another CA: the worker exits with the same line', async () => {
    const run = await runNode('src/worker/main.ts', [], {
      DATABASE_URL: urlOf('127.0.0.1', 'verify-ca'),
      DATABASE_SSL_CA: file('other-ca.pem'),
      TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS!,
    });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toEqual([
      expect.stringContaining(`worker failed: ${notSigned} (`),
    ]);
  });

  it('another host name: the CLI exits with the line naming DATABASE_URL', async () => {
    const run = await runNode('tools/cli/main.ts', ['admins', 'list'], {
      DATABASE_URL: urlOf('127.0.0.2', 'verify-full'),
      DATABASE_SSL_CA: file('ca.pem'),
    });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n')).toEqual([
      expect.stringContaining(
        "cli failed: DATABASE_URL: the Postgres server's certificate does not match host 127.0.0.2 (",
      ),
    ]);
  });

  it('is not taken for an unreachable database, on every path', async () => {
    const otherCa = configured(urlOf('127.0.0.1', 'verify-full'), file('other-ca.pem'));
    const otherHost = configured(urlOf('127.0.0.2', 'verify-full'), file('ca.pem'));
    for (const url of [otherCa, otherHost]) {
      for (const open of [() => migrate(url), () => pool(url), () => listenForEvents(url)]) {
        const error: unknown = await open().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toMatchObject({ name: 'DatabaseSettingError' });
        expect(isDatabaseUnreachable(error)).toBe(false);
      }
    }
  });
});

describe('other modes', () => {
  it('verify-ca takes the CA but not the host name', async () => {
    const db = await pool(configured(urlOf('127.0.0.2', 'verify-ca'), file('ca.pem')));
    expect(await encrypted(db)).toBe(true);
  });

  it('require encrypts without a CA, whatever signed the certificate', async () => {
    const db = await pool(configured(urlOf('127.0.0.2', 'require')));
    expect(await encrypted(db)).toBe(true);
  });

  it('verify-full without DATABASE_SSL_CA checks the system CAs, which do not have this one', async () => {
    const error: unknown = await pool(configured(urlOf('127.0.0.1', 'verify-full'))).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      message: expect.stringMatching(
        /^DATABASE_SSL_CA: the Postgres server's certificate is not signed by a CA this system trusts/,
      ),
    });
  });
});
