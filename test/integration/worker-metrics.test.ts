import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { startApi, type RunningApi } from '../../src/api/server';
import { scratchConfig } from '../../tools/harness/engine';
import { freePort } from '../../src/worker/ports';
import { startTemporalDevServer, type DevServer } from '../../tools/harness/temporal';
import { createLogger } from '../../src/observability/logger';
import type { DatabasePool } from '../../src/db/pool';
import { assertLedgerInvariant, balanceOf, createTestDatabase } from '../support/database';
import { createTestApp, quietTemporalRuntime } from '../support/engine';
import { clientFor, createFundedWallet, createUserWithWallet } from '../support/http';
import { scrape, series, type Samples } from '../support/metrics';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

/**
 * The worker's metrics endpoint: `npm run worker` as production runs it, on a dev server
 * of its own because the worker creates the engine's schedules, which must not land on the shared
 * one. Payments end in the worker, so it counts them; the API counts the start.
 */
jest.setTimeout(120_000);

const TRANSFER = '/api/v1/transactions/wallet/transfer';

let dir: string;
let temporal: DevServer;
let database: { url: string; pool: DatabasePool };
let worker: WorkerProcess;
let api: RunningApi;
let metricsUrl: string;

beforeAll(async () => {
  quietTemporalRuntime();
  dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-worker-metrics-'));
  const [temporalPort, metricsPort] = [await freePort(), await freePort()];
  [temporal, database] = await Promise.all([
    startTemporalDevServer({ port: temporalPort }),
    createTestDatabase(),
  ]);
  const config = scratchConfig({
    databaseUrl: database.url,
    temporalAddress: temporal.address,
    taskQueuePrefix: 'worker-metrics',
    workflowBundle: process.env.TEST_WORKFLOW_BUNDLE,
    requestTimeoutMs: 30_000,
    env: { API_METRICS_PORT: '0' },
  });
  worker = await startWorkerProcess(config, {
    dataDir: dir,
    env: { WORKER_METRICS_PORT: String(metricsPort) },
  });
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  const logger = createLogger('info', new Writable({ write: (_c, _e, done) => done() }));
  api = await startApi(config, logger, database.url);
});

afterAll(async () => {
  await api?.close();
  await worker?.stop();
  await database?.pool.end();
  await temporal?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the worker metrics endpoint (WORKER_METRICS_PORT)', () => {
  it('serves the payments the worker ended and the Temporal SDK metrics; the API counts the start', async () => {
    const app = await createTestApp(database.pool);
    const client = clientFor(api.url, app);
    const from = await createFundedWallet(client, database.pool, 5_000n);
    const to = await createUserWithWallet(client);
    const apiBefore = await scrape(api.metricsUrl!);

    const reply = await client.post(TRANSFER, {
      from_wallet_id: from.walletId,
      to_wallet_id: to.walletId,
      amount: 7,
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ status: 'completed', transaction_type: 'transfer' });
    expect(await balanceOf(database.pool, from.walletId)).toBe(4_300n);
    expect(await balanceOf(database.pool, to.walletId)).toBe(700n);
    await assertLedgerInvariant(database.pool);

    const ended = series('payments_ended_total', { type: 'transfer', outcome: 'completed' });
    const ledger = series('ledger_transaction_duration_seconds_count', { kind: 'transfer' });
    // The worker process started fresh: exactly this one transfer ended there.
    const workerSamples: Samples = await scrape(metricsUrl);
    expect(workerSamples.get(ended)).toBe(1);
    expect(workerSamples.get(ledger)).toBe(1);
    expect(workerSamples.has(series('payments_started_total', { type: 'transfer' }))).toBe(false);
    // The SDK's exporter, read by the worker from its own loopback port: its series are there.
    const temporalSeries = [...workerSamples.keys()].filter((key) => key.startsWith('temporal_'));
    expect(temporalSeries.length).toBeGreaterThan(0);
    const completed = temporalSeries.filter((key) =>
      key.startsWith('temporal_workflow_completed{'),
    );
    expect(completed.reduce((sum, key) => sum + workerSamples.get(key)!, 0)).toBeGreaterThanOrEqual(
      1,
    );

    // The API (this process) counted the start, not the end: that is the worker's.
    const apiAfter = await scrape(api.metricsUrl!);
    const started = series('payments_started_total', { type: 'transfer' });
    expect((apiAfter.get(started) ?? 0) - (apiBefore.get(started) ?? 0)).toBe(1);
    expect(apiAfter.get(ended) ?? 0).toBe(apiBefore.get(ended) ?? 0);

    // Only /metrics is served there.
    const other = await fetch(metricsUrl.replace('/metrics', '/other'));
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ detail: 'Not found' });
  });
});
