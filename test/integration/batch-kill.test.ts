import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'slonik';
import { z } from 'zod';
import { assertLedgerInvariant, balanceOf } from '../support/database';
import { createFundedWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { pollUntil } from '../support/wait';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process';

/**
 * A bulk payment whose worker is killed (SIGKILL) while items run: another worker takes the batch
 * over from its history, and every item is paid exactly once.
 */
const engine = useTestEngine();
const { api } = useTestApp(engine);
let dir: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-batch-kill-'));
  // Only the worker processes below run the batch.
  await engine.stopWorker();
});
afterAll(async () => {
  for (const worker of workers) await worker.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});
jest.setTimeout(240_000);

const start = async (name: string) => {
  const worker = await startWorkerProcess(engine.config, { dataDir: path.join(dir, name) });
  workers.push(worker);
  return worker;
};

describe('a bulk payment whose worker is killed', () => {
  it('resumes on another worker and pays every item once', async () => {
    // More than one run of the batch: the kill and the continue-as-new both on the way.
    const ITEMS = 600;
    const from = await createFundedWallet(api, engine.pool, 100_000n);
    const to = await createFundedWallet(api, engine.pool, 0n);
    const first = await start('first');
    const started = await api.post(
      '/api/v1/batches',
      {
        kind: 'transfer',
        items: Array.from({ length: ITEMS }, () => ({
          from_wallet_id: from.walletId,
          to_wallet_id: to.walletId,
          amount: 0.01,
        })),
      },
      { 'Idempotency-Key': `kill-${Date.now()}` },
    );
    expect(started.status).toBe(202);
    const id = started.body.id as string;
    const midway = await pollUntil(
      () => api.get(`/api/v1/batches/${id}`),
      (reply) => reply.body.succeeded >= 20,
      { timeoutMs: 60_000, intervalMs: 20 },
    );
    expect(midway.body.status).toBe('processing');
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));

    await start('second');
    const done = await pollUntil(
      () => api.get(`/api/v1/batches/${id}`),
      (reply) => reply.body.status !== 'processing',
      { timeoutMs: 180_000, intervalMs: 200 },
    );
    expect(done.body).toMatchObject({ status: 'completed', succeeded: ITEMS, failed: 0 });
    // Each item's payment once: one row, one ledger transaction, one event.
    const written = await engine.pool.one(sql.type(
      z.object({ rows: z.number(), ledger: z.number(), events: z.number(), once: z.boolean() }),
    )`
      SELECT count(DISTINCT t.id)::int AS rows, count(DISTINCT l.id)::int AS ledger,
        count(DISTINCT e.id)::int AS events,
        bool_and((SELECT count(*) FROM ledger_transactions x WHERE x.transaction_id = i.transaction_id) = 1)
          AS once
      FROM batch_items i
        JOIN transactions t ON t.id = i.transaction_id
        JOIN ledger_transactions l ON l.transaction_id = i.transaction_id
        JOIN events e ON e.transaction_id = i.transaction_id
      WHERE i.batch_id = ${id}`);
    expect(written).toEqual({ rows: ITEMS, ledger: ITEMS, events: ITEMS, once: true });
    expect(await balanceOf(engine.pool, to.walletId)).toBe(BigInt(ITEMS));
    expect(await balanceOf(engine.pool, from.walletId)).toBe(100_000n - BigInt(ITEMS));
    await assertLedgerInvariant(engine.pool);
  });
});
