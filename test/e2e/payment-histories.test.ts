import { startApi } from '../../src/api/server';
import { createLogger } from '../../src/observability/logger';
import { historyCounts, type HistoryCounts } from '../../tools/bench/history-counts';
import { workflowIds } from '../../src/workflows/ids';
import { clientFor, createFundedWallet, createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { reportedInProcess } from '../support/metrics';

const engine = useTestEngine();
const { app, api } = useTestApp(engine, { currency: 'USD' });

/** What the server keeps of a payment, but its bytes (ids and times vary them a little). */
async function countsOf(
  workflowId: string,
): Promise<Omit<HistoryCounts, 'payloadBytes' | 'historyBytes'>> {
  const handle = engine.temporal.workflow.getHandle(workflowId);
  await handle.result();
  const {
    payloadBytes: _p,
    historyBytes: _h,
    ...counts
  } = historyCounts((await handle.fetchHistory()).events ?? []);
  return counts;
}

const status = (n: number) => Array<string>(n).fill('PaymentStatus');

/**
 * The server's work per payment as `npm start` runs them (the API and the worker in one
 * process): events, workflow and activity tasks, upserts. A change here moves every payment's
 * cost (docs/benchmarks.md "Cost per payment").
 */
describe("payments' histories through the API", () => {
  it('a transfer: one workflow task, its ledger step a local activity, one status upsert', async () => {
    const from = await createFundedWallet(api, engine.pool, 10_000n);
    const to = await createUserWithWallet(api);
    const res = await api.post('/api/v1/transactions/wallet/transfer', {
      from_wallet_id: from.walletId,
      to_wallet_id: to.walletId,
      amount: 1,
    });
    expect(res.status).toBe(200);
    expect(await countsOf(workflowIds.transfer(res.body.id))).toEqual({
      events: 7,
      workflowTasks: 1,
      activityTasks: 0,
      localActivities: 1,
      patches: 0,
      upserts: 1,
      upserted: status(1),
      updates: 0,
    });
  });

  it('an escrow hold and its release: a workflow task each, the hold answered without an update', async () => {
    const from = await createFundedWallet(api, engine.pool, 10_000n);
    const to = await createUserWithWallet(api);
    // A hold whose worker missed its report deadline (a loaded machine) is answered through an
    // update instead: such a hold is set aside and another made.
    const hold = await reportedInProcess('escrow_hold', () =>
      api.post('/api/v1/escrow/hold', {
        wallet_id: from.walletId,
        amount: 1,
        recipient_wallet_id: to.walletId,
      }),
    );
    expect(hold.status).toBe(200);
    const holdId = hold.body.id as string;
    const release = await api.post(`/api/v1/escrow/${holdId}/release`, {
      recipient_wallet_id: to.walletId,
    });
    expect(release.status).toBe(200);
    expect(await countsOf(workflowIds.escrow(holdId))).toEqual({
      events: 14,
      workflowTasks: 2,
      activityTasks: 0,
      localActivities: 2,
      patches: 0,
      upserts: 2,
      upserted: status(2),
      updates: 1,
    });
  });

  it('a card deposit and a refund of it: one workflow task each, answered without an update', async () => {
    const { walletId } = await createUserWithWallet(api);
    // As for the hold: one whose report came too late went through its update, and is set aside.
    const deposit = await reportedInProcess('card_deposit', () =>
      api.post('/api/v1/transactions/wallet/card-deposit', {
        wallet_id: walletId,
        amount: 10,
        payment_method_id: 'pm_card_visa',
      }),
    );
    expect(deposit.status).toBe(200);
    const refund = await reportedInProcess('card_refund', () =>
      api.post(`/api/v1/transactions/${deposit.body.id}/refund`, { amount: 1 }),
    );
    expect(refund.status).toBe(200);
    const oneTask = { workflowTasks: 1, activityTasks: 0, patches: 0, upserts: 1, updates: 0 };
    expect(await countsOf(workflowIds.cardDeposit(deposit.body.id))).toEqual({
      ...oneTask,
      events: 8,
      localActivities: 2,
      upserted: status(1),
    });
    expect(await countsOf(workflowIds.refund(refund.body.id))).toEqual({
      ...oneTask,
      events: 9,
      localActivities: 3,
      upserted: status(1),
    });
  });

  it('the split shape (an API without a worker in its process): the card steps go through their update', async () => {
    const split = await startApi(
      engine.config,
      createLogger('silent'),
      engine.config.database.url!,
    );
    try {
      const apart = clientFor(split.url, app);
      const { walletId } = await createUserWithWallet(apart);
      const deposit = await apart.post('/api/v1/transactions/wallet/card-deposit', {
        wallet_id: walletId,
        amount: 10,
        payment_method_id: 'pm_card_visa',
      });
      expect(deposit.status).toBe(200);
      const refund = await apart.post(`/api/v1/transactions/${deposit.body.id}/refund`, {
        amount: 1,
      });
      expect(refund.status).toBe(200);
      const oneTask = { workflowTasks: 1, activityTasks: 0, patches: 0, upserts: 1, updates: 1 };
      expect(await countsOf(workflowIds.cardDeposit(deposit.body.id))).toEqual({
        ...oneTask,
        events: 10,
        localActivities: 2,
        upserted: status(1),
      });
      expect(await countsOf(workflowIds.refund(refund.body.id))).toEqual({
        ...oneTask,
        events: 11,
        localActivities: 3,
        upserted: status(1),
      });
    } finally {
      await split.close();
    }
  });
});
