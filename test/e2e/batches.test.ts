import { sql } from 'slonik';
import { z } from 'zod';
import { assertLedgerInvariant, balanceOf, eventsOf, ledgerLegs } from '../support/database';
import {
  clientFor,
  createFundedWallet,
  expectError,
  expectRateLimited,
  type ApiClient,
} from '../support/http';
import { useWalletClient } from '../support/client';
import { dashboardAccount, signIn } from '../support/dashboard';
import { useTestApp, useTestEngine } from '../support/hooks';
import { payableWallet, sandboxCardPayouts, sandboxMobileMoneyPayouts } from '../support/payouts';
import { awaitRoomInWindow } from '../support/rate-limit';
import { listWorkflowIds, pollUntil } from '../support/wait';
import { startReceiver, verify, type Receiver } from '../support/webhook-receiver';

// Loopback only: the batch's event is delivered to a receiver on this machine.
const engine = useTestEngine({ env: { WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32' } });
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => receiver?.close());
const { app, api, live } = useTestApp(engine);
const { api: other } = useTestApp(engine);
const client = useWalletClient(engine, app);
/** An application whose transfers are limited to two a minute: its batches pace themselves. */
const paced = useTestApp(engine, { rateLimits: { transfers: 2, batches: 1_000 } });
/** An application with the default limits for batches. */
const limited = useTestApp(engine, { rateLimits: null });

const BATCHES = '/api/v1/batches';
let keys = 0;
const newKey = () => `batch-${Date.now()}-${(keys += 1)}`;

async function submit(client: ApiClient, body: unknown, key = newKey()) {
  return client.post(BATCHES, body, { 'Idempotency-Key': key });
}

/** The batch once it has ended, read through the API. */
function ended(client: ApiClient, id: string) {
  return pollUntil(
    () => client.get(`${BATCHES}/${id}`),
    (reply) => reply.status === 200 && reply.body.status !== 'processing',
    { timeoutMs: 60_000 },
  );
}

/** Every item of a batch, walked page by page with `starting_after`. */
async function itemsOf(client: ApiClient, id: string, query = '') {
  const items: any[] = [];
  for (let after: number | null = null; ;) {
    const cursor: string = after === null ? '' : `&starting_after=${after}`;
    const page = await client.get<{ data: any[]; has_more: boolean }>(
      `${BATCHES}/${id}/items?per_page=2${query}${cursor}`,
    );
    expect(page.status).toBe(200);
    items.push(...page.body.data);
    if (!page.body.has_more) return items;
    after = page.body.data.at(-1).index as number;
  }
}

const batchRows = () =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT (SELECT count(*) FROM batches WHERE application_id = ${app.id})::int AS n`);

/** A batch's audit log entries, oldest first. */
const auditOf = (batchId: string) =>
  engine.pool.any(
    sql.type(z.object({ actor_type: z.string(), action: z.string(), details: z.unknown() }))`
      SELECT actor_type, action, details FROM audit_log WHERE target_id = ${batchId}
      ORDER BY at, action DESC`,
  );

const requestedCancel = (batchId: string) =>
  engine.pool.oneFirst(sql.type(z.object({ cancel_requested: z.boolean() }))`
    SELECT cancel_requested FROM batches WHERE id = ${batchId}`);

const batchEvents = (batchId: string) =>
  engine.pool.any(sql.type(z.object({ type: z.string(), data: z.any() }))`
    SELECT type, data FROM events WHERE type = 'batch.completed' AND data->>'id' = ${batchId}`);

describe('bulk payments', () => {
  it('refuses an invalid item with 422 naming items[INDEX].FIELD, writing and starting nothing', async () => {
    const before = await batchRows();
    const { walletId } = await createFundedWallet(api, engine.pool, 10_000n);
    const bad = await submit(api, {
      kind: 'transfer',
      items: [
        { from_wallet_id: walletId, to_wallet_id: walletId, amount: 1 },
        { from_wallet_id: walletId, to_wallet_id: walletId, amount: -5 },
        { from_wallet_id: walletId, amount: 1, reference: 'x'.repeat(101) },
      ],
    });
    const detail = expectError(bad, 422);
    expect(detail).toContain('items[1].amount');
    expect(detail).toContain('items[2].to_wallet_id');
    expect(detail).toContain('items[2].reference');
    const duplicate = await submit(api, {
      kind: 'mobile_money_cashout',
      items: [
        { wallet_id: walletId, amount: 100, phone_number: '+23276123456', reference: 'a' },
        { wallet_id: walletId, amount: 100, phone_number: 'not a phone', reference: 'a' },
      ],
    });
    expect(expectError(duplicate, 422)).toMatch(
      /items\[1\]\.phone_number: .*items\[1\]\.reference: the same as items\[0\]\.reference/,
    );
    const atomicPayouts = await submit(api, {
      kind: 'card_payout',
      atomic: true,
      items: [{ wallet_id: walletId, amount: 1 }],
    });
    expect(expectError(atomicPayouts, 422)).toBe('atomic: only a batch of transfers');
    const notAWallet = await submit(api, {
      kind: 'card_payout',
      items: [
        { wallet_id: walletId, amount: 1 },
        { wallet_id: '0', amount: 1 },
      ],
    });
    expect(expectError(notAWallet, 422)).toBe('items[1].wallet_id: must be a wallet id (a UUID)');
    expect(expectError(await submit(api, { kind: 'transfer', items: [] }), 422)).toBe(
      'items: must hold 1 to 10,000 items',
    );
    expect(expectError(await submit(api, { kind: 'refund', items: [{}] }), 422)).toMatch(
      /^kind: must be one of transfer, mobile_money_cashout, card_payout/,
    );
    // Live Mode without the provider's credentials: 503, before anything is written.
    const unconfigured = await submit(live, {
      kind: 'mobile_money_cashout',
      items: [{ wallet_id: walletId, amount: 100, phone_number: '+23276123456' }],
    });
    expectError(unconfigured, 503);
    expect(await batchRows()).toBe(before);
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
  });

  it('runs each transfer as its own payment: declines fail their items, the batch ends partially_failed, once', async () => {
    const a = await createFundedWallet(api, engine.pool, 10_000n);
    const b = await createFundedWallet(api, engine.pool, 0n);
    const foreign = await createFundedWallet(other, engine.pool, 5_000n);
    const key = newKey();
    const body = {
      kind: 'transfer',
      metadata: { run: 'payroll-7' },
      items: [
        { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 30, reference: 'r0' },
        { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 500 },
        { from_wallet_id: a.walletId, to_wallet_id: foreign.walletId, amount: 1 },
        { from_wallet_id: a.walletId, to_wallet_id: a.walletId, amount: 1 },
        { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 20.5, reference: 'r4' },
      ],
    };
    const started = await submit(api, body, key);
    expect(started.status).toBe(202);
    expect(started.body).toEqual({
      id: expect.any(String),
      kind: 'transfer',
      atomic: false,
      status: 'processing',
      total: 5,
      succeeded: 0,
      failed: 0,
      canceled: 0,
      metadata: { run: 'payroll-7' },
      created_at: expect.any(String),
      completed_at: null,
    });
    const id = started.body.id as string;
    const done = await ended(api, id);
    expect(done.body).toMatchObject({
      status: 'partially_failed',
      succeeded: 2,
      failed: 3,
      canceled: 0,
      completed_at: expect.any(String),
    });

    const items = await itemsOf(api, id);
    expect(items.map((i) => [i.index, i.reference, i.status])).toEqual([
      [0, 'r0', 'succeeded'],
      [1, null, 'failed'],
      [2, null, 'failed'],
      [3, null, 'failed'],
      [4, 'r4', 'succeeded'],
    ]);
    expect(items[1].error).toEqual({ status: 400, detail: 'Insufficient funds' });
    expect(items[2].error.status).toBe(403);
    expect(items[3].error.status).toBe(400);
    expect(items.filter((i) => i.status === 'failed').map((i) => i.transaction_id)).toEqual([
      null,
      null,
      null,
    ]);
    // What the single endpoint answers, item by item.
    const single = await api.post('/api/v1/transactions/wallet/transfer', body.items[1]);
    expect({ status: single.status, body: single.body }).toEqual({
      status: items[1].error.status,
      body: { detail: items[1].error.detail },
    });

    for (const item of [items[0], items[4]]) {
      const tx = await api.get(`/api/v1/transactions/${item.transaction_id}`);
      expect(tx.body).toMatchObject({ transaction_type: 'transfer', status: 'completed' });
      expect(await ledgerLegs(engine.pool, item.transaction_id)).toEqual([{ step: null, legs: 2 }]);
      expect((await eventsOf(engine.pool, item.transaction_id)).map((e) => e.type)).toEqual([
        'transfer.completed',
      ]);
    }
    expect(await balanceOf(engine.pool, a.walletId)).toBe(10_000n - 3_000n - 2_050n);
    expect(await balanceOf(engine.pool, b.walletId)).toBe(5_050n);
    expect(await balanceOf(engine.pool, foreign.walletId)).toBe(5_000n);
    const events = await batchEvents(id);
    expect(events).toEqual([{ type: 'batch.completed', data: done.body }]);

    // The same request again answers the same batch and pays nothing twice.
    const again = await submit(api, body, key);
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await balanceOf(engine.pool, a.walletId)).toBe(4_950n);
    const filtered = await itemsOf(api, id, '&status=failed');
    expect(filtered.map((i) => i.index)).toEqual([1, 2, 3]);
    await assertLedgerInvariant(engine.pool);
  });

  it('lists batches, reads one, and keeps another application’s out (403, 404)', async () => {
    const a = await createFundedWallet(api, engine.pool, 1_000n);
    const b = await createFundedWallet(api, engine.pool, 0n);
    const started = await submit(api, {
      kind: 'transfer',
      items: [{ from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 1 }],
    });
    const id = started.body.id as string;
    await ended(api, id);
    const list = await api.get<{ data: Array<{ id: string; status: string }> }>(
      `${BATCHES}?per_page=100&status=completed`,
    );
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ page: 1, per_page: 100, total: expect.any(Number) });
    expect(list.body.data.map((x) => x.id)).toContain(id);
    expect(list.body.data.every((x) => x.status === 'completed')).toBe(true);
    expectError(await other.get(`${BATCHES}/${id}`), 403);
    expectError(await other.get(`${BATCHES}/${id}/items`), 403);
    expectError(await other.post(`${BATCHES}/${id}/cancel`), 403);
    expectError(await api.get(`${BATCHES}/00000000-0000-4000-8000-000000000000`), 404);
    expect(expectError(await api.post(`${BATCHES}/${id}/cancel`), 400)).toBe(
      'The batch has ended: nothing is left to cancel',
    );
  });

  it('moves an atomic batch in one ledger transaction', async () => {
    const a = await createFundedWallet(api, engine.pool, 2_000n);
    const b = await createFundedWallet(api, engine.pool, 0n);
    const c = await createFundedWallet(api, engine.pool, 0n);
    const started = await submit(api, {
      kind: 'transfer',
      atomic: true,
      items: [
        { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 10 },
        // Only the money the item before it brought makes this one possible.
        { from_wallet_id: b.walletId, to_wallet_id: c.walletId, amount: 4 },
        {
          from_wallet_id: a.walletId,
          to_wallet_id: c.walletId,
          amount: 0.5,
          description: 'rent',
          metadata: { line: '3' },
        },
      ],
    });
    expect(started.status).toBe(202);
    expect(started.body.atomic).toBe(true);
    const id = started.body.id as string;
    const done = await ended(api, id);
    expect(done.body).toMatchObject({ status: 'completed', succeeded: 3, failed: 0 });
    expect(await balanceOf(engine.pool, a.walletId)).toBe(950n);
    expect(await balanceOf(engine.pool, b.walletId)).toBe(600n);
    expect(await balanceOf(engine.pool, c.walletId)).toBe(450n);
    const ledger = await engine.pool.any(sql.type(
      z.object({ legs: z.number(), named: z.boolean() }),
    )`
      SELECT count(e.id)::int AS legs, bool_and(t.transaction_id IS NULL) AS named
      FROM ledger_transactions t JOIN ledger_entries e ON e.ledger_transaction_id = t.id
      WHERE t.metadata->>'batch_id' = ${id} GROUP BY t.id`);
    expect(ledger).toEqual([{ legs: 6, named: true }]);
    const items = await itemsOf(api, id);
    expect(items.every((i) => i.status === 'succeeded' && i.transaction_id !== null)).toBe(true);
    for (const item of items) {
      expect((await eventsOf(engine.pool, item.transaction_id)).map((e) => e.type)).toEqual([
        'transfer.completed',
      ]);
    }
    // Each item's record and event are those the single transfer writes, but for the ids, the
    // writing workflow and the time, which is the database's.
    const single = await api.post('/api/v1/transactions/wallet/transfer', {
      from_wallet_id: a.walletId,
      to_wallet_id: c.walletId,
      amount: 0.5,
      description: 'rent',
      metadata: { line: '3' },
    });
    expect(single.status).toBe(200);
    const rowOf = (txId: string) =>
      engine.pool.one(sql.type(z.record(z.string(), z.unknown()))`
        SELECT to_jsonb(t) - 'id' - 'workflow_id' - 'created_at' - 'updated_at' AS row,
          t.created_at = t.updated_at AND t.created_at = (
            SELECT created_at FROM events e WHERE e.transaction_id = t.id) AS same_time
        FROM transactions t WHERE t.id = ${txId}`);
    const [batched, alone] = [await rowOf(items[2].transaction_id), await rowOf(single.body.id)];
    expect(batched).toEqual(alone);
    expect(batched.same_time).toBe(true);
    const eventOf = async (txId: string) => (await eventsOf(engine.pool, txId))[0]!.data;
    const [batchedEvent, aloneEvent] = [
      await eventOf(items[2].transaction_id),
      await eventOf(single.body.id),
    ];
    const without = ({ id: _, created_at: __, updated_at: ___, ...rest }: any) => rest;
    expect(without(batchedEvent)).toEqual(without(aloneEvent));
    const read = await api.get(`/api/v1/transactions/${items[2].transaction_id}`);
    expect([batchedEvent.created_at, batchedEvent.updated_at]).toEqual([
      read.body.created_at,
      read.body.updated_at,
    ]);
    expect(batchedEvent.id).toBe(items[2].transaction_id);
    expect(await batchEvents(id)).toHaveLength(1);
    // The audit log has the batch, made by the application's credential, in its transaction.
    const audit = await engine.pool.any(
      sql.type(
        z.object({ actor_type: z.string(), action: z.string(), details: z.unknown() }),
      )`SELECT actor_type, action, details FROM audit_log WHERE target_id = ${id}`,
    );
    expect(audit).toEqual([
      {
        actor_type: 'application',
        action: 'batch.created',
        details: { kind: 'transfer', atomic: true, total: 3 },
      },
    ]);
    await assertLedgerInvariant(engine.pool);
  });

  it('moves an atomic batch of 1,000 transfers among ten wallets at once', async () => {
    const wallets = await Promise.all(
      Array.from({ length: 10 }, () => createFundedWallet(api, engine.pool, 10_000n)),
    );
    const started = await submit(api, {
      kind: 'transfer',
      atomic: true,
      items: Array.from({ length: 1_000 }, (_, i) => ({
        from_wallet_id: wallets[i % 10]!.walletId,
        to_wallet_id: wallets[(i + 3) % 10]!.walletId,
        amount: 0.05,
      })),
    });
    expect(started.status).toBe(202);
    const done = await ended(api, started.body.id);
    expect(done.body).toMatchObject({ status: 'completed', succeeded: 1_000 });
    // Each wallet sent and received a hundred items: as it was.
    for (const { walletId } of wallets)
      expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
    const legs = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM ledger_entries e
        JOIN ledger_transactions t ON t.id = e.ledger_transaction_id
      WHERE t.metadata->>'batch_id' = ${started.body.id}`);
    expect(legs).toBe(2_000);
    const tooMany = await submit(api, {
      kind: 'transfer',
      atomic: true,
      items: Array.from({ length: 1_001 }, (_, i) => ({
        from_wallet_id: wallets[i % 10]!.walletId,
        to_wallet_id: wallets[(i + 3) % 10]!.walletId,
        amount: 0.05,
      })),
    });
    expect(expectError(tooMany, 422)).toBe('items: an atomic batch holds 1 to 1,000 items');
  });

  it('fails an atomic batch whole when an item declines, each item with its own reason', async () => {
    const a = await createFundedWallet(api, engine.pool, 1_000n);
    const b = await createFundedWallet(api, engine.pool, 0n);
    const started = await submit(api, {
      kind: 'transfer',
      atomic: true,
      items: [
        { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 6 },
        // Enough alone, not after the first: declined cumulatively.
        { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 6 },
        { from_wallet_id: b.walletId, to_wallet_id: b.walletId, amount: 1 },
        { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 1 },
      ],
    });
    const id = started.body.id as string;
    const done = await ended(api, id);
    expect(done.body).toMatchObject({ status: 'failed', succeeded: 0, failed: 4 });
    const items = await itemsOf(api, id);
    expect(items.map((i) => [i.status, i.error, i.transaction_id])).toEqual([
      ['failed', { status: 400, detail: expect.stringMatching(/^Not made/) }, null],
      ['failed', { status: 400, detail: 'Insufficient funds' }, null],
      ['failed', { status: 400, detail: expect.any(String) }, null],
      ['failed', { status: 400, detail: expect.stringMatching(/^Not made/) }, null],
    ]);
    const single = await api.post('/api/v1/transactions/wallet/transfer', {
      from_wallet_id: b.walletId,
      to_wallet_id: b.walletId,
      amount: 1,
    });
    expect(single.body.detail).toBe(items[2].error.detail);
    expect(await balanceOf(engine.pool, a.walletId)).toBe(1_000n);
    expect(await balanceOf(engine.pool, b.walletId)).toBe(0n);
    const ledger = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM ledger_transactions WHERE metadata->>'batch_id' = ${id}`);
    expect(ledger).toBe(0);
    expect(await batchEvents(id)).toHaveLength(1);
  });

  it('pays cashouts and card payouts through the sandbox, each as its single endpoint would', async () => {
    const cashWallet = await createFundedWallet(api, engine.pool, 100_000n);
    const cashouts = await submit(api, {
      kind: 'mobile_money_cashout',
      items: [
        { wallet_id: cashWallet.walletId, amount: 10_000, phone_number: '+23276123456' },
        // The amount the sandbox refuses (docs/api.md, Test Mode sandbox).
        { wallet_id: cashWallet.walletId, amount: 4040, phone_number: '+23276123456' },
        { wallet_id: cashWallet.walletId, amount: 10_000_000, phone_number: '+23276123456' },
      ],
    });
    expect(cashouts.status).toBe(202);
    const cashDone = await ended(api, cashouts.body.id);
    expect(cashDone.body).toMatchObject({ status: 'partially_failed', succeeded: 1, failed: 2 });
    const cashItems = await itemsOf(api, cashouts.body.id);
    expect(cashItems.map((i) => [i.status, i.error])).toEqual([
      ['succeeded', null],
      ['failed', { status: 400, detail: 'Provider refused the cashout' }],
      ['failed', { status: 400, detail: 'Insufficient funds' }],
    ]);
    const paid = cashItems[0].transaction_id as string;
    expect(await sandboxMobileMoneyPayouts(engine.pool, paid)).toHaveLength(1);
    const tx = await api.get(`/api/v1/transactions/${paid}`);
    expect(tx.body).toMatchObject({ transaction_type: 'mobile_money_cashout', status: 'pending' });
    expect(await ledgerLegs(engine.pool, paid)).toEqual([{ step: 'reserve', legs: 2 }]);
    // The refused one was reserved and given back, as its single request's would be.
    expect(await ledgerLegs(engine.pool, cashItems[1].transaction_id)).toEqual([
      { step: 'reserve', legs: 2 },
      { step: 'give_back', legs: 2 },
    ]);

    const payable = await payableWallet(api, engine.pool, 100_000n);
    const notOnboarded = await createFundedWallet(api, engine.pool, 100_000n);
    const payouts = await submit(api, {
      kind: 'card_payout',
      items: [
        { wallet_id: payable.walletId, amount: 25 },
        { wallet_id: notOnboarded.walletId, amount: 25 },
      ],
    });
    const payDone = await ended(api, payouts.body.id);
    expect(payDone.body).toMatchObject({ status: 'partially_failed', succeeded: 1, failed: 1 });
    const payItems = await itemsOf(api, payouts.body.id);
    expect(payItems[1].error).toEqual({
      status: 400,
      detail: 'Payouts are not enabled for this wallet',
    });
    const payout = payItems[0].transaction_id as string;
    expect(await sandboxCardPayouts(engine.pool, payout)).toHaveLength(1);
    const read = await pollUntil(
      () => api.get(`/api/v1/transactions/${payout}`),
      (reply) => reply.body.status === 'completed',
    );
    expect(read.body).toMatchObject({ transaction_type: 'card_payout', amount: 25 });
    expect(await balanceOf(engine.pool, notOnboarded.walletId)).toBe(100_000n);
    expect(payItems[1].transaction_id).toBeNull();
    await assertLedgerInvariant(engine.pool);
  });

  it('paces items by their kind’s rate limit, and a cancel cancels the items not started', async () => {
    const client = paced.api;
    const a = await createFundedWallet(client, engine.pool, 10_000n);
    const b = await createFundedWallet(client, engine.pool, 0n);
    await awaitRoomInWindow(engine.pool, 30);
    const started = await submit(client, {
      kind: 'transfer',
      items: Array.from({ length: 6 }, () => ({
        from_wallet_id: a.walletId,
        to_wallet_id: b.walletId,
        amount: 1,
      })),
    });
    expect(started.status).toBe(202);
    const id = started.body.id as string;
    // Two a minute: two items run, the batch waits for the next window; its counts say so
    // while it waits, not only once a page of items has ended.
    const counted = await pollUntil(
      () => client.get(`${BATCHES}/${id}`),
      (reply) => reply.body.succeeded === 2,
      { timeoutMs: 10_000 },
    );
    expect(counted.body).toMatchObject({ status: 'processing', succeeded: 2, failed: 0 });
    expect(await balanceOf(engine.pool, b.walletId)).toBe(200n);
    // The batch never took a 429: the application's own transfer is the one refused.
    expectRateLimited(
      await client.post('/api/v1/transactions/wallet/transfer', {
        from_wallet_id: a.walletId,
        to_wallet_id: b.walletId,
        amount: 1,
      }),
    );
    const canceled = await client.post(`${BATCHES}/${id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ id, succeeded: 2, canceled: 4 });
    const done = await ended(client, id);
    expect(done.body).toMatchObject({ status: 'canceled', succeeded: 2, failed: 0, canceled: 4 });
    const items = await itemsOf(client, id, '&status=canceled');
    expect(items.map((i) => [i.index, i.transaction_id, i.error])).toEqual([
      [2, null, null],
      [3, null, null],
      [4, null, null],
      [5, null, null],
    ]);
    expect(await balanceOf(engine.pool, b.walletId)).toBe(200n);
    expectError(await client.post(`${BATCHES}/${id}/cancel`), 400);
    // The cancel is in the audit log, by the application's credential; the refused one is not.
    expect(await auditOf(id)).toEqual([
      { actor_type: 'application', action: 'batch.created', details: expect.anything() },
      { actor_type: 'application', action: 'batch.canceled', details: { canceled: 4 } },
    ]);
    expect(await requestedCancel(id)).toBe(true);
  });

  it('paces a batch sent from the dashboard under the session’s subject, and audits its cancel', async () => {
    const email = await dashboardAccount(engine.pool, paced.app.id, 'owner');
    const owner = await signIn(engine.url, email);
    const a = await createFundedWallet(paced.api, engine.pool, 10_000n);
    const b = await createFundedWallet(paced.api, engine.pool, 0n);
    await awaitRoomInWindow(engine.pool, 30);
    const started = await clientFor(engine.url, null).post(
      '/dashboard/api/test/v1/batches',
      {
        kind: 'transfer',
        items: Array.from({ length: 5 }, () => ({
          from_wallet_id: a.walletId,
          to_wallet_id: b.walletId,
          amount: 1,
        })),
      },
      { ...owner.headers, 'Idempotency-Key': newKey() },
    );
    expect(started.status).toBe(202);
    const id = started.body.id as string;
    // No credential sent it: its items count where the dashboard's requests of the application
    // and mode count, two transfers a minute.
    const subject = `session:${paced.app.id}:test`;
    const stored = await engine.pool.one(
      sql.type(
        z.object({
          credential_id: z.string().nullable(),
          rate_limit_subject: z.string().nullable(),
        }),
      )`SELECT credential_id, rate_limit_subject FROM batches WHERE id = ${id}`,
    );
    expect(stored).toEqual({ credential_id: null, rate_limit_subject: subject });
    const counted = await pollUntil(
      () => paced.api.get(`${BATCHES}/${id}`),
      (reply) => reply.body.succeeded === 2,
      { timeoutMs: 10_000 },
    );
    expect(counted.body).toMatchObject({ status: 'processing', succeeded: 2, failed: 0 });
    const used = await engine.pool.oneFirst(sql.type(z.object({ count: z.number() }))`
      SELECT count FROM throttle_counters
      WHERE subject = ${subject} AND category = 'transfers'
        AND window_start = date_trunc('minute', now())`);
    expect(used).toBe(2);
    expect(await balanceOf(engine.pool, b.walletId)).toBe(200n);

    const canceled = await owner.request('POST', `/dashboard/api/test/v1/batches/${id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ id, succeeded: 2, canceled: 3 });
    expect(await auditOf(id)).toEqual([
      { actor_type: 'dashboard_account', action: 'batch.created', details: expect.anything() },
      { actor_type: 'dashboard_account', action: 'batch.canceled', details: { canceled: 3 } },
    ]);
    const done = await ended(paced.api, id);
    expect(done.body).toMatchObject({ status: 'canceled', succeeded: 2, canceled: 3 });
  });

  it('counts batch requests in the batches category (10 a minute)', async () => {
    const client = limited.api;
    const a = await createFundedWallet(clientFor(engine.url, app), engine.pool, 0n);
    await awaitRoomInWindow(engine.pool, 30);
    const body = {
      kind: 'transfer',
      items: [{ from_wallet_id: a.walletId, to_wallet_id: a.walletId, amount: 1 }],
    };
    const answers = [];
    for (let i = 0; i < 11; i += 1) answers.push(await submit(client, body));
    expect(answers.slice(0, 10).map((r) => r.status)).toEqual(Array(10).fill(202));
    expectRateLimited(answers[10]!);
  });

  it('starts each item as the payment workflow its single endpoint starts, with the key-derived id', async () => {
    const a = await createFundedWallet(api, engine.pool, 1_000n);
    const b = await createFundedWallet(api, engine.pool, 0n);
    const started = await submit(api, {
      kind: 'transfer',
      items: [{ from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 1 }],
    });
    await ended(api, started.body.id);
    const [item] = await itemsOf(api, started.body.id);
    const ids = await listWorkflowIds(
      engine.temporal,
      `WorkflowId = 'transfer-${item.transaction_id}' AND ApplicationId = '${app.id}'`,
    );
    expect(ids).toEqual([`transfer-${item.transaction_id}`]);
  });

  it('the typed client submits a batch, waits for its end, and walks its items', async () => {
    const a = await createFundedWallet(api, engine.pool, 1_000n);
    const b = await createFundedWallet(api, engine.pool, 0n);
    const items = Array.from({ length: 150 }, (_, i) => ({
      from_wallet_id: a.walletId,
      to_wallet_id: b.walletId,
      amount: 0.01,
      reference: `line-${i}`,
    }));
    const key = newKey();
    const batch = await client.submitBatch(
      { kind: 'transfer', items },
      { idempotencyKey: key, pollMs: 100 },
    );
    expect(batch).toMatchObject({ status: 'completed', total: 150, succeeded: 150 });
    const walked = [];
    for await (const item of client.batchItems(batch.id)) walked.push(item);
    expect(walked.map((i) => i.reference)).toEqual(items.map((i) => i.reference));
    expect(walked.every((i) => i.status === 'succeeded' && i.transaction_id)).toBe(true);
    const failed = [];
    for await (const item of client.batchItems(batch.id, { status: 'failed' })) failed.push(item);
    expect(failed).toEqual([]);
    expect(await balanceOf(engine.pool, b.walletId)).toBe(150n);
    // Sent again with its key, the same batch, paid once.
    const again = await client.submitBatch({ kind: 'transfer', items }, { idempotencyKey: key });
    expect(again.id).toBe(batch.id);
    expect(await balanceOf(engine.pool, b.walletId)).toBe(150n);
  });

  it('delivers batch.completed to a webhook subscription, signed, once the last item has ended', async () => {
    const subscription = await api.post('/api/v1/webhooks/subscriptions', {
      url: receiver.url('/batches'),
      events: ['batch.completed'],
    });
    expect(subscription.status).toBe(201);
    const a = await createFundedWallet(api, engine.pool, 1_000n);
    const b = await createFundedWallet(api, engine.pool, 0n);
    const started = await submit(api, {
      kind: 'transfer',
      items: [
        { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 1 },
        { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 1_000 },
      ],
    });
    const done = await ended(api, started.body.id);
    const delivered = await receiver.waitFor(
      (r) => r.payload?.type === 'batch.completed' && r.payload.data?.id === started.body.id,
      30_000,
    );
    expect(verify(subscription.body.secret, delivered)).toMatchObject({
      type: 'batch.completed',
      data: done.body,
    });
    expect(done.body).toMatchObject({ status: 'partially_failed', succeeded: 1, failed: 1 });
  });

  it('takes 10,000 items in one request, and one more is refused', async () => {
    const a = await createFundedWallet(api, engine.pool, 1_000_000n);
    const b = await createFundedWallet(api, engine.pool, 0n);
    const items = Array.from({ length: 10_000 }, (_, i) => ({
      from_wallet_id: a.walletId,
      to_wallet_id: b.walletId,
      amount: 0.01,
      reference: `invoice-${i}`,
      metadata: { invoice: `INV-${i}` },
    }));
    const started = await submit(api, { kind: 'transfer', items });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ total: 10_000, status: 'processing' });
    const id = started.body.id as string;
    const canceled = await api.post(`${BATCHES}/${id}/cancel`);
    expect(canceled.status).toBe(200);
    const done = await ended(api, id);
    expect(done.body.status).toBe('canceled');
    const { succeeded, failed } = done.body as { succeeded: number; failed: number };
    expect(succeeded + failed + (done.body.canceled as number)).toBe(10_000);
    expect(failed).toBe(0);
    expect(await balanceOf(engine.pool, b.walletId)).toBe(BigInt(succeeded));
    const last = await api.get(`${BATCHES}/${id}/items?starting_after=9998`);
    expect(last.body).toMatchObject({
      data: [{ index: 9_999, reference: 'invoice-9999' }],
      has_more: false,
    });
    const tooMany = await submit(api, { kind: 'transfer', items: [...items, items[0]] });
    expect(expectError(tooMany, 422)).toMatch(/^items: must hold 1 to 10,000 items/);
    await assertLedgerInvariant(engine.pool);
  });
});
