import { sql } from 'slonik';
import { z } from 'zod';
import { assertLedgerInvariant, balanceOf, fundWallet } from '../support/database';
import { createTestApp } from '../support/engine';
import { clientFor, createFundedWallet, createUserWithWallet } from '../support/http';
import { reply, useWalletClient } from '../support/client';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { app, api } = useTestApp(engine);
const client = useWalletClient(engine, app);
const liveClient = useWalletClient(engine, app, 'live');

const TRANSFER = '/api/v1/transactions/wallet/transfer';

async function twoWallets(fundMinor = 10_000n) {
  const a = await createFundedWallet(api, engine.pool, fundMinor);
  const b = await createUserWithWallet(api);
  return { from: a.walletId, to: b.walletId };
}

describe('POST /api/v1/transactions/wallet/transfer', () => {
  it('moves the amount between wallets as one balanced ledger transaction and an event', async () => {
    const { from, to } = await twoWallets(10_000n);
    const res = await reply(
      client.raw.POST(TRANSFER, {
        body: {
          from_wallet_id: from,
          to_wallet_id: to,
          amount: 12.5,
          description: 'rent',
        },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      wallet_id: from,
      recipient_wallet_id: to,
      amount: 12.5,
      transaction_type: 'transfer',
      status: 'completed',
      description: 'rent',
    });
    expect(await balanceOf(engine.pool, from)).toBe(8_750n);
    expect(await balanceOf(engine.pool, to)).toBe(1_250n);
    const entries = await engine.pool.any(sql.type(
      z.object({ account_id: z.string(), amount: z.bigint() }),
    )`
      SELECT e.account_id, e.amount FROM ledger_entries e
      JOIN ledger_transactions t ON t.id = e.ledger_transaction_id
      WHERE t.transaction_id = ${res.body.id} ORDER BY e.amount`);
    expect(entries).toEqual([
      { account_id: from, amount: -1_250n },
      { account_id: to, amount: 1_250n },
    ]);
    const events = await engine.pool.any(sql.type(z.object({ type: z.string(), data: z.any() }))`
      SELECT type, data FROM events WHERE transaction_id = ${res.body.id}`);
    expect(events).toEqual([
      {
        type: 'transfer.completed',
        data: expect.objectContaining({ id: res.body.id, amount: 12.5 }),
      },
    ]);
    const wallet = await api.get(`/api/v1/transactions/wallet/transfer`);
    expect(wallet.status).toBe(405);
    await assertLedgerInvariant(engine.pool);
  });

  it('declines insufficient funds with 400 and moves nothing', async () => {
    const { from, to } = await twoWallets(1_000n);
    const res = await reply(
      client.raw.POST(TRANSFER, {
        body: { from_wallet_id: from, to_wallet_id: to, amount: 10.01 },
      }),
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'Insufficient funds' });
    expect(await balanceOf(engine.pool, from)).toBe(1_000n);
    expect(await balanceOf(engine.pool, to)).toBe(0n);
  });

  it('answers 400 for the same wallet, 404 for a missing one, 403 for a disabled or foreign one', async () => {
    const { from, to } = await twoWallets();
    expect(
      (
        await reply(
          client.raw.POST(TRANSFER, {
            body: { from_wallet_id: from, to_wallet_id: from, amount: 1 },
          }),
        )
      ).status,
    ).toBe(400);
    const missing = await reply(
      client.raw.POST(TRANSFER, {
        body: {
          from_wallet_id: from,
          to_wallet_id: '00000000-0000-4000-8000-000000000000',
          amount: 1,
        },
      }),
    );
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toMatch(/not found/i);

    expect(
      (
        await reply(
          client.raw.POST('/api/v1/wallets/{wallet_id}/disable', {
            params: { path: { wallet_id: to } },
          }),
        )
      ).status,
    ).toBe(200);
    const disabled = await reply(
      client.raw.POST(TRANSFER, {
        body: {
          from_wallet_id: from,
          to_wallet_id: to,
          amount: 1,
        },
      }),
    );
    expect(disabled.status).toBe(403);
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/wallets/{wallet_id}/enable', {
            params: { path: { wallet_id: to } },
          }),
        )
      ).status,
    ).toBe(200);

    const other = await createTestApp(engine.pool);
    const otherApi = clientFor(engine.url, other);
    const foreign = await createUserWithWallet(otherApi);
    expect(
      (
        await reply(
          client.raw.POST(TRANSFER, {
            body: {
              from_wallet_id: from,
              to_wallet_id: foreign.walletId,
              amount: 1,
            },
          }),
        )
      ).status,
    ).toBe(403);
    expect(
      (
        await reply(
          liveClient.raw.POST(TRANSFER, {
            body: { from_wallet_id: from, to_wallet_id: to, amount: 1 },
          }),
        )
      ).status,
    ).toBe(403);
    expect(await balanceOf(engine.pool, from)).toBe(10_000n);
    await assertLedgerInvariant(engine.pool);
  });

  it('refuses a wallet disabled behind the API’s back after it saw it active: 403 from the ledger step, nothing moved', async () => {
    const { from, to } = await twoWallets();
    const transfer = { from_wallet_id: from, to_wallet_id: to, amount: 1 };
    // Both wallets seen active: the API's memory of them now spares the lookup.
    expect((await reply(client.raw.POST(TRANSFER, { body: transfer }))).status).toBe(200);
    await engine.pool.query(sql.unsafe`UPDATE wallets SET is_active = false WHERE id = ${to}`);
    const refused = await reply(client.raw.POST(TRANSFER, { body: transfer }));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ detail: 'Wallet is disabled' });
    // Another mode's caller is refused at once, memory or not.
    await engine.pool.query(sql.unsafe`UPDATE wallets SET is_active = true WHERE id = ${to}`);
    expect((await reply(liveClient.raw.POST(TRANSFER, { body: transfer }))).status).toBe(403);
    expect((await reply(client.raw.POST(TRANSFER, { body: transfer }))).status).toBe(200);
    expect(await balanceOf(engine.pool, from)).toBe(9_800n);
    expect(await balanceOf(engine.pool, to)).toBe(200n);
    const transfers = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions WHERE wallet_id = ${from}`);
    expect(transfers).toBe(2);
    await assertLedgerInvariant(engine.pool);
  });

  it.each([[0], [-1], [1.001], ['5'], [null]])('answers 422 for amount %p', async (amount) => {
    const { from, to } = await twoWallets(0n);
    // Malformed amounts the typed client cannot send: raw HTTP.
    const res = await api.post(TRANSFER, { from_wallet_id: from, to_wallet_id: to, amount });
    expect(res.status).toBe(422);
    expect(typeof res.body.detail).toBe('string');
  });

  it('replays a retried Idempotency-Key with the first response and moves money once', async () => {
    const { from, to } = await twoWallets(10_000n);
    const body = { from_wallet_id: from, to_wallet_id: to, amount: 3 };
    const first = await reply(
      client.raw.POST(TRANSFER, {
        params: { header: { 'Idempotency-Key': 'replay-1' } },
        body,
      }),
    );
    const second = await reply(
      client.raw.POST(TRANSFER, {
        params: { header: { 'Idempotency-Key': 'replay-1' } },
        body,
      }),
    );
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(await balanceOf(engine.pool, from)).toBe(9_700n);

    const changed = await reply(
      client.raw.POST(TRANSFER, {
        params: { header: { 'Idempotency-Key': 'replay-1' } },
        body: { ...body, amount: 4 },
      }),
    );
    expect(changed.status).toBe(422);
    expect(changed.body).toEqual({
      detail: 'Idempotency-Key was already used with a different request',
    });
    expect(await balanceOf(engine.pool, from)).toBe(9_700n);
  });

  it('moves money once for 50 concurrent requests with one Idempotency-Key', async () => {
    const { from, to } = await twoWallets(10_000n);
    const body = { from_wallet_id: from, to_wallet_id: to, amount: 1.25 };
    const replies = await Promise.all(
      Array.from({ length: 50 }, () =>
        reply(
          client.raw.POST(TRANSFER, {
            params: { header: { 'Idempotency-Key': 'burst-1' } },
            body,
          }),
        ),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(new Set(replies.map((r) => r.body.id)).size).toBe(1);
    expect(replies.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(49);
    expect(await balanceOf(engine.pool, from)).toBe(10_000n - 125n);
    expect(await balanceOf(engine.pool, to)).toBe(125n);
    const count = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions WHERE wallet_id = ${from}`);
    expect(count).toBe(1);
    await assertLedgerInvariant(engine.pool);
  });
});

describe('wallet ids in request bodies', () => {
  it('answers 404, not 500, for a wallet id that is not a UUID', async () => {
    const { from } = await twoWallets(100n);
    const res = await reply(
      client.raw.POST(TRANSFER, {
        body: {
          from_wallet_id: from,
          to_wallet_id: 'not-a-uuid',
          amount: 1,
        },
      }),
    );
    expect(res.status).toBe(404);
    const hold = await reply(
      client.raw.POST('/api/v1/escrow/hold', { body: { wallet_id: 'nope', amount: 1 } }),
    );
    expect(hold.status).toBe(404);
    const deposit = await reply(
      client.raw.POST('/api/v1/transactions/wallet/mobile-money-deposit', {
        body: {
          wallet_id: 'nope',
          amount: 100,
        },
      }),
    );
    expect(deposit.status).toBe(404);
  });
});

describe('a transfer that outlives the request deadline', () => {
  const slow = useTestEngine({ requestTimeoutMs: 500 });
  const { api: slowApi } = useTestApp(slow);
  // No worker polls until told: every payment outlives the request's deadline.
  beforeAll(async () => slow.stopWorker());

  it('answers 504 "retry with the same Idempotency-Key" only when a key was sent; the payments go on', async () => {
    const a = await createUserWithWallet(slowApi);
    const b = await createUserWithWallet(slowApi);
    await fundWallet(slow.pool, a.walletId, 1_000n);
    const body = { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 1 };
    const keyed = await slowApi.post(TRANSFER, body, { 'Idempotency-Key': 'slow-1' });
    expect(keyed.status).toBe(504);
    expect(keyed.body.detail).toMatch(/retry with the same Idempotency-Key/);
    // Without a key a retry would be a second payment: the answer must not invite one.
    const unkeyed = await slowApi.post(TRANSFER, body);
    expect(unkeyed.status).toBe(504);
    expect(unkeyed.body.detail).not.toMatch(/retry with the same/);
    expect(unkeyed.body.detail).toMatch(/without an Idempotency-Key/);
    expect(await balanceOf(slow.pool, b.walletId)).toBe(0n);

    await slow.startWorker();
    for (let i = 0; i < 100 && (await balanceOf(slow.pool, b.walletId)) !== 200n; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await balanceOf(slow.pool, b.walletId)).toBe(200n);
    // The ledger step stored the request's answer under its key, with the money, while no
    // request waited: the retry is a replay of it.
    const stored = await slow.pool.one(
      sql.type(
        z.object({ response_status: z.number().nullable(), response_body: z.unknown() }),
      )`SELECT response_status, response_body FROM idempotency_keys WHERE key = 'slow-1'`,
    );
    expect(stored.response_status).toBe(200);
    const replay = await slowApi.post(TRANSFER, body, { 'Idempotency-Key': 'slow-1' });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(stored.response_body);
    expect(await balanceOf(slow.pool, b.walletId)).toBe(200n);
    await assertLedgerInvariant(slow.pool);
  });
});
