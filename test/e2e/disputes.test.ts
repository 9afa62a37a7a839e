import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { lockCardCase, readCardCase } from '../../src/db/card-cases';
import { listOpenProviderDisputes } from '../../src/db/disputes';
import { insertTransaction } from '../../src/db/transactions';
import { createDisputeActivities } from '../../src/activities/disputes';
import { createReconciliationActivities } from '../../src/activities/reconciliation';
import { createProviders } from '../../src/providers';
import type { CardProvider } from '../../src/providers/card';
import { MockActivityEnvironment } from '@temporalio/testing';
import { closeDispute, disputeIdOf, openDispute } from '../../src/intake/disputes';
import { workflowIds } from '../../src/workflows/ids';
import { disputeStateQuery } from '../../src/workflows/dispute-shared';
import { assertLedgerInvariant, balanceOf, fundWallet, systemBalance } from '../support/database';
import { createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { app, api, live } = useTestApp(engine, { currency: 'USD' });
const { api: other } = useTestApp(engine, { currency: 'USD' });

const DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const SIMULATE = '/api/v1/testing/simulate-dispute';
const OUTCOME = '/api/v1/testing/simulate-dispute-outcome';
const TRANSFER = '/api/v1/transactions/wallet/transfer';

const reserveBalance = () => systemBalance(engine.pool, app.id, 'dispute_reserve', 'USD');
const clearingBalance = () => systemBalance(engine.pool, app.id, 'provider_clearing_card', 'USD');

/** A wallet credited by a completed card deposit of `amount` (major units). */
async function depositedWallet(amount = 100) {
  const { walletId } = await createUserWithWallet(api);
  const res = await api.post(DEPOSIT, {
    wallet_id: walletId,
    amount,
    payment_method_id: 'pm_card_visa',
  });
  if (res.status !== 200 || res.body.status !== 'completed') {
    throw new Error(`card deposit: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return { walletId, depositId: res.body.id as string };
}

/** The wallet's payment records of a dispute's steps, oldest first. */
function disputeRecordsOf(walletId: string) {
  return engine.pool.any(sql.type(
    z.object({
      transaction_type: z.string(),
      status: z.string(),
      amount: z.bigint(),
      parent_id: z.string().nullable(),
    }),
  )`
    SELECT transaction_type, status, amount, parent_id FROM transactions
    WHERE wallet_id = ${walletId} AND transaction_type IN ('dispute_reserve', 'dispute_release')
    ORDER BY created_at, transaction_type DESC`);
}

/** The dispute events about a deposit, oldest first, with the record each names. */
const disputeEvents = (depositId: string) =>
  engine.pool.any(sql.type(
    z.object({ type: z.string(), transaction_id: z.string(), data: z.any() }),
  )`
    SELECT type, transaction_id, data FROM events
    WHERE type LIKE 'dispute.%' AND data->>'transaction_id' = ${depositId}
    ORDER BY created_at, type`);

type Page = { data: Array<{ id: string; status: string }>; total: number };

afterEach(async () => {
  await assertLedgerInvariant(engine.pool);
});

describe('disputes', () => {
  it('opens a fully covered dispute: the amount moves to the reserve, dispute.created', async () => {
    const { walletId, depositId } = await depositedWallet(100);
    const reserveBefore = await reserveBalance();
    const res = await api.post(SIMULATE, { transaction_id: depositId, amount: 40 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.any(String),
      transaction_id: depositId,
      wallet_id: walletId,
      amount: 40,
      reserved_amount: 40,
      uncovered_amount: 0,
      reason: 'general',
      status: 'needs_response',
      evidence_due_by: expect.any(String),
      metadata: {},
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const dueInDays =
      (Date.parse(res.body.evidence_due_by) - Date.parse(res.body.created_at)) / 86_400_000;
    expect(dueInDays).toBeGreaterThan(6.99);
    expect(dueInDays).toBeLessThan(7.01);
    expect(await balanceOf(engine.pool, walletId)).toBe(60_00n);
    expect((await reserveBalance()) - reserveBefore).toBe(40_00n);
    expect(await disputeRecordsOf(walletId)).toEqual([
      {
        transaction_type: 'dispute_reserve',
        status: 'completed',
        amount: 40_00n,
        parent_id: depositId,
      },
    ]);
    const events = await disputeEvents(depositId);
    expect(events.map((e) => e.type)).toEqual(['dispute.created']);
    expect(events[0]!.data).toEqual(res.body);
    // The event names the dispute's `dispute_reserve` record, which has the dispute's id.
    expect(events[0]!.transaction_id).toBe(res.body.id);
    const record = await api.get(`/api/v1/transactions/${res.body.id}`);
    expect(record.body).toMatchObject({ transaction_type: 'dispute_reserve', amount: 40 });
    const got = await api.get(`/api/v1/disputes/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
    const handle = engine.temporal.workflow.getHandle(workflowIds.dispute(res.body.id));
    expect(await handle.query(disputeStateQuery)).toBe('needs_response');
  });

  it('opens a partially covered dispute: what the wallet lacks is recorded as uncovered', async () => {
    const { walletId, depositId } = await depositedWallet(100);
    const { walletId: elsewhere } = await createUserWithWallet(api);
    const spent = await api.post(TRANSFER, {
      from_wallet_id: walletId,
      to_wallet_id: elsewhere,
      amount: 70,
    });
    expect(spent.status).toBe(200);
    const reserveBefore = await reserveBalance();
    const res = await api.post(SIMULATE, { transaction_id: depositId });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ amount: 100, reserved_amount: 30, uncovered_amount: 70 });
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect((await reserveBalance()) - reserveBefore).toBe(30_00n);
    // Lost: the reserve goes to the provider; the uncovered part stays recorded, no record.
    const clearingBefore = await clearingBalance();
    const lost = await api.post(OUTCOME, { dispute_id: res.body.id, status: 'lost' });
    expect(lost.status).toBe(200);
    expect(lost.body).toMatchObject({
      status: 'lost',
      reserved_amount: 30,
      uncovered_amount: 70,
    });
    expect((await reserveBalance()) - reserveBefore).toBe(0n);
    expect((await clearingBalance()) - clearingBefore).toBe(30_00n);
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect((await disputeRecordsOf(walletId)).map((r) => r.transaction_type)).toEqual([
      'dispute_reserve',
    ]);
    expect((await disputeEvents(depositId)).map((e) => e.type)).toEqual([
      'dispute.created',
      'dispute.lost',
    ]);
  });

  it('opens a dispute of an emptied wallet: nothing reserved, all uncovered, no ledger move', async () => {
    const { walletId, depositId } = await depositedWallet(20);
    const { walletId: elsewhere } = await createUserWithWallet(api);
    expect(
      (await api.post(TRANSFER, { from_wallet_id: walletId, to_wallet_id: elsewhere, amount: 20 }))
        .status,
    ).toBe(200);
    const res = await api.post(SIMULATE, { transaction_id: depositId });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ amount: 20, reserved_amount: 0, uncovered_amount: 20 });
    const won = await api.post(OUTCOME, { dispute_id: res.body.id, status: 'won' });
    expect(won.body).toMatchObject({ status: 'won', reserved_amount: 0 });
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
  });

  it('wins: the reserve goes back to the wallet with a dispute_release record, dispute.won', async () => {
    const { walletId, depositId } = await depositedWallet(100);
    const reserveBefore = await reserveBalance();
    const opened = await api.post(SIMULATE, { transaction_id: depositId, amount: 25.5 });
    expect(opened.status).toBe(200);
    expect(await balanceOf(engine.pool, walletId)).toBe(74_50n);
    const evidence = await api.post(`/api/v1/disputes/${opened.body.id}/evidence`, {
      text: 'Signed delivery receipt',
    });
    expect(evidence.status).toBe(200);
    expect(evidence.body).toMatchObject({ id: opened.body.id, status: 'under_review' });
    const stored = await engine.pool.oneFirst(sql.type(z.object({ evidence: z.string() }))`
      SELECT evidence FROM disputes WHERE id = ${opened.body.id}`);
    expect(stored).toBe('Signed delivery receipt');
    const won = await api.post(OUTCOME, { dispute_id: opened.body.id, status: 'won' });
    expect(won.status).toBe(200);
    expect(won.body).toMatchObject({ id: opened.body.id, status: 'won', amount: 25.5 });
    expect(await balanceOf(engine.pool, walletId)).toBe(100_00n);
    expect(await reserveBalance()).toBe(reserveBefore);
    expect(await disputeRecordsOf(walletId)).toEqual([
      {
        transaction_type: 'dispute_reserve',
        status: 'completed',
        amount: 25_50n,
        parent_id: depositId,
      },
      {
        transaction_type: 'dispute_release',
        status: 'completed',
        amount: 25_50n,
        parent_id: depositId,
      },
    ]);
    const events = await disputeEvents(depositId);
    expect(events.map((e) => e.type)).toEqual(['dispute.created', 'dispute.won']);
    expect(events[1]!.data).toMatchObject({ id: opened.body.id, status: 'won' });
    // A second decision changes nothing.
    const again = await api.post(OUTCOME, { dispute_id: opened.body.id, status: 'lost' });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('won');
    expect(await balanceOf(engine.pool, walletId)).toBe(100_00n);
    // A closed dispute takes no evidence.
    const late = await api.post(`/api/v1/disputes/${opened.body.id}/evidence`, { text: 'More' });
    expect(late.status).toBe(400);
    expect(late.body).toEqual({ detail: 'The dispute is closed' });
    const workflow = engine.temporal.workflow.getHandle(workflowIds.dispute(opened.body.id));
    expect(await workflow.result()).toBe('won');
  });

  it('refuses evidence text out of range with 422, writing nothing', async () => {
    const { depositId } = await depositedWallet(10);
    const opened = await api.post(SIMULATE, { transaction_id: depositId });
    const path = `/api/v1/disputes/${opened.body.id}/evidence`;
    for (const body of [{}, { text: '' }, { text: 'x'.repeat(20_001) }, { text: 5 }]) {
      const res = await api.post(path, body);
      expect(res.status).toBe(422);
      expect(res.body.detail).toMatch(/text/);
    }
    const got = await api.get(`/api/v1/disputes/${opened.body.id}`);
    expect(got.body.status).toBe('needs_response');
    expect((await api.post(path, { text: 'x'.repeat(20_000) })).status).toBe(200);
  });

  it('declines what cannot be disputed, writing nothing', async () => {
    const { walletId, depositId } = await depositedWallet(50);
    const reserveBefore = await reserveBalance();
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ transaction_id: randomUUID() }, 404, 'Transaction not found'],
      [{ transaction_id: 'not-a-uuid' }, 404, 'Transaction not found'],
      [
        { transaction_id: depositId, amount: 50.01 },
        400,
        'Dispute amount exceeds the disputable amount',
      ],
      [{ transaction_id: depositId, amount: 0 }, 422, 'amount: must be greater than 0'],
    ];
    for (const [body, status, detail] of cases) {
      const res = await api.post(SIMULATE, body);
      expect({ body, status: res.status, detail: res.body.detail }).toEqual({
        body,
        status,
        detail,
      });
    }
    // A transfer is no card deposit.
    const { walletId: elsewhere } = await createUserWithWallet(api);
    const moved = await api.post(TRANSFER, {
      from_wallet_id: walletId,
      to_wallet_id: elsewhere,
      amount: 1,
    });
    const notCard = await api.post(SIMULATE, { transaction_id: moved.body.id });
    expect(notCard.status).toBe(400);
    expect(notCard.body).toEqual({ detail: 'Only a completed card deposit can be disputed' });
    // Another application's deposit.
    const foreign = await other.post(SIMULATE, { transaction_id: depositId });
    expect(foreign.status).toBe(403);
    expect(await reserveBalance()).toBe(reserveBefore);
    expect(await disputeRecordsOf(walletId)).toEqual([]);
    expect(await disputeEvents(depositId)).toEqual([]);
    // Once all of it is disputed, nothing is left to dispute.
    expect((await api.post(SIMULATE, { transaction_id: depositId })).status).toBe(200);
    const more = await api.post(SIMULATE, { transaction_id: depositId });
    expect(more.status).toBe(400);
    expect(more.body).toEqual({ detail: 'Dispute amount exceeds the disputable amount' });
  });

  it('answers 403 to Live Mode credentials on the simulate endpoints', async () => {
    const { depositId } = await depositedWallet(10);
    const opened = await api.post(SIMULATE, { transaction_id: depositId });
    for (const [path, body] of [
      [SIMULATE, { transaction_id: depositId }],
      [OUTCOME, { dispute_id: opened.body.id, status: 'won' }],
    ] as const) {
      const res = await live.post(path, body);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ detail: 'This endpoint is available in Test Mode only' });
    }
    expect((await api.get(`/api/v1/disputes/${opened.body.id}`)).body.status).toBe(
      'needs_response',
    );
  });

  it('answers 404 and 403 for a dispute missing or of another application', async () => {
    const { depositId } = await depositedWallet(10);
    const opened = await api.post(SIMULATE, { transaction_id: depositId });
    expect((await api.get(`/api/v1/disputes/${randomUUID()}`)).status).toBe(404);
    expect((await api.get('/api/v1/disputes/nope')).status).toBe(404);
    const foreign = await other.get(`/api/v1/disputes/${opened.body.id}`);
    expect(foreign.status).toBe(403);
    expect(foreign.body).toEqual({
      detail: 'You do not have permission to access this dispute',
    });
    const evidence = await other.post(`/api/v1/disputes/${opened.body.id}/evidence`, {
      text: 'Not mine',
    });
    expect(evidence.status).toBe(403);
    const outcome = await other.post(OUTCOME, { dispute_id: opened.body.id, status: 'won' });
    expect(outcome.status).toBe(403);
    const bad = await api.post(OUTCOME, { dispute_id: opened.body.id, status: 'maybe' });
    expect(bad.status).toBe(422);
  });

  it('answers a retried simulate-dispute with the dispute its first attempt opened', async () => {
    const { walletId, depositId } = await depositedWallet(10);
    const key = `dispute-${depositId}`;
    const first = await api.post(
      SIMULATE,
      { transaction_id: depositId, amount: 4 },
      { 'idempotency-key': key },
    );
    expect(first.status).toBe(200);
    const replayed = await api.post(
      SIMULATE,
      { transaction_id: depositId, amount: 4 },
      { 'idempotency-key': key },
    );
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(first.body);
    // As if the first request had died after the dispute opened but before its answer was stored.
    await engine.pool.query(sql.unsafe`
      UPDATE idempotency_keys SET response_status = NULL, response_body = NULL WHERE key = ${key}`);
    const retry = await api.post(
      SIMULATE,
      { transaction_id: depositId, amount: 4 },
      { 'idempotency-key': key },
    );
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(first.body);
    const listed = await api.get(`/api/v1/disputes?transaction_id=${depositId}`);
    expect(listed.body.data).toHaveLength(1);
    expect(await balanceOf(engine.pool, walletId)).toBe(6_00n);
    await assertLedgerInvariant(engine.pool);
  });

  it('lists disputes newest first, in pages, filtered by status and transaction', async () => {
    const { depositId: first } = await depositedWallet(30);
    const { depositId: second } = await depositedWallet(30);
    const a = await api.post(SIMULATE, { transaction_id: first, amount: 10 });
    const b = await api.post(SIMULATE, { transaction_id: first, amount: 5 });
    const c = await api.post(SIMULATE, { transaction_id: second });
    await api.post(OUTCOME, { dispute_id: b.body.id, status: 'won' });
    const ofFirst = await api.get<Page>(`/api/v1/disputes?transaction_id=${first}`);
    expect(ofFirst.status).toBe(200);
    expect(ofFirst.body).toMatchObject({ page: 1, per_page: 20, total: 2, total_pages: 1 });
    expect(ofFirst.body.data.map((d) => d.id)).toEqual([b.body.id, a.body.id]);
    const won = await api.get(`/api/v1/disputes?transaction_id=${first}&status=won`);
    expect(won.body.data).toEqual([expect.objectContaining({ id: b.body.id, status: 'won' })]);
    const paged = await api.get<Page>('/api/v1/disputes?per_page=1&page=2');
    expect(paged.status).toBe(200);
    expect(paged.body).toMatchObject({ page: 2, per_page: 1 });
    expect(paged.body.data).toHaveLength(1);
    expect(paged.body.total).toBeGreaterThanOrEqual(3);
    const all = await api.get<Page>('/api/v1/disputes?per_page=100');
    const ids = all.body.data.map((d) => d.id);
    expect(ids.indexOf(c.body.id)).toBeLessThan(ids.indexOf(a.body.id));
    expect((await other.get('/api/v1/disputes')).body.total).toBe(0);
    for (const query of ['status=open', 'transaction_id=nope', 'per_page=0']) {
      const res = await api.get(`/api/v1/disputes?${query}`);
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual(expect.any(String));
    }
  });

  it('leaves to refund only what is not disputed, all of it again once the dispute is won', async () => {
    const { depositId } = await depositedWallet(100);
    const before = await readCardCase(engine.pool, depositId);
    expect(before).toMatchObject({ refunded: 0n, disputed: 0n, left: 100_00n });
    const opened = await api.post(SIMULATE, { transaction_id: depositId, amount: 30 });
    expect(opened.status).toBe(200);
    // What a refund reads under the same lock: 70 left, so a refund of more is refused.
    const locked = await engine.pool.transaction((trx) => lockCardCase(trx, depositId));
    expect(locked).toMatchObject({ disputed: 30_00n, left: 70_00n });
    await api.post(OUTCOME, { dispute_id: opened.body.id, status: 'won' });
    expect(await readCardCase(engine.pool, depositId)).toMatchObject({
      disputed: 0n,
      left: 100_00n,
    });
    // A lost dispute keeps its amount taken.
    const again = await api.post(SIMULATE, { transaction_id: depositId, amount: 45 });
    await api.post(OUTCOME, { dispute_id: again.body.id, status: 'lost' });
    expect(await readCardCase(engine.pool, depositId)).toMatchObject({
      disputed: 45_00n,
      left: 55_00n,
    });
  });

  it('opens one dispute for one deposit at a time, whatever races: never more than is left', async () => {
    const { walletId, depositId } = await depositedWallet(10);
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => api.post(SIMULATE, { transaction_id: depositId, amount: 6 })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400, 400]);
    expect(await balanceOf(engine.pool, walletId)).toBe(4_00n);
    expect(await disputeRecordsOf(walletId)).toHaveLength(1);
  });

  it('opens a Live Mode dispute once per provider dispute, closed by the provider’s id', async () => {
    const { walletId } = await createUserWithWallet(live);
    await fundWallet(engine.pool, walletId, 80_00n);
    const depositId = randomUUID();
    await insertTransaction(engine.pool, {
      id: depositId,
      applicationId: app.id,
      mode: 'live',
      type: 'card_deposit',
      status: 'completed',
      currency: 'USD',
      amount: 80_00n,
      walletId,
      providerReference: `pi_live_${depositId.slice(0, 8)}`,
    });
    const deps = {
      pool: engine.pool,
      temporal: engine.temporal,
      taskQueue: engine.config.temporal.taskQueue,
      timeoutMs: 20_000,
    };
    const providerDisputeId = `dp_${randomUUID().slice(0, 12)}`;
    const event = {
      applicationId: app.id,
      mode: 'live' as const,
      transactionId: depositId,
      amount: 50_00n,
      reason: 'fraudulent',
      providerDisputeId,
      evidenceDueBy: new Date(Date.now() + 3 * 86_400_000).toISOString(),
    };
    const first = await openDispute(deps, event);
    const again = await openDispute(deps, event);
    expect(first).toMatchObject({
      status: 'opened',
      dispute: { provider_reference: providerDisputeId },
    });
    const id = (first as { dispute: { id: string } }).dispute.id;
    expect(id).toBe(disputeIdOf({ applicationId: app.id, mode: 'live' }, providerDisputeId));
    expect((again as { dispute: { id: string } }).dispute.id).toBe(id);
    expect(await balanceOf(engine.pool, walletId)).toBe(30_00n);
    expect(await disputeRecordsOf(walletId)).toHaveLength(1);
    expect((await listOpenProviderDisputes(engine.pool, 10_000)).map((d) => d.id)).toContain(id);
    // The Test Mode credentials see nothing of it.
    expect((await api.get(`/api/v1/disputes/${id}`)).status).toBe(403);
    const got = await live.get(`/api/v1/disputes/${id}`);
    expect(got.body).toMatchObject({ amount: 50, reason: 'fraudulent', status: 'needs_response' });
    const closed = await closeDispute(deps, {
      providerDisputeId,
      applicationId: app.id,
      mode: 'live',
      status: 'won',
    });
    expect(closed).toMatchObject({ id, status: 'won' });
    expect(await balanceOf(engine.pool, walletId)).toBe(80_00n);
    expect(await listOpenProviderDisputes(engine.pool, 10_000)).not.toContainEqual(
      expect.objectContaining({ id }),
    );
    // The same event once more, the dispute closed: answered as it stands, nothing moves.
    expect(await openDispute(deps, event)).toMatchObject({ dispute: { id, status: 'won' } });
    expect(await balanceOf(engine.pool, walletId)).toBe(80_00n);
    const unknown = await closeDispute(deps, {
      providerDisputeId: 'dp_unknown',
      applicationId: app.id,
      mode: 'live',
      status: 'lost',
    });
    expect(unknown).toBeNull();
  });

  it('the reconciliation closes an open Live Mode dispute its provider has decided', async () => {
    const { walletId } = await createUserWithWallet(live);
    await fundWallet(engine.pool, walletId, 60_00n);
    const depositId = randomUUID();
    await insertTransaction(engine.pool, {
      id: depositId,
      applicationId: app.id,
      mode: 'live',
      type: 'card_deposit',
      status: 'completed',
      currency: 'USD',
      amount: 60_00n,
      walletId,
      providerReference: `pi_live_${depositId.slice(0, 8)}`,
    });
    const taskQueue = engine.config.temporal.taskQueue;
    const deps = { pool: engine.pool, temporal: engine.temporal, taskQueue, timeoutMs: 20_000 };
    const providerDisputeId = `dp_${randomUUID().slice(0, 12)}`;
    const opened = await openDispute(deps, {
      applicationId: app.id,
      mode: 'live',
      transactionId: depositId,
      amount: null,
      reason: 'product_not_received',
      providerDisputeId,
      evidenceDueBy: null,
    });
    const id = (opened as { dispute: { id: string } }).dispute.id;
    const clearingBefore = await systemBalance(
      engine.pool,
      app.id,
      'provider_clearing_card',
      'USD',
      'live',
    );
    // The live provider (Stripe's adapter is tested on its own): ours is lost, others undecided.
    const providers = createProviders({ config: engine.config, pool: engine.pool });
    const getDisputeStatus = (disputeId: string) =>
      Promise.resolve(disputeId === providerDisputeId ? 'lost' : 'under_review');
    const reconciliation = createReconciliationActivities({
      pool: engine.pool,
      config: engine.config,
      providers: { ...providers, card: () => ({ getDisputeStatus }) as unknown as CardProvider },
    });
    const run = new MockActivityEnvironment({ taskQueue }, { client: engine.temporal });
    const sync = () =>
      run.run<[], { checked: number; closed: number }, typeof reconciliation.syncOpenDisputes>(
        reconciliation.syncOpenDisputes,
      );
    const synced = await sync();
    expect(synced.checked).toBeGreaterThanOrEqual(1);
    expect(synced.closed).toBe(1);
    expect((await live.get(`/api/v1/disputes/${id}`)).body).toMatchObject({ status: 'lost' });
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect(
      (await systemBalance(engine.pool, app.id, 'provider_clearing_card', 'USD', 'live')) -
        clearingBefore,
    ).toBe(60_00n);
    // A second run finds nothing of ours left open.
    expect((await sync()).closed).toBe(0);
  });

  it('decides a live dispute again on a repeated event once its first opening was declined', async () => {
    const { walletId } = await createUserWithWallet(live);
    await fundWallet(engine.pool, walletId, 30_00n);
    const depositId = randomUUID();
    await insertTransaction(engine.pool, {
      id: depositId,
      applicationId: app.id,
      mode: 'live',
      type: 'card_deposit',
      status: 'pending',
      currency: 'USD',
      amount: 30_00n,
      walletId,
      providerReference: `pi_live_${depositId.slice(0, 8)}`,
    });
    const deps = {
      pool: engine.pool,
      temporal: engine.temporal,
      taskQueue: engine.config.temporal.taskQueue,
      timeoutMs: 20_000,
    };
    const event = {
      applicationId: app.id,
      mode: 'live' as const,
      transactionId: depositId,
      amount: null,
      reason: 'duplicate',
      providerDisputeId: `dp_${randomUUID().slice(0, 12)}`,
      evidenceDueBy: null,
    };
    expect(await openDispute(deps, event)).toEqual({
      status: 'declined',
      code: 'dispute_not_allowed',
      detail: null,
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(30_00n);
    await engine.pool.query(
      sql.unsafe`UPDATE transactions SET status = 'completed' WHERE id = ${depositId}`,
    );
    expect(await openDispute(deps, event)).toMatchObject({
      status: 'opened',
      dispute: { amount: '3000', reserved_amount: '3000', status: 'needs_response' },
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect(await openDispute(deps, { ...event, transactionId: 'pi_not_ours' })).toEqual({
      status: 'declined',
      code: 'not_found',
      detail: 'Transaction not found',
    });
  });

  it('moves money once when a step runs again (an activity retried after its commit)', async () => {
    const { walletId, depositId } = await depositedWallet(40);
    const activities = createDisputeActivities({
      pool: engine.pool,
      providers: createProviders({ config: engine.config, pool: engine.pool }),
    });
    const input = {
      disputeId: randomUUID(),
      applicationId: app.id,
      mode: 'test' as const,
      transactionId: depositId,
      amount: '1500',
      reason: 'general',
      evidenceDueBy: new Date(Date.now() + 86_400_000).toISOString(),
      providerDisputeId: null,
    };
    const first = await activities.openDispute(input);
    expect(await activities.openDispute(input)).toEqual(first);
    expect(await balanceOf(engine.pool, walletId)).toBe(25_00n);
    const evidence = { disputeId: input.disputeId, text: 'Receipt' };
    expect(await activities.submitDisputeEvidence(evidence)).toBe('under_review');
    expect(await activities.submitDisputeEvidence(evidence)).toBe('under_review');
    const close = { disputeId: input.disputeId, status: 'won' as const };
    expect(await activities.closeDispute(close)).toBe('won');
    expect(await activities.closeDispute(close)).toBe('won');
    expect(await activities.closeDispute({ ...close, status: 'lost' })).toBe('won');
    expect(await balanceOf(engine.pool, walletId)).toBe(40_00n);
    expect((await disputeRecordsOf(walletId)).map((r) => r.transaction_type)).toEqual([
      'dispute_reserve',
      'dispute_release',
    ]);
    expect((await disputeEvents(depositId)).map((e) => e.type)).toEqual([
      'dispute.created',
      'dispute.won',
    ]);
    await expect(activities.submitDisputeEvidence(evidence)).rejects.toMatchObject({
      type: 'dispute_closed',
    });
  });
});
