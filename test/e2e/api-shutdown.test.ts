import http from 'node:http';
import { formatPayloadKeys } from '../../src/config';
import { createApp } from '../../src/api/app';
import { createProviders } from '../../src/providers';
import { createLogger } from '../../src/observability/logger';
import { payloadKeys } from '../../src/temporal/data-converter';
import { freePort } from '../../src/worker/ports';
import {
  apiReady,
  engineEnvironment,
  startEngineProcess,
  waitUntilReady,
  type EngineProcess,
} from '../../tools/harness/split';
import { assertLedgerInvariant, balanceOf } from '../support/database';
import { createFundedWallet, TRANSFER } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { listWorkflowIds, waitFor, within } from '../support/wait';

/**
 * `npm run api` stopped as a deploy stops it (docs/operations.md, Rolling deploys): SIGTERM
 * closes the listener, the request it started finishes (its keep-alive connection closed after
 * it), and the process exits 0 within its grace time.
 */
jest.setTimeout(120_000);

const engine = useTestEngine();
const { app, api } = useTestApp(engine);
const started: EngineProcess[] = [];

afterAll(async () => {
  for (const child of started) await child.kill();
});

/** `npm run api` on the test's database, Temporal and task queue, with `env` added. */
async function startApiProcess(env: Record<string, string>) {
  const port = await freePort();
  const child = startEngineProcess(
    'api',
    engineEnvironment({
      DATABASE_URL: engine.config.database.url!,
      TEMPORAL_ADDRESS: engine.config.temporal.address!,
      TEMPORAL_TASK_QUEUE: engine.config.temporal.taskQueue,
      TEMPORAL_PAYLOAD_KEYS: formatPayloadKeys(payloadKeys(engine.config)),
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      ...env,
    }),
  );
  started.push(child);
  const url = `http://127.0.0.1:${port}`;
  await waitUntilReady(child, () => apiReady(url), 60_000);
  return { child, port, url };
}

/** A POST over a keep-alive connection; its status, `Connection` header and JSON body. */
function post(port: number, path: string, body: unknown, headers: Record<string, string>) {
  const agent = new http.Agent({ keepAlive: true });
  return new Promise<{ status: number; connection: string | undefined; body: any }>(
    (resolve, reject) => {
      const request = http.request(
        { host: '127.0.0.1', port, path, method: 'POST', agent, headers },
        (response) => {
          let text = '';
          response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
          response.on('end', () => {
            agent.destroy();
            resolve({
              status: response.statusCode ?? 0,
              connection: response.headers.connection,
              body: text ? JSON.parse(text) : undefined,
            });
          });
        },
      );
      request.on('error', (error) => {
        agent.destroy();
        reject(error);
      });
      request.setHeader('content-type', 'application/json');
      request.end(JSON.stringify(body));
    },
  );
}

/** Whether a new connection to `port` is refused. */
const refused = (port: number) =>
  fetch(`http://127.0.0.1:${port}/healthz`).then(
    () => false,
    () => true,
  );

describe('npm run api on SIGTERM', () => {
  it('refuses new connections, finishes the transfer it started with Connection: close, exits 0', async () => {
    const { child, port } = await startApiProcess({
      API_SHUTDOWN_GRACE_MS: '60000',
      API_REQUEST_TIMEOUT_MS: '60000',
    });
    const from = await createFundedWallet(api, engine.pool, 5_000n);
    const to = await createFundedWallet(api, engine.pool, 0n);
    // No worker: the transfer waits in Temporal until one comes back, after the SIGTERM.
    await engine.stopWorker();
    const answer = post(
      port,
      TRANSFER,
      { from_wallet_id: from.walletId, to_wallet_id: to.walletId, amount: 12.5 },
      {
        'api-key': app.credentials.test.apiKey,
        'secret-key': app.credentials.test.secretKey,
        'Idempotency-Key': `shutdown-${Date.now()}`,
      },
    );
    await listWorkflowIds(engine.temporal, `WalletId = '${from.walletId}'`);
    process.kill(child.pid, 'SIGTERM');
    expect(await waitFor(() => refused(port), 10_000)).toBe(true);
    expect(child.running()).toBe(true);
    await engine.startWorker();
    const reply = await answer;
    expect({ status: reply.status, connection: reply.connection }).toEqual({
      status: 200,
      connection: 'close',
    });
    expect(reply.body).toMatchObject({ amount: 12.5, status: 'completed' });
    // Not held open by an idle keep-alive connection (its timeout is over a minute).
    expect(await within(child.exited, 5_000, 'still running')).toBe(0);
    expect(await balanceOf(engine.pool, from.walletId)).toBe(3_750n);
    expect(await balanceOf(engine.pool, to.walletId)).toBe(1_250n);
    await assertLedgerInvariant(engine.pool);
  });
});

describe('readiness while draining', () => {
  it('answers /readyz 503 with a detail once the process is stopping', async () => {
    const config = engine.config;
    let draining = false;
    const server = createApp({
      config,
      pool: engine.pool,
      temporal: engine.temporal,
      logger: createLogger('silent'),
      providers: createProviders({ config, pool: engine.pool }),
      draining: () => draining,
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as { port: number };
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(200);
      draining = true;
      const stopping = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect({ status: stopping.status, body: await stopping.json() }).toEqual({
        status: 503,
        body: { detail: 'Not ready: shutting down' },
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
