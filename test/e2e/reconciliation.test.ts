import { randomUUID } from 'node:crypto';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { sql } from 'slonik';
import { paymentSyncs } from '../../src/intake/notifications';
import { listReconciliationRuns } from '../../src/db/reconciliation';
import { SandboxCardProvider } from '../../src/providers/sandbox-card';
import { ensureReconciliationSchedule } from '../../src/worker/schedules';
import { reconciliationWorkflow } from '../../src/workflows/reconciliation';
import {
  assertLedgerInvariant,
  balanceOf,
  eventsOf,
  ledgerTransactionCount,
} from '../support/database';
import type { TestApp, TestEngine } from '../support/engine';
import { sandboxWebhookSecret } from '../../src/crypto/secret-box';
import type { FakeMonimeServer } from '../support/fake-monime';
import { clientFor, createUserWithWallet, type ApiClient } from '../support/http';
import { startMonimeEngine } from '../support/live-monime';

/**
 * The `reconciliation` schedule's workflow, on the real engine: the live mobile-money
 * adapter against the fake Monime server, whose payment codes the test pays without sending
 * any notification, so that only a sync with the provider can settle the deposits.
 */

const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const GRACE_SECONDS = 600;
// Real servers on a shared machine: jest's 5-second default is too tight under load.
jest.setTimeout(60_000);

let monime: FakeMonimeServer;
let engine: TestEngine;
let app: TestApp;
let live: ApiClient;

beforeAll(async () => {
  ({ monime, engine, app, live } = await startMonimeEngine('reconciliation-test-secret', {
    RECONCILIATION_GRACE_SECONDS: String(GRACE_SECONDS),
    RECONCILIATION_CONCURRENCY: '2',
  }));
});
afterAll(async () => {
  await engine?.close();
  await monime?.close();
});

/** A pending live deposit whose payment code the payer has paid (no notification sent). */
async function paidDeposit(amount: number) {
  const { walletId } = await createUserWithWallet(live);
  const res = await live.post(DEPOSIT, { wallet_id: walletId, amount });
  expect(res.status).toBe(200);
  const codeId = res.body.payment_code.result.id as string;
  monime.markCompleted(codeId);
  return { walletId, codeId, transactionId: res.body.transaction_id as string };
}

/** Makes a payment look created `seconds` ago (the clock the grace period reads). */
const age = (transactionId: string, seconds: number) =>
  engine.pool.query(sql.unsafe`
    UPDATE transactions SET created_at = now() - make_interval(secs => ${seconds})
    WHERE id = ${transactionId}`);

const status = async (transactionId: string) =>
  (await live.get(`/api/v1/transactions/${transactionId}`)).body.status as string;

const runReconciliation = (workflowId = `reconciliation-test-${randomUUID()}`) =>
  engine.temporal.workflow.execute(reconciliationWorkflow, {
    workflowId,
    taskQueue: engine.config.temporal.maintenanceTaskQueue,
    args: [{}],
  });

describe('the reconciliation workflow', () => {
  it('syncs every payment pending past the grace period, leaves the younger ones, records the run', async () => {
    const stale = await paidDeposit(1_111);
    const alsoStale = await paidDeposit(2_222);
    const young = await paidDeposit(3_333);
    await age(stale.transactionId, GRACE_SECONDS + 60);
    await age(alsoStale.transactionId, GRACE_SECONDS * 10);
    await age(young.transactionId, GRACE_SECONDS - 60);

    const workflowId = `reconciliation-test-${randomUUID()}`;
    const result = await runReconciliation(workflowId);
    expect(result.graceSeconds).toBe(GRACE_SECONDS);
    expect(result.errors).toEqual([]);
    expect(result.changes).toEqual(
      expect.arrayContaining([
        {
          transaction_id: stale.transactionId,
          transaction_type: 'mobile_money_deposit',
          from: 'pending',
          to: 'completed',
        },
        {
          transaction_id: alsoStale.transactionId,
          transaction_type: 'mobile_money_deposit',
          from: 'pending',
          to: 'completed',
        },
      ]),
    );
    expect(result.changes.map((c) => c.transaction_id)).not.toContain(young.transactionId);

    for (const [deposit, amount] of [
      [stale, 1_111n],
      [alsoStale, 2_222n],
    ] as const) {
      expect(await status(deposit.transactionId)).toBe('completed');
      expect(await balanceOf(engine.pool, deposit.walletId)).toBe(amount);
      expect(await ledgerTransactionCount(engine.pool, deposit.transactionId)).toBe(1);
      expect((await eventsOf(engine.pool, deposit.transactionId)).map((e) => e.type)).toEqual([
        'deposit.completed',
      ]);
    }
    // Paid at the provider too, but inside the grace period: left to its notification.
    expect(await status(young.transactionId)).toBe('pending');
    expect(await balanceOf(engine.pool, young.walletId)).toBe(0n);
    expect(await ledgerTransactionCount(engine.pool, young.transactionId)).toBe(0);

    const run = (await listReconciliationRuns(engine.pool)).find(
      (r) => r.workflow_id === workflowId,
    );
    expect(run).toMatchObject({
      payments_checked: result.paymentsChecked,
      payments_changed: result.changes.length,
    });
    expect(run!.changes).toEqual(result.changes);

    // A second run finds nothing more to change for them.
    const again = await runReconciliation();
    expect(again.changes.map((c) => c.transaction_id)).not.toContain(stale.transactionId);
    expect(await balanceOf(engine.pool, stale.walletId)).toBe(1_111n);
    await assertLedgerInvariant(engine.pool);
  });

  it('records a payment still pending at the provider as checked, unchanged', async () => {
    const { walletId } = await createUserWithWallet(live);
    const res = await live.post(DEPOSIT, { wallet_id: walletId, amount: 4_444 });
    const transactionId = res.body.transaction_id as string;
    await age(transactionId, GRACE_SECONDS + 1);
    const result = await runReconciliation();
    expect(result.paymentsChecked).toBeGreaterThanOrEqual(1);
    expect(result.changes.map((c) => c.transaction_id)).not.toContain(transactionId);
    expect(await status(transactionId)).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
  });

  it('syncs a card deposit too: 3-D Secure completed at the provider, its event lost', async () => {
    const testApi = clientFor(engine.url, app, 'test');
    const { walletId } = await createUserWithWallet(testApi);
    const res = await testApi.post('/api/v1/transactions/wallet/card-deposit', {
      wallet_id: walletId,
      amount: 9,
      payment_method_id: 'pm_card_authenticationRequired',
    });
    expect(res.body.status).toBe('pending');
    const transactionId = res.body.id as string;
    // The payer authenticates at the sandbox; the event never reaches the engine.
    const sandbox = new SandboxCardProvider(engine.pool, sandboxWebhookSecret(engine.config));
    await sandbox.authenticate(res.body.provider_reference as string, true);
    await age(transactionId, GRACE_SECONDS + 1);

    const result = await runReconciliation();
    expect(result.changes).toContainEqual({
      transaction_id: transactionId,
      transaction_type: 'card_deposit',
      from: 'pending',
      to: 'completed',
    });
    expect((await testApi.get(`/api/v1/transactions/${transactionId}`)).body.status).toBe(
      'completed',
    );
    expect(await balanceOf(engine.pool, walletId)).toBe(900n);
    expect(await ledgerTransactionCount(engine.pool, transactionId)).toBe(1);
    expect((await eventsOf(engine.pool, transactionId)).map((e) => e.type)).toEqual([
      'deposit.completed',
    ]);
    await assertLedgerInvariant(engine.pool);
  });

  it('looks at every kind the registry names: mobile-money and card deposits', () => {
    // Payouts and cashouts join with one line each (src/intake/notifications.ts).
    expect(Object.keys(paymentSyncs)).toEqual(
      expect.arrayContaining(['mobile_money_deposit', 'card_deposit']),
    );
  });
});

describe('POST /api/v1/transactions/sync/{reference} accepts every kind', () => {
  it('syncs a pending deposit by its provider reference and answers other kinds as they stand', async () => {
    const deposit = await paidDeposit(5_555);
    const synced = await live.post(`/api/v1/transactions/sync/${deposit.codeId}`);
    expect(synced.status).toBe(200);
    expect(synced.body).toMatchObject({
      status: 'completed',
      transaction_id: deposit.transactionId,
    });
    expect(await balanceOf(engine.pool, deposit.walletId)).toBe(5_555n);

    // A transfer: no provider settles it; answered as it stands.
    const other = await createUserWithWallet(live);
    const transfer = await live.post('/api/v1/transactions/wallet/transfer', {
      from_wallet_id: deposit.walletId,
      to_wallet_id: other.walletId,
      amount: 10,
    });
    expect(transfer.status).toBe(200);
    const transferId = transfer.body.id as string;
    const sameTransfer = await live.post(`/api/v1/transactions/sync/${transferId}`);
    expect(sameTransfer.status).toBe(200);
    expect(sameTransfer.body).toMatchObject({ status: 'completed', transaction_id: transferId });
    expect(sameTransfer.body.message).toContain('no change');

    expect((await live.post(`/api/v1/transactions/sync/${randomUUID()}`)).status).toBe(404);
    await assertLedgerInvariant(engine.pool);
  });
});

describe('the reconciliation schedule', () => {
  it('is created once, with the configured interval and overlapping runs skipped', async () => {
    const scheduleId = `reconciliation-test-${randomUUID()}`;
    const taskQueue = engine.config.temporal.maintenanceTaskQueue;
    await ensureReconciliationSchedule(
      engine.temporal,
      taskQueue,
      { intervalSeconds: 90 },
      scheduleId,
    );
    // Again, with another interval: the existing schedule is left as it is.
    await ensureReconciliationSchedule(
      engine.temporal,
      taskQueue,
      { intervalSeconds: 30 },
      scheduleId,
    );
    const handle = engine.temporal.schedule.getHandle(scheduleId);
    try {
      const description = await handle.describe();
      expect(description.spec.intervals).toMatchObject([{ every: 90_000 }]);
      expect(description.policies.overlap).toBe(ScheduleOverlapPolicy.SKIP);
      expect(description.action).toMatchObject({
        type: 'startWorkflow',
        workflowType: 'reconciliationWorkflow',
        workflowId: scheduleId,
        taskQueue,
      });
    } finally {
      await handle.delete();
    }
  });

  it('moves a schedule created on the money queue to the maintenance queue, its interval kept', async () => {
    const scheduleId = `reconciliation-test-${randomUUID()}`;
    const { taskQueue, maintenanceTaskQueue } = engine.config.temporal;
    await ensureReconciliationSchedule(
      engine.temporal,
      taskQueue,
      { intervalSeconds: 90 },
      scheduleId,
    );
    await ensureReconciliationSchedule(
      engine.temporal,
      maintenanceTaskQueue,
      { intervalSeconds: 30 },
      scheduleId,
    );
    const handle = engine.temporal.schedule.getHandle(scheduleId);
    try {
      const description = await handle.describe();
      expect(description.spec.intervals).toMatchObject([{ every: 90_000 }]);
      expect(description.action).toMatchObject({
        type: 'startWorkflow',
        workflowType: 'reconciliationWorkflow',
        workflowId: scheduleId,
        taskQueue: maintenanceTaskQueue,
      });
    } finally {
      await handle.delete();
    }
  });

  it('defaults to a run every 5 minutes', () => {
    expect(engine.config.reconciliation.intervalSeconds).toBe(300);
  });
});
