import { sql } from 'slonik';
import { z } from 'zod';
import { assertLedgerInvariant, balanceOf, statementsOf } from '../support/database';
import { createTestApp } from '../support/engine';
import {
  clientFor,
  createFundedWallet,
  createUserWithWallet,
  type ApiClient,
} from '../support/http';
import { reply, useWalletClient } from '../support/client';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { app, api } = useTestApp(engine, {
  // 2.5% + 0.10 on each release.
  settings: { escrowFeeBps: 250, escrowFeeFixed: 10n },
});
const client = useWalletClient(engine, app);

const TRANSACTION_FIELDS = [
  'amount',
  'application_fee',
  'application_wallet_id',
  'created_at',
  'description',
  'escrow_amount',
  'escrow_wallet_id',
  'id',
  'metadata',
  'recipient_wallet_id',
  'status',
  'transaction_type',
  'updated_at',
  'wallet_id',
];

async function parties(fund = 10_000n) {
  const sender = await createFundedWallet(api, engine.pool, fund);
  const recipient = await createUserWithWallet(api);
  return { sender: sender.walletId, recipient: recipient.walletId };
}

async function feeBalance(): Promise<bigint> {
  return (
    (await engine.pool.maybeOneFirst(sql.type(z.object({ balance: z.bigint() }))`
      SELECT balance FROM ledger_accounts WHERE application_id = ${app.id} AND mode = 'test' AND kind = 'application_fees' AND currency = 'SLE'`)) ??
    0n
  );
}

async function eventTypes(transactionId: string): Promise<string[]> {
  const rows = await engine.pool.any(sql.type(z.object({ type: z.string() }))`
    SELECT type FROM events WHERE transaction_id = ${transactionId}`);
  return rows.map((r) => r.type);
}

describe('escrow', () => {
  it('holds, then releases in full to the recipient minus the escrow fee', async () => {
    const { sender, recipient } = await parties();
    const hold = await reply(
      client.raw.POST('/api/v1/escrow/hold', {
        body: {
          wallet_id: sender,
          amount: 40,
          description: 'order 17',
        },
      }),
    );
    expect(hold.status).toBe(200);
    expect(Object.keys(hold.body).sort()).toEqual(TRANSACTION_FIELDS);
    expect(hold.body).toMatchObject({
      transaction_type: 'escrow_hold',
      status: 'held',
      amount: 40,
      escrow_amount: 40,
      wallet_id: sender,
    });
    expect(await balanceOf(engine.pool, sender)).toBe(6_000n);
    expect(await balanceOf(engine.pool, hold.body.escrow_wallet_id)).toBeGreaterThanOrEqual(4_000n);
    expect(await eventTypes(hold.body.id)).toEqual(['escrow.held']);

    const feesBefore = await feeBalance();
    const release = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
        params: { path: { transaction_id: hold.body.id } },
        body: {
          recipient_wallet_id: recipient,
        },
      }),
    );
    expect(release.status).toBe(200);
    // fee = 2.5% of 40.00 + 0.10 = 1.10; net 38.90
    expect(release.body).toMatchObject({
      transaction_type: 'escrow_release',
      status: 'completed',
      amount: 38.9,
      application_fee: 1.1,
      escrow_amount: 0,
      recipient_wallet_id: recipient,
      wallet_id: sender,
    });
    expect(release.body.application_wallet_id).toEqual(expect.any(String));
    expect(await balanceOf(engine.pool, recipient)).toBe(3_890n);
    expect((await feeBalance()) - feesBefore).toBe(110n);
    expect(await eventTypes(release.body.id)).toEqual(['escrow.released']);
    const now = await reply(
      client.raw.GET('/api/v1/escrow/{transaction_id}', {
        params: { path: { transaction_id: hold.body.id } },
      }),
    );
    expect(now.body).toMatchObject({ escrow_amount: 0, status: 'completed' });
    const again = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
        params: { path: { transaction_id: hold.body.id } },
        body: {
          recipient_wallet_id: recipient,
        },
      }),
    );
    expect(again.status).toBe(400);
    const refund = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/refund', {
        params: { path: { transaction_id: hold.body.id } },
      }),
    );
    expect(refund.status).toBe(400);
    await assertLedgerInvariant(engine.pool);
  });

  it('releases partially, keeps the rest held, and refunds the rest without a fee', async () => {
    const { sender, recipient } = await parties();
    const hold = await reply(
      client.raw.POST('/api/v1/escrow/hold', {
        body: {
          wallet_id: sender,
          amount: 50,
          recipient_wallet_id: recipient,
        },
      }),
    );
    const part = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
        params: { path: { transaction_id: hold.body.id } },
        body: { amount: 20 },
      }),
    );
    expect(part.status).toBe(200);
    expect(part.body).toMatchObject({ amount: 19.4, application_fee: 0.6, escrow_amount: 30 });
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/escrow/{transaction_id}', {
            params: { path: { transaction_id: hold.body.id } },
          }),
        )
      ).body,
    ).toMatchObject({
      status: 'held',
      escrow_amount: 30,
    });
    const tooMuch = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
        params: { path: { transaction_id: hold.body.id } },
        body: { amount: 30.01 },
      }),
    );
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body).toEqual({ detail: 'Release amount exceeds the held amount' });
    const refund = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/refund', {
        params: { path: { transaction_id: hold.body.id } },
      }),
    );
    expect(refund.status).toBe(200);
    expect(refund.body).toMatchObject({
      transaction_type: 'escrow_refund',
      status: 'completed',
      amount: 30,
      escrow_amount: 0,
      wallet_id: sender,
      recipient_wallet_id: null,
      application_fee: null,
      application_wallet_id: null,
    });
    expect(await balanceOf(engine.pool, sender)).toBe(10_000n - 2_000n);
    expect(await balanceOf(engine.pool, recipient)).toBe(1_940n);
    expect(await eventTypes(refund.body.id)).toEqual(['escrow.refunded']);
    await assertLedgerInvariant(engine.pool);
  });

  it('answers the statuses of the specification', async () => {
    const { sender, recipient } = await parties(1_000n);
    const poor = await reply(
      client.raw.POST('/api/v1/escrow/hold', { body: { wallet_id: sender, amount: 10.01 } }),
    );
    expect(poor.status).toBe(400);
    expect(poor.body.detail).toBe('Insufficient funds');
    for (const amount of [0, -1, 1.005]) {
      expect(
        (
          await reply(
            client.raw.POST('/api/v1/escrow/hold', { body: { wallet_id: sender, amount } }),
          )
        ).status,
      ).toBe(422);
    }
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/escrow/hold', {
            body: {
              wallet_id: sender,
              amount: 1,
              expires_at: '2001-01-01T00:00:00Z',
            },
          }),
        )
      ).status,
    ).toBe(422);
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/escrow/hold', {
            body: {
              wallet_id: '00000000-0000-4000-8000-000000000000',
              amount: 1,
            },
          }),
        )
      ).status,
    ).toBe(404);
    const hold = await reply(
      client.raw.POST('/api/v1/escrow/hold', { body: { wallet_id: sender, amount: 5 } }),
    );
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
            params: { path: { transaction_id: hold.body.id } },
            body: {
              recipient_wallet_id: recipient,
              amount: 0,
            },
          }),
        )
      ).status,
    ).toBe(422);
    expect(
      (
        await api.post('/api/v1/escrow/00000000-0000-4000-8000-000000000000/release', {
          recipient_wallet_id: recipient,
        })
      ).status,
    ).toBe(404);
    expect(
      (await api.post('/api/v1/escrow/00000000-0000-4000-8000-000000000000/refund')).status,
    ).toBe(404);
    expect((await api.get('/api/v1/escrow/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const other = await createTestApp(engine.pool);
    const otherApi = clientFor(engine.url, other);
    const foreign = await createUserWithWallet(otherApi);
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
            params: { path: { transaction_id: hold.body.id } },
            body: {
              recipient_wallet_id: foreign.walletId,
            },
          }),
        )
      ).status,
    ).toBe(403);
    expect((await otherApi.post(`/api/v1/escrow/${hold.body.id}/refund`)).status).toBe(403);
    await reply(
      client.raw.POST('/api/v1/wallets/{wallet_id}/disable', {
        params: { path: { wallet_id: recipient } },
      }),
    );
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
            params: { path: { transaction_id: hold.body.id } },
            body: { recipient_wallet_id: recipient },
          }),
        )
      ).status,
    ).toBe(403);
    await reply(
      client.raw.POST('/api/v1/wallets/{wallet_id}/disable', {
        params: { path: { wallet_id: sender } },
      }),
    );
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/escrow/hold', { body: { wallet_id: sender, amount: 1 } }),
        )
      ).status,
    ).toBe(403);
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/escrow/{transaction_id}', {
            params: { path: { transaction_id: hold.body.id } },
          }),
        )
      ).body,
    ).toMatchObject({
      status: 'held',
      escrow_amount: 5,
    });
    await assertLedgerInvariant(engine.pool);
  });

  it('releases a hold the API made without reading it first, and answers as a read hold would', async () => {
    const { sender, recipient } = await parties();
    const hold = await reply(
      client.raw.POST('/api/v1/escrow/hold', {
        body: {
          wallet_id: sender,
          amount: 30,
          recipient_wallet_id: recipient,
        },
      }),
    );
    expect(hold.status).toBe(200);
    const holdReads = (sent: { text: string; values: unknown[] }[]) =>
      sent.filter(
        (s) => /FROM transactions WHERE id = \$1$/.test(s.text) && s.values[0] === hold.body.id,
      );
    let part: Awaited<ReturnType<ApiClient['post']>> | undefined;
    const sent = await statementsOf(
      async () =>
        (part = await reply(
          client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
            params: { path: { transaction_id: hold.body.id } },
            body: { amount: 10 },
          }),
        )),
    );
    expect(part?.status).toBe(200);
    expect(part?.body).toMatchObject({
      amount: 9.65,
      escrow_amount: 20,
      recipient_wallet_id: recipient,
    });
    expect(holdReads(sent)).toEqual([]);
    // More than it holds: the workflow's step declines, nothing is written.
    const tooMuch = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
        params: { path: { transaction_id: hold.body.id } },
        body: { amount: 20.01 },
      }),
    );
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body).toEqual({ detail: 'Release amount exceeds the held amount' });
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
            params: { path: { transaction_id: hold.body.id } },
            body: {},
          }),
        )
      ).status,
    ).toBe(200);

    // Nothing is held any more: that is the answer, before what is wrong with the recipient.
    const notHeld = { detail: 'The escrow transaction is not in held status' };
    const again = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
        params: { path: { transaction_id: hold.body.id } },
        body: {},
      }),
    );
    expect(again.status).toBe(400);
    expect(again.body).toEqual(notHeld);
    const other = await createUserWithWallet(api);
    await reply(
      client.raw.POST('/api/v1/wallets/{wallet_id}/disable', {
        params: { path: { wallet_id: other.walletId } },
      }),
    );
    const toDisabled = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
        params: { path: { transaction_id: hold.body.id } },
        body: {
          recipient_wallet_id: other.walletId,
        },
      }),
    );
    expect(toDisabled.status).toBe(400);
    expect(toDisabled.body).toEqual(notHeld);
    const refund = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/refund', {
        params: { path: { transaction_id: hold.body.id } },
      }),
    );
    expect(refund.status).toBe(400);
    expect(refund.body).toEqual(notHeld);
    const steps = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions WHERE parent_id = ${hold.body.id}`);
    expect(steps).toBe(2);
    expect(await balanceOf(engine.pool, sender)).toBe(7_000n);
    await assertLedgerInvariant(engine.pool);
  });

  it('refuses a hold naming a recipient disabled behind the API’s back after it saw it active', async () => {
    const { sender, recipient } = await parties();
    const hold = { wallet_id: sender, recipient_wallet_id: recipient, amount: 10 };
    // Both wallets seen active: the API's memory of them now spares the lookup.
    expect((await reply(client.raw.POST('/api/v1/escrow/hold', { body: hold }))).status).toBe(200);
    await engine.pool.query(
      sql.unsafe`UPDATE wallets SET is_active = false WHERE id = ${recipient}`,
    );
    const refused = await reply(client.raw.POST('/api/v1/escrow/hold', { body: hold }));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ detail: 'Wallet is disabled' });
    expect(await balanceOf(engine.pool, sender)).toBe(9_000n);
    const holds = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions WHERE wallet_id = ${sender}`);
    expect(holds).toBe(1);
    await assertLedgerInvariant(engine.pool);
  });

  it('releases once for 50 concurrent identical releases with one Idempotency-Key', async () => {
    const { sender, recipient } = await parties();
    const hold = await reply(
      client.raw.POST('/api/v1/escrow/hold', { body: { wallet_id: sender, amount: 30 } }),
    );
    const replies = await Promise.all(
      Array.from({ length: 50 }, () =>
        reply(
          client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
            params: {
              path: { transaction_id: hold.body.id },
              header: { 'Idempotency-Key': 'rel-1' },
            },
            body: { recipient_wallet_id: recipient, amount: 10 },
          }),
        ),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(new Set(replies.map((r) => r.body.id)).size).toBe(1);
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/escrow/{transaction_id}', {
            params: { path: { transaction_id: hold.body.id } },
          }),
        )
      ).body.escrow_amount,
    ).toBe(20);
    expect(await balanceOf(engine.pool, recipient)).toBe(1_000n - 35n);
    await assertLedgerInvariant(engine.pool);
  });

  it('never pays out more than was held when releases and refunds race', async () => {
    const { sender, recipient } = await parties();
    const hold = await reply(
      client.raw.POST('/api/v1/escrow/hold', { body: { wallet_id: sender, amount: 20 } }),
    );
    const replies = await Promise.all([
      reply(
        client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
          params: { path: { transaction_id: hold.body.id } },
          body: {
            recipient_wallet_id: recipient,
            amount: 15,
          },
        }),
      ),
      reply(
        client.raw.POST('/api/v1/escrow/{transaction_id}/refund', {
          params: { path: { transaction_id: hold.body.id } },
        }),
      ),
      reply(
        client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
          params: { path: { transaction_id: hold.body.id } },
          body: {
            recipient_wallet_id: recipient,
            amount: 15,
          },
        }),
      ),
      reply(
        client.raw.POST('/api/v1/escrow/{transaction_id}/refund', {
          params: { path: { transaction_id: hold.body.id } },
        }),
      ),
    ]);
    expect(replies.every((r) => r.status === 200 || r.status === 400)).toBe(true);
    const paidOut = await engine.pool.oneFirst(sql.type(z.object({ total: z.bigint() }))`
      SELECT coalesce(sum(CASE WHEN transaction_type = 'escrow_release' THEN amount + coalesce(application_fee, 0) ELSE amount END), 0)::bigint AS total
      FROM transactions WHERE parent_id = ${hold.body.id}`);
    expect(paidOut).toBe(2_000n);
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/escrow/{transaction_id}', {
            params: { path: { transaction_id: hold.body.id } },
          }),
        )
      ).body.escrow_amount,
    ).toBe(0);
    expect(
      (await balanceOf(engine.pool, sender)) + (await balanceOf(engine.pool, recipient)),
    ).toBeLessThanOrEqual(10_000n);
    await assertLedgerInvariant(engine.pool);
  });

  it('refunds automatically when expires_at passes', async () => {
    const { sender } = await parties();
    const expiresAt = new Date(Date.now() + 3000).toISOString();
    const hold = await reply(
      client.raw.POST('/api/v1/escrow/hold', {
        body: {
          wallet_id: sender,
          amount: 25,
          expires_at: expiresAt,
        },
      }),
    );
    expect(hold.status).toBe(200);
    expect(await balanceOf(engine.pool, sender)).toBe(7_500n);
    await engine.temporal.workflow.getHandle(`escrow-${hold.body.id}`).result();
    expect(await balanceOf(engine.pool, sender)).toBe(10_000n);
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/escrow/{transaction_id}', {
            params: { path: { transaction_id: hold.body.id } },
          }),
        )
      ).body,
    ).toMatchObject({
      escrow_amount: 0,
    });
    const refunds = await engine.pool.any(sql.type(
      z.object({ transaction_type: z.string(), description: z.string() }),
    )`
      SELECT transaction_type, description FROM transactions WHERE parent_id = ${hold.body.id}`);
    expect(refunds).toEqual([{ transaction_type: 'escrow_refund', description: '(expired)' }]);
    await assertLedgerInvariant(engine.pool);
  });
});

describe('escrow retries', () => {
  it('answers a retried release whose first answer was never stored with that release, not a 400', async () => {
    const { sender, recipient } = await parties();
    const hold = await reply(
      client.raw.POST('/api/v1/escrow/hold', { body: { wallet_id: sender, amount: 12 } }),
    );
    const body = { recipient_wallet_id: recipient };
    const first = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
        params: {
          path: { transaction_id: hold.body.id },
          header: {
            'Idempotency-Key': 'lost-answer',
          },
        },
        body,
      }),
    );
    expect(first.status).toBe(200);
    // As if the first request had died after the money moved but before its answer was stored.
    await engine.pool.query(sql.unsafe`
      UPDATE idempotency_keys SET response_status = NULL, response_body = NULL WHERE key = 'lost-answer'`);
    const retry = await reply(
      client.raw.POST('/api/v1/escrow/{transaction_id}/release', {
        params: {
          path: { transaction_id: hold.body.id },
          header: {
            'Idempotency-Key': 'lost-answer',
          },
        },
        body,
      }),
    );
    expect(retry.status).toBe(200);
    expect(retry.body.id).toBe(first.body.id);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const releases = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions WHERE parent_id = ${hold.body.id}`);
    expect(releases).toBe(1);
  });

  it('stores the answer of a hold, a release and a refund under their keys, with the money', async () => {
    const { sender, recipient } = await parties();
    const keyed = async (key: string, path: string, body?: unknown) => {
      const res = await api.post(path, body, { 'Idempotency-Key': key });
      expect(res.status).toBe(200);
      const stored = await engine.pool.one(sql.type(
        z.object({
          response_status: z.number(),
          response_body: z.unknown(),
          completed_at: z.string(),
          ledger_at: z.string(),
        }),
      )`
        SELECT k.response_status, k.response_body, k.completed_at, l.created_at AS ledger_at
        FROM idempotency_keys k JOIN ledger_transactions l ON l.transaction_id = ${res.body.id}
        WHERE k.application_id = ${app.id} AND k.key = ${key}`);
      // Stored by the money step's own statement: its transaction's now(), the ledger's.
      expect(stored).toMatchObject({ response_status: 200, response_body: res.body });
      expect(stored.completed_at).toBe(stored.ledger_at);
      const replay = await api.post(path, body, { 'Idempotency-Key': key });
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual(res.body);
      return res.body as { id: string };
    };
    const hold = await keyed('answer-hold', '/api/v1/escrow/hold', {
      wallet_id: sender,
      amount: 40,
    });
    await keyed('answer-release', `/api/v1/escrow/${hold.id}/release`, {
      recipient_wallet_id: recipient,
      amount: 10,
    });
    await keyed('answer-refund', `/api/v1/escrow/${hold.id}/refund`);
    // 10 released minus 2.5% + 0.10; the 30 left refunded.
    expect(await balanceOf(engine.pool, recipient)).toBe(1_000n - 35n);
    expect(await balanceOf(engine.pool, sender)).toBe(9_000n);
    await assertLedgerInvariant(engine.pool);
  });
});
