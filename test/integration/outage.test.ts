import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'slonik';
import { z } from 'zod';
import { startApi, type RunningApi } from '../../src/api/server';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool';
import { scratchConfig } from '../../tools/harness/engine';
import { freePort } from '../../src/worker/ports';
import {
  startEmbeddedPostgres,
  startMigratedPostgres,
  type EmbeddedDatabase,
} from '../../tools/harness/postgres';
import { startTemporalDevServer, type DevServer } from '../../tools/harness/temporal';
import { createLogger } from '../../src/observability/logger';
import { runResilientWorker, type ResilientWorker } from '../../src/worker/resilient';
import { assertLedgerInvariant, balanceOf } from '../support/database';
import { createTestApp, quietTemporalRuntime } from '../support/engine';
import {
  clientFor,
  createFundedWallet,
  createUserWithWallet,
  postUntilDefinitive,
  TRANSFER,
  type ApiClient,
} from '../support/http';

/**
 * Failure semantics (docs/operations.md "Supervision and outages"): while its Postgres or
 * Temporal is SIGKILLed, the API answers 503 with Retry-After, /readyz 503, /healthz 200, in time;
 * once it is back, the same processes serve again and a retried payment moves its money once.
 */
jest.setTimeout(120_000);

/** The bound of the issue: every answer during an outage arrives within this. */
const ANSWER_WITHIN_MS = 2_000;

let dir: string;
let postgres: EmbeddedDatabase;
let pgPort: number;
let temporal: DevServer;
let temporalPort: number;
let pool: DatabasePool;
let worker: ResilientWorker;
let api: RunningApi;
let client: ApiClient;
let credentials: Record<string, string> = {};

beforeAll(async () => {
  quietTemporalRuntime();
  dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-outage-'));
  await chmod(dir, 0o755);
  [pgPort, temporalPort] = [await freePort(), await freePort()];
  const [database, dev] = await Promise.all([
    // Durable, as npm start runs it: without fsync and synchronous commit, a killed server
    // loses the last commits it acknowledged.
    startMigratedPostgres({ dir, port: pgPort, database: 'outage', fast: false }),
    startTemporalDevServer({ port: temporalPort }),
  ]);
  postgres = database.server;
  temporal = dev;
  const config = scratchConfig({
    databaseUrl: database.url,
    temporalAddress: temporal.address,
    taskQueuePrefix: 'outage',
    workflowBundle: process.env.TEST_WORKFLOW_BUNDLE,
    requestTimeoutMs: 30_000,
  });
  const logger = createLogger('info', new Writable({ write: (_c, _e, done) => done() }));
  pool = await createDatabasePool(database.url, { maximumPoolSize: 10 });
  worker = runResilientWorker({ config, pool, logger });
  await worker.ready;
  api = await startApi(config, logger, database.url);
});

afterAll(async () => {
  await api?.close();
  await worker?.stop();
  await pool?.end();
  await temporal?.stop();
  await postgres?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A request the client abandons after ANSWER_WITHIN_MS (a failed test, not a hang). */
async function promptly(method: string, route: string, body?: unknown, key?: string) {
  const response = await fetch(`${api.url}${route}`, {
    method,
    headers: {
      ...credentials,
      ...(key ? { 'Idempotency-Key': key } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: (await response.json()) as { detail?: string; status?: string },
  };
}

const paymentsOf = (walletId: string) =>
  pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM transactions WHERE wallet_id = ${walletId}`);

describe('a dependency down, then back', () => {
  let from: string;
  let to: string;

  beforeAll(async () => {
    const app = await createTestApp(pool);
    client = clientFor(api.url, app);
    credentials = {
      'api-key': app.credentials.test.apiKey,
      'secret-key': app.credentials.test.secretKey,
    };
    from = (await createFundedWallet(client, pool, 10_000n)).walletId;
    to = (await createUserWithWallet(client)).walletId;
    const first = await client.post(
      TRANSFER,
      { from_wallet_id: from, to_wallet_id: to, amount: 1 },
      {
        'Idempotency-Key': 'before',
      },
    );
    expect(first.status).toBe(200);
  });

  it('Temporal killed: 503 with Retry-After at once, nothing moved; served again once it is back', async () => {
    process.kill(temporal.pid, 'SIGKILL');
    await temporal.exited;

    const body = { from_wallet_id: from, to_wallet_id: to, amount: 2 };
    const refused = await promptly('POST', TRANSFER, body, 'during-temporal');
    expect(refused.status).toBe(503);
    expect(refused.retryAfter).toBe('2');
    expect(refused.body.detail).toMatch(/not answering; retry/);
    const ready = await promptly('GET', '/readyz');
    expect(ready).toMatchObject({
      status: 503,
      body: { detail: 'Not ready: temporal did not answer' },
    });
    expect((await promptly('GET', '/healthz')).status).toBe(200);
    expect(await balanceOf(pool, from)).toBe(9_900n);
    expect(await paymentsOf(from)).toBe(1);

    // The same port, a new (in-memory) server: the API and the worker find it by themselves.
    temporal = await startTemporalDevServer({ port: temporalPort });
    const retried = await postUntilDefinitive(client, TRANSFER, body, 'during-temporal');
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ status: 'completed', amount: 2 });
    expect((await promptly('GET', '/readyz')).body).toEqual({ status: 'ready' });
    expect(await balanceOf(pool, from)).toBe(9_700n);
    expect(await balanceOf(pool, to)).toBe(300n);
    expect(await paymentsOf(from)).toBe(2);
  });

  it('Postgres killed: 503 with Retry-After at once; served again once it is back', async () => {
    process.kill(postgres.pid, 'SIGKILL');
    await postgres.exited;

    const body = { from_wallet_id: from, to_wallet_id: to, amount: 3 };
    const refused = await promptly('POST', TRANSFER, body, 'during-postgres');
    expect(refused.status).toBe(503);
    expect(refused.retryAfter).toBe('2');
    const read = await promptly('GET', '/api/v1/wallets/');
    expect(read).toMatchObject({ status: 503, retryAfter: '2' });
    const ready = await promptly('GET', '/readyz');
    expect(ready).toMatchObject({
      status: 503,
      body: { detail: 'Not ready: postgres did not answer' },
    });
    expect((await promptly('GET', '/healthz')).status).toBe(200);

    await postgres.stop();
    postgres = await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port: pgPort });
    const retried = await postUntilDefinitive(client, TRANSFER, body, 'during-postgres');
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ status: 'completed', amount: 3 });
    expect((await promptly('GET', '/readyz')).body).toEqual({ status: 'ready' });
    expect(await balanceOf(pool, from)).toBe(9_400n);
    expect(await balanceOf(pool, to)).toBe(600n);
    expect(await paymentsOf(from)).toBe(3);
    await assertLedgerInvariant(pool);
  });
});
