import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { sql } from 'slonik';
import { z } from 'zod';
import { startApi, type RunningApi } from '../../src/api/server';
import type { Config } from '../../src/config';
import type { DatabasePool } from '../../src/db/pool';
import { freePort } from '../../src/worker/ports';
import { createLogger } from '../../src/observability/logger';
import { temporalDataConverter } from '../../src/temporal/data-converter';
import { scratchConfig } from '../../tools/harness/engine';
import { startTemporalDevServer, type DevServer } from '../../tools/harness/temporal';
import { MAINTENANCE_SCHEDULE_ID } from '../../src/worker/schedules';
import { assertLedgerInvariant, balanceOf, createTestDatabase } from '../support/database';
import { createTestApp, quietTemporalRuntime } from '../support/engine';
import { clientFor, createFundedWallet, createUserWithWallet, transfer } from '../support/http';
import { pollUntil } from '../support/wait';
import { startReceiver, type Receiver } from '../support/webhook-receiver';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

/**
 * A task queue per kind of work: `npm run worker -- --queues LIST` as production runs it, each
 * subset alone. On a dev server of its own, since the maintenance worker creates the schedules.
 */
jest.setTimeout(180_000);

const root = path.resolve(__dirname, '../..');

let dir: string;
let temporal: DevServer;
let connection: Connection;
let client: Client;
let database: { url: string; pool: DatabasePool };
let config: Config;
let api: RunningApi;
let receiver: Receiver;
const workers: WorkerProcess[] = [];
const queuesOf = new Map<WorkerProcess, string>();

beforeAll(async () => {
  quietTemporalRuntime();
  dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-task-queues-'));
  [temporal, database, receiver] = await Promise.all([
    freePort().then((port) => startTemporalDevServer({ port })),
    createTestDatabase(),
    startReceiver(),
  ]);
  config = scratchConfig({
    databaseUrl: database.url,
    temporalAddress: temporal.address,
    taskQueuePrefix: 'task-queues',
    workflowBundle: process.env.TEST_WORKFLOW_BUNDLE,
    requestTimeoutMs: 30_000,
    env: {
      WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    },
  });
  const logger = createLogger('info', new Writable({ write: (_c, _e, done) => done() }));
  api = await startApi(config, logger, database.url);
  connection = await Connection.connect({ address: temporal.address });
  client = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter: temporalDataConverter(config),
  });
});

afterAll(async () => {
  for (const worker of workers) await worker.stop();
  await api?.close();
  await connection?.close();
  await receiver?.close();
  await database?.pool.end();
  await temporal?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function worker(queues: string, env?: Record<string, string>): Promise<WorkerProcess> {
  const started = await startWorkerProcess(config, {
    dataDir: dir,
    args: ['--queues', queues],
    ...(env ? { env } : {}),
  });
  workers.push(started);
  queuesOf.set(started, queues);
  return started;
}

const deliveriesOf = (eventId: string) =>
  database.pool.any(sql.type(z.object({ status: z.string() }))`
    SELECT status FROM webhook_deliveries WHERE event_id = ${eventId}`);

describe('npm run worker -- --queues', () => {
  it('moves money with the payments queue alone while webhooks wait, delivered once a webhooks worker runs', async () => {
    const payments = await worker('payments');
    const app = await createTestApp(database.pool);
    const http = clientFor(api.url, app);
    const subscribed = await http.post('/api/v1/webhooks/subscriptions', {
      url: receiver.url('/queues'),
      events: ['transfer.completed'],
    });
    expect(subscribed.status).toBe(201);
    const from = await createFundedWallet(http, database.pool, 5_000n);
    const to = await createUserWithWallet(http);

    const moved = await transfer(http, from.walletId, to.walletId, 12.5);
    expect(moved).toMatchObject({ status: 'completed', transaction_type: 'transfer' });
    expect(await balanceOf(database.pool, from.walletId)).toBe(3_750n);
    expect(await balanceOf(database.pool, to.walletId)).toBe(1_250n);
    await assertLedgerInvariant(database.pool);
    const eventId = await database.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM events WHERE transaction_id = ${moved.id} AND type = 'transfer.completed'`);

    // No worker polls the webhook queue: the event waits in the outbox, nothing is posted.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(receiver.received.filter((r) => r.path === '/queues')).toEqual([]);
    expect(await deliveriesOf(eventId)).toEqual([]);
    expect(payments.output()).not.toContain('worker failed');

    await worker('webhooks');
    const received = await receiver.waitFor((r) => r.payload?.id === eventId, 60_000);
    expect(received.payload).toMatchObject({ type: 'transfer.completed' });
    expect(received.payload?.data).toMatchObject({ id: moved.id });
    const delivered = await pollUntil(
      () => deliveriesOf(eventId),
      (rows) => rows[0]?.status === 'delivered',
    );
    expect(delivered).toEqual([{ status: 'delivered' }]);
  });

  it('runs the maintenance schedule on the maintenance queue with --queues maintenance alone', async () => {
    const expired = randomUUID();
    const app = await createTestApp(database.pool);
    await database.pool.query(sql.unsafe`
      INSERT INTO event_listeners (id, application_id, mode, expires_at)
      VALUES (${expired}, ${app.id}, 'test', now() - interval '1 second')`);
    await worker('maintenance');
    const schedule = client.schedule.getHandle(MAINTENANCE_SCHEDULE_ID);
    const described = await pollUntil(
      () => schedule.describe().catch(() => null),
      (found) => found !== null,
      { timeoutMs: 30_000 },
    );
    expect(described?.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'maintenanceWorkflow',
      taskQueue: config.temporal.maintenanceTaskQueue,
    });

    await schedule.trigger();
    const ran = await pollUntil(
      () => schedule.describe(),
      (found) => found.info.recentActions.length > 0,
    );
    const action = ran.info.recentActions[0]!.action;
    const run = client.workflow.getHandle(
      action.workflow.workflowId,
      action.workflow.firstExecutionRunId,
    );
    await run.result();
    expect((await run.describe()).taskQueue).toBe(config.temporal.maintenanceTaskQueue);
    const left = await database.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM event_listeners WHERE id = ${expired}`);
    expect(left).toEqual([]);
  });

  it('hands the webhook relay to another worker at once when its worker gets SIGTERM', async () => {
    for (const running of workers.filter((w) => queuesOf.get(w) === 'webhooks')) {
      await running.stop();
    }
    const longGrace = { WORKER_SHUTDOWN_GRACE_MS: '60000' };
    const first = await worker('webhooks', longGrace);
    if (!workers.some((w) => queuesOf.get(w) === 'payments')) await worker('payments');
    const app = await createTestApp(database.pool);
    const http = clientFor(api.url, app);
    const subscribed = await http.post('/api/v1/webhooks/subscriptions', {
      url: receiver.url('/handover'),
      events: ['transfer.completed'],
    });
    expect(subscribed.status).toBe(201);
    const from = await createFundedWallet(http, database.pool, 5_000n);
    const to = await createUserWithWallet(http);
    const delivered = async () => {
      const moved = await transfer(http, from.walletId, to.walletId, 1);
      expect(moved.status).toBe('completed');
      await receiver.waitFor((r) => r.payload?.data?.id === moved.id, 60_000);
    };
    // The only webhooks worker runs the relay's round, as this delivery shows.
    await delivered();

    await worker('webhooks', longGrace);
    const began = Date.now();
    await first.stop();
    // Its relay round ends when it starts to stop, well inside the grace time.
    expect(Date.now() - began).toBeLessThan(20_000);
    expect(first.child.exitCode).toBe(0);
    expect(first.output()).toContain('worker stopping');
    await delivered();
    expect(receiver.received.filter((r) => r.path === '/handover')).toHaveLength(2);
  });

  it('refuses an unknown queue name with one line and exit status 2', async () => {
    const run = promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'src/worker/main.ts', '--queues', 'payments,billing'],
      { cwd: root, env: { PATH: process.env.PATH, HOME: process.env.HOME } },
    );
    const failure = await run.then(
      () => null,
      (error: unknown) => error as { code: number; stdout: string; stderr: string },
    );
    expect(failure?.code).toBe(2);
    expect(failure?.stdout).toBe('');
    expect(failure?.stderr).toBe(
      '--queues: unknown queue "billing"; expected a comma-separated list of payments, webhooks, maintenance\n',
    );
  });
});
