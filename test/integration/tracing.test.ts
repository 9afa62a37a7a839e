import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { startApi, type RunningApi } from '../../src/api/server';
import { loadConfig } from '../../src/config';
import { scratchConfig } from '../../tools/harness/engine';
import { freePort } from '../../src/worker/ports';
import { startTemporalDevServer, type DevServer } from '../../tools/harness/temporal';
import { createLogger } from '../../src/observability/logger';
import type { DatabasePool } from '../../src/db/pool';
import { assertLedgerInvariant, balanceOf, createTestDatabase } from '../support/database';
import { createTestApp, quietTemporalRuntime } from '../support/engine';
import { clientFor, createFundedWallet, createUserWithWallet, transfer } from '../support/http';
import { waitFor } from '../support/wait';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

/**
 * Tracing (docs/operations.md "Tracing"): `npm run worker`, on a dev server of its own as
 * it creates the engine's schedules, and the API here export to this test's OTLP receiver; a
 * transfer's trace runs from the API's workflow start into the worker. Unconfigured, nothing sent.
 */
jest.setTimeout(120_000);

type ReceivedSpan = {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  attributes: Record<string, unknown>;
};

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean };
type OtlpAttribute = { key: string; value: OtlpValue };
type OtlpExport = {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: {
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        attributes?: OtlpAttribute[];
      }[];
    }[];
  }[];
};

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries(
    (list ?? []).map(({ key, value }) => [
      key,
      value.stringValue ?? value.intValue ?? value.boolValue,
    ]),
  );
}

/** A collector on loopback: what the OTLP/HTTP exporter posts (JSON) to /v1/traces. */
function startReceiver(): Promise<{
  server: Server;
  url: string;
  spans: ReceivedSpan[];
  requests: { path: string; contentType: string }[];
}> {
  const spans: ReceivedSpan[] = [];
  const requests: { path: string; contentType: string }[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({
        path: request.url ?? '',
        contentType: request.headers['content-type'] ?? '',
      });
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport;
      for (const resourceSpan of body.resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpan.resource?.attributes)['service.name']);
        for (const scope of resourceSpan.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              service,
              name: span.name,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              attributes: attributesOf(span.attributes),
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}`, spans, requests });
    });
  });
}

let dir: string;
let temporal: DevServer;
let database: { url: string; pool: DatabasePool };
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let worker: WorkerProcess;
let api: RunningApi;
let untracedApi: RunningApi;

beforeAll(async () => {
  quietTemporalRuntime();
  dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-tracing-'));
  [temporal, database, receiver] = await Promise.all([
    startTemporalDevServer({ port: await freePort() }),
    createTestDatabase(),
    startReceiver(),
  ]);
  const scratch = (env: Record<string, string>) =>
    scratchConfig({
      databaseUrl: database.url,
      temporalAddress: temporal.address,
      taskQueuePrefix: 'tracing',
      workflowBundle: process.env.TEST_WORKFLOW_BUNDLE,
      requestTimeoutMs: 30_000,
      env,
    });
  const config = scratch({
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
    OTEL_SERVICE_NAME: 'tracing-test-api',
  });
  worker = await startWorkerProcess(config, {
    dataDir: dir,
    env: {
      // With tracing the worker bundles its own workflows: a prebuilt bundle has no interceptors.
      OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/`,
      OTEL_SERVICE_NAME: 'tracing-test-worker',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
  const logger = createLogger('info', new Writable({ write: (_c, _e, done) => done() }));
  api = await startApi(config, logger, database.url);
  // The same engine without the variables, on the worker's task queue.
  untracedApi = await startApi({ ...scratch({}), temporal: config.temporal }, logger, database.url);
});

afterAll(async () => {
  await api?.close();
  await untracedApi?.close();
  await worker?.stop();
  await database?.pool.end();
  await temporal?.stop();
  await new Promise((resolve) => receiver?.server.close(resolve));
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A completed transfer of `amount` through the API at `apiUrl`, between two new wallets. */
async function completedTransfer(apiUrl: string, amount: number): Promise<{ id: string }> {
  const client = clientFor(apiUrl, await createTestApp(database.pool));
  const from = await createFundedWallet(client, database.pool, 5_000n);
  const to = await createUserWithWallet(client);
  const payment = await transfer(client, from.walletId, to.walletId, amount);
  expect(payment).toMatchObject({ status: 'completed', transaction_type: 'transfer' });
  expect(await balanceOf(database.pool, from.walletId)).toBe(5_000n - BigInt(amount) * 100n);
  expect(await balanceOf(database.pool, to.walletId)).toBe(BigInt(amount) * 100n);
  await assertLedgerInvariant(database.pool);
  return payment as { id: string };
}

/** The span of the ledger step of transfer `transactionId` (it names its workflow). */
function activityOf(transactionId: string): ReceivedSpan | undefined {
  return receiver.spans.find(
    (s) =>
      s.name === 'RunActivity:transferFunds' &&
      s.attributes.temporalWorkflowId === `transfer-${transactionId}`,
  );
}

/** The workflow run span of transfer `transactionId`: the one in its ledger step's trace. */
function runOf(transactionId: string): ReceivedSpan | undefined {
  const activity = activityOf(transactionId);
  return receiver.spans.find(
    (s) => s.name === 'RunWorkflow:transferWorkflow' && s.traceId === activity?.traceId,
  );
}

describe('tracing (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('traces a transfer from the API workflow start through the workflow run to its activity', async () => {
    const { id } = await completedTransfer(api.url, 7);

    // The API's batch goes out within its 5 s schedule, the worker's within 100 ms.
    const start = () =>
      receiver.spans.find(
        (s) =>
          s.name === 'StartWorkflow:transferWorkflow' &&
          s.attributes.temporalWorkflowId === `transfer-${id}`,
      );
    const arrived = await waitFor(() => start() !== undefined && runOf(id) !== undefined, 30_000);
    expect(arrived).toBe(true);
    expect(receiver.requests.every((r) => r.path === '/v1/traces')).toBe(true);
    expect(receiver.requests.every((r) => r.contentType.startsWith('application/json'))).toBe(true);

    // One trace: the API's start span is the workflow run's parent; the activity is in it.
    const started = start()!;
    const run = runOf(id)!;
    expect(started.service).toBe('tracing-test-api');
    expect(run.service).toBe('tracing-test-worker');
    expect(run.traceId).toBe(started.traceId);
    expect(run.parentSpanId).toBe(started.spanId);
    const inTrace = receiver.spans.filter((s) => s.traceId === started.traceId);
    const scheduled = inTrace.find((s) => s.name === 'StartActivity:transferFunds');
    const executed = activityOf(id);
    expect(scheduled).toMatchObject({ service: 'tracing-test-worker', parentSpanId: run.spanId });
    expect(executed).toMatchObject({
      service: 'tracing-test-worker',
      parentSpanId: scheduled!.spanId,
    });
  });

  it('sends nothing from an API without the variables: its payments start no trace', async () => {
    const { id } = await completedTransfer(untracedApi.url, 3);

    // The (traced) worker runs the payment; the untraced API started it without a span.
    expect(await waitFor(() => runOf(id) !== undefined, 30_000)).toBe(true);
    const run = runOf(id)!;
    expect(run.parentSpanId).toBe('');
    expect(
      receiver.spans.some(
        (s) =>
          s.service === 'tracing-test-api' && s.attributes.temporalWorkflowId === `transfer-${id}`,
      ),
    ).toBe(false);
    expect(receiver.spans.filter((s) => s.traceId === run.traceId).map((s) => s.service)).toEqual(
      expect.not.arrayContaining(['tracing-test-api']),
    );
  });
});

describe('the tracing configuration', () => {
  it('is off unless an OTLP endpoint is set; the traces endpoint wins over the base one', () => {
    expect(loadConfig({}).tracing).toEqual({
      endpoint: undefined,
      serviceName: 'wallet-payments-engine',
    });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }).tracing.endpoint).toBeUndefined();
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/' }).tracing.endpoint,
    ).toBe('http://127.0.0.1:4318/v1/traces');
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4319/traces',
        OTEL_SERVICE_NAME: 'payments',
      }).tracing,
    ).toEqual({ endpoint: 'http://127.0.0.1:4319/traces', serviceName: 'payments' });
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
  });
});
