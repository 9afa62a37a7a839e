import { assertLedgerInvariant, balanceOf, eventsOf } from '../support/database';
import type { TestEngine } from '../support/engine';
import { sandboxWebhookSecret } from '../../src/crypto/secret-box';
import type { FakeMonimeServer } from '../support/fake-monime';
import { clientFor, createFundedWallet, type ApiClient } from '../support/http';
import { startMonimeEngine } from '../support/live-monime';
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { workflowIds } from '../../src/workflows/ids';
import { reconciliationWorkflow } from '../../src/workflows/reconciliation';

const SECRET = 'live-webhook-secret-for-cashouts';
const CASHOUT = '/api/v1/transactions/wallet/mobile-money-cashout';
let monime: FakeMonimeServer;
let engine: TestEngine;
let live: ApiClient;

beforeAll(async () => {
  ({ monime, engine, live } = await startMonimeEngine(SECRET, { MONIME_TIMEOUT_MS: '300' }));
});
afterAll(async () => {
  await engine?.close();
  await monime?.close();
});

const fundedLiveWallet = async (amount: bigint): Promise<string> =>
  (await createFundedWallet(live, engine.pool, amount)).walletId;

describe('Live Mode cashouts through the Monime-style adapter', () => {
  it('makes one payout despite a 5xx and a lost answer, then settles on the signed notification', async () => {
    const walletId = await fundedLiveWallet(20_000n);
    monime.failNext(1, 503);
    monime.failNext(1, 'timeout');
    const res = await live.post(CASHOUT, {
      wallet_id: walletId,
      amount: 10_000,
      phone_number: '+23276123456',
    });
    expect(res.status).toBe(200);
    const key = workflowIds.cashout(res.body.id);
    const payouts = monime.payoutsFor(key);
    expect(payouts).toHaveLength(1);
    expect(res.body).toMatchObject({
      status: 'pending',
      amount: 100,
      provider_fee: 1,
      provider_reference: payouts[0]!.id,
    });
    expect(payouts[0]!.destination).toEqual({ type: 'momo', phoneNumber: '+23276123456' });
    expect(payouts[0]!.amount).toEqual({ currency: 'SLE', value: 10_000 });
    expect(await balanceOf(engine.pool, walletId)).toBe(20_000n - 10_100n);

    monime.setPayoutStatus(payouts[0]!.id, 'completed');
    const note = monime.payoutNotificationFor(payouts[0]!.id);
    const bare = clientFor(engine.url, null);
    const delivered = await bare.request('POST', '/api/v1/webhooks/providers/mobile-money', {
      raw: note.rawBody,
      headers: note.headers,
    });
    expect(delivered.status).toBe(200);
    expect(delivered.body).toEqual({
      received: true,
      transaction_id: res.body.id,
      status: 'completed',
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(9_900n);
    expect((await eventsOf(engine.pool, res.body.id)).map((e) => e.type)).toEqual([
      'cashout.completed',
    ]);
    await assertLedgerInvariant(engine.pool);
  });

  it('gives everything back when the provider refuses the payout (400)', async () => {
    const walletId = await fundedLiveWallet(20_000n);
    monime.refuseAmount(7_777, 'Destination wallet is closed');
    const res = await live.post(CASHOUT, {
      wallet_id: walletId,
      amount: 7_777,
      phone_number: '+23276123456',
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'Provider refused the cashout' });
    expect(await balanceOf(engine.pool, walletId)).toBe(20_000n);
    await assertLedgerInvariant(engine.pool);
  });

  it('does not let the sandbox’s notification settle a Live Mode cashout', async () => {
    const walletId = await fundedLiveWallet(5_000n);
    const res = await live.post(CASHOUT, {
      wallet_id: walletId,
      amount: 1_000,
      phone_number: '+23276123456',
    });
    const payout = monime.payoutsFor(workflowIds.cashout(res.body.id))[0]!;
    monime.setPayoutStatus(payout.id, 'failed');
    // Signed with the sandbox's secret under the sandbox's header: Test Mode only.
    const note = monime.payoutNotificationFor(payout.id, {
      secret: sandboxWebhookSecret(engine.config),
    });
    const delivered = await clientFor(engine.url, null).request(
      'POST',
      '/api/v1/webhooks/providers/mobile-money',
      {
        raw: note.rawBody,
        headers: { 'sandbox-signature': note.headers['monime-signature']! },
      },
    );
    expect(delivered.status).toBe(200);
    expect(delivered.body).toMatchObject({ transaction_id: null });
    expect((await live.get(`/api/v1/transactions/${res.body.id}`)).body.status).toBe('pending');
  });

  it('is reconciled by the reconciliation schedule’s workflow when its notification never came', async () => {
    const walletId = await fundedLiveWallet(5_000n);
    const res = await live.post(CASHOUT, {
      wallet_id: walletId,
      amount: 2_000,
      phone_number: '+23276123456',
    });
    expect(res.status).toBe(200);
    const payout = monime.payoutsFor(workflowIds.cashout(res.body.id))[0]!;
    monime.setPayoutStatus(payout.id, 'failed');
    await engine.pool.query(sql.unsafe`
      UPDATE transactions SET created_at = now() - interval '1 hour' WHERE id = ${res.body.id}`);
    const run = await engine.temporal.workflow.execute(reconciliationWorkflow, {
      workflowId: `reconciliation-test-${randomUUID()}`,
      taskQueue: engine.config.temporal.taskQueue,
      args: [{}],
    });
    expect(run.changes).toEqual(
      expect.arrayContaining([
        {
          transaction_id: res.body.id,
          transaction_type: 'mobile_money_cashout',
          from: 'pending',
          to: 'failed',
        },
      ]),
    );
    expect(await balanceOf(engine.pool, walletId)).toBe(5_000n);
    expect((await eventsOf(engine.pool, res.body.id)).map((e) => e.type)).toEqual([
      'cashout.failed',
    ]);
    await assertLedgerInvariant(engine.pool);
  });
});
