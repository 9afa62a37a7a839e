import net from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'slonik';
import { z } from 'zod';
import { ERROR_MESSAGES } from '../../src/api/errors';
import { startApi, type RunningApi } from '../../src/api/server';
import { createDatabasePool, isDatabaseUnreachable, type DatabasePool } from '../../src/db/pool';
import { scratchConfig } from '../../tools/harness/engine';
import { createLogger } from '../../src/observability/logger';
import { createTestDatabase } from '../support/database';
import { createTestApp, quietTemporalRuntime } from '../support/engine';
import { clientFor } from '../support/http';

/**
 * A statement on a connection already taken from the pool, whose server is killed, fails
 * with the driver's bare socket error: the database unreachable (503 with Retry-After), not a 500.
 * A loopback TCP proxy in front of Postgres makes the reset real, at the next statement.
 */
jest.setTimeout(60_000);

type ResettingProxy = {
  url: string;
  /** The next connection to send anything has its socket reset instead of forwarding it. */
  resetNext: () => void;
  close: () => Promise<void>;
};

async function startResettingProxy(databaseUrl: string): Promise<ResettingProxy> {
  const target = new URL(databaseUrl);
  const host = decodeURIComponent(target.hostname);
  const port = Number(target.port || 5432);
  // A Unix socket directory in the host part, as the embedded server's URLs may have.
  const connectTo = host.startsWith('/')
    ? { path: path.join(host, `.s.PGSQL.${port}`) }
    : { host, port };
  let armed = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(connectTo);
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      if (armed) {
        armed = false;
        upstream.destroy();
        client.resetAndDestroy();
        return;
      }
      upstream.write(chunk);
    });
    upstream.pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    url: url.toString(),
    resetNext: () => {
      armed = true;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A real ECONNRESET of a socket that has nothing to do with the database. */
async function foreignReset(): Promise<Error> {
  const server = net.createServer((socket) => socket.resetAndDestroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await new Promise<Error>((resolve) => {
      const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
      socket.on('connect', () => socket.write('hello'));
      socket.on('error', resolve);
    });
  } finally {
    server.close();
  }
}

function codesOf(error: unknown): unknown[] {
  const codes: unknown[] = [];
  for (let e = error; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    codes.push((e as { code?: unknown }).code);
  }
  return codes;
}

const caught = (work: Promise<unknown>): Promise<unknown> =>
  work.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error,
  );

let pool: DatabasePool;
let proxy: ResettingProxy;
let proxied: DatabasePool;

beforeAll(async () => {
  const database = await createTestDatabase();
  pool = database.pool;
  proxy = await startResettingProxy(database.url);
  proxied = await createDatabasePool(proxy.url, { maximumPoolSize: 2 });
  await pool.query(sql.unsafe`CREATE TABLE connection_loss_probe (id int)`);
});

afterAll(async () => {
  await proxied?.end();
  await proxy?.close();
  await pool?.end();
});

const probeRows = () =>
  pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM connection_loss_probe`,
  );

describe('a pooled connection reset under a statement', () => {
  it('fails the statement with the socket error, classified as the database unreachable', async () => {
    await proxied.query(sql.unsafe`SELECT 1`);
    proxy.resetNext();
    const error = await caught(proxied.query(sql.unsafe`SELECT 1`));
    expect(codesOf(error)).toContain('ECONNRESET');
    expect(isDatabaseUnreachable(error)).toBe(true);
    // The pool recovers with a new connection.
    expect(await proxied.oneFirst(sql.unsafe`SELECT 2 AS n`)).toBe(2);
  });

  it('fails a transaction whose COMMIT meets the reset, classified the same; nothing written', async () => {
    const error = await caught(
      proxied.transaction(async (trx) => {
        await trx.query(sql.unsafe`INSERT INTO connection_loss_probe VALUES (1)`);
        proxy.resetNext();
      }),
    );
    expect(codesOf(error)).toContain('ECONNRESET');
    expect(isDatabaseUnreachable(error)).toBe(true);
    expect(await probeRows()).toBe(0);
  });

  it('does not count a socket error from elsewhere as the database, even inside a transaction', async () => {
    const foreign = await foreignReset();
    expect((foreign as NodeJS.ErrnoException).code).toBe('ECONNRESET');
    expect(isDatabaseUnreachable(foreign)).toBe(false);
    const error = await caught(
      proxied.transaction(async (trx) => {
        await trx.query(sql.unsafe`INSERT INTO connection_loss_probe VALUES (2)`);
        throw foreign;
      }),
    );
    expect(error).toBe(foreign);
    expect(isDatabaseUnreachable(error)).toBe(false);
    expect(await probeRows()).toBe(0);
  });
});

describe('the HTTP edge', () => {
  let api: RunningApi;

  beforeAll(async () => {
    quietTemporalRuntime();
    const address = process.env.TEST_TEMPORAL_ADDRESS;
    if (!address) throw new Error('TEST_TEMPORAL_ADDRESS is not set: run the tests with npm test');
    const config = scratchConfig({
      databaseUrl: proxy.url,
      temporalAddress: address,
      taskQueuePrefix: 'connection-loss',
      requestTimeoutMs: 30_000,
    });
    const logger = createLogger('info', new Writable({ write: (_c, _e, done) => done() }));
    api = await startApi(config, logger, proxy.url);
  });

  afterAll(async () => {
    await api?.close();
  });

  it('answers 503 with Retry-After when the connection is reset under the request; nothing written', async () => {
    const app = await createTestApp(pool);
    const client = clientFor(api.url, app);
    const user = { app_user_id: 'reset-user', name: 'Reset User', phone_number: '+23276000000' };
    expect((await client.get('/api/v1/wallets/')).status).toBe(200);

    proxy.resetNext();
    const refused = await client.post('/api/v1/users/create/', user);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(refused.body).toEqual({ detail: ERROR_MESSAGES.unavailable });
    const users = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM users WHERE application_id = ${app.id}`);
    expect(users).toBe(0);

    const served = await client.post('/api/v1/users/create/', user);
    expect(served.status).toBe(200);
  });
});
