import { formatPayloadKeys } from '../../config';
import { payloadKeys } from '../../temporal/data-converter';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { startApi, type RunningApi } from '../../api/server';
import { scratchConfig } from '../../tools/harness/engine';
import { freePort } from '../../net/ports';
import { startTemporalDevServer, type DevServer } from '../../tools/harness/temporal';
import { createLogger } from '../../observability/logger';
import type { DatabasePool } from '../../db/pool';
import {
  assertLedgerInvariant,
  balanceOf,
  createTestDatabase,
  fundWallet,
} from '../support/database';
import { createTestApp, quietTemporalRuntime } from '../support/engine';
import { clientFor, createUserWithWallet } from '../support/http';
import { scrape, series, type Samples } from '../support/metrics';

/**
 * The worker's metrics endpoint (issue 12): `npm run worker` as production runs it, with
 * WORKER_METRICS_PORT, against a Temporal dev server of its own (the worker creates the
 * engine's schedules, which must not land on the shared one). Payments end in the worker, so
 * they are counted there, beside the Temporal SDK's own metrics; the API counts the start.
 */
jest.setTimeout(120_000);

const root = path.resolve(__dirname, '../..');
const TRANSFER = '/api/v1/transactions/wallet/transfer';

let dir: string;
let temporal: DevServer;
let database: { url: string; pool: DatabasePool };
let worker: ChildProcess;
let output = '';
let api: RunningApi;
let metricsUrl: string;

async function waitFor(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

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
  worker = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: dir,
      // The API of this test encrypts with its data directory's key: the worker must share it.
      TEMPORAL_PAYLOAD_KEYS: formatPayloadKeys(payloadKeys(config)),
      HOST: '127.0.0.1',
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: config.temporal.taskQueue,
      ...(process.env.TEST_WORKFLOW_BUNDLE
        ? { TEMPORAL_WORKFLOW_BUNDLE: process.env.TEST_WORKFLOW_BUNDLE }
        : {}),
      WORKER_METRICS_PORT: String(metricsPort),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  worker.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  worker.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const up = await waitFor(
    () => output.includes('worker running') || worker.exitCode !== null,
    90_000,
  );
  if (!up || worker.exitCode !== null) throw new Error(`the worker did not come up:\n${output}`);
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  const logger = createLogger('info', new Writable({ write: (_c, _e, done) => done() }));
  api = await startApi(config, logger, database.url);
});

afterAll(async () => {
  await api?.close();
  if (worker && worker.exitCode === null) {
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.kill('SIGTERM');
    await exited;
  }
  await database?.pool.end();
  await temporal?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the worker metrics endpoint (WORKER_METRICS_PORT)', () => {
  it('serves the payments the worker ended and the Temporal SDK metrics; the API counts the start', async () => {
    const app = await createTestApp(database.pool);
    const client = clientFor(api.url, app);
    const from = await createUserWithWallet(client);
    const to = await createUserWithWallet(client);
    await fundWallet(database.pool, from.walletId, 5_000n);
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
