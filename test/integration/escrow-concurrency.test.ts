import { sql } from 'slonik';
import { z } from 'zod';
import { updateApplication } from '../../src/db/applications';
import { assertLedgerInvariant, fundWallet } from '../support/database';
import { createTestApp } from '../support/engine';
import { clientFor, createUserWithWallet, type Reply } from '../support/http';
import { useTestEngine } from '../support/hooks';

const engine = useTestEngine();

/** A seeded generator, so that a failing run can be replayed exactly. */
function rng(seed: number) {
  let s = seed;
  return (n: number) => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s % n;
  };
}

/** Answers other than 200 and 400, with the engine's log of failed requests to say why. */
function unexpected(replies: Reply[]): unknown[] {
  const odd = replies
    .filter((r) => r.status !== 200 && r.status !== 400)
    .map((r) => ({ status: r.status, body: r.body }));
  if (odd.length === 0) return [];
  return [...odd, ...engine.logs.filter((l) => l.includes('request failed')).slice(-5)];
}

describe('escrow and transfers under concurrency', () => {
  it('keeps the books exact with holds, releases, refunds and transfers at once on one fee account', async () => {
    const app = await createTestApp(engine.pool);
    await updateApplication(engine.pool, app.id, { escrowFeeBps: 300, escrowFeeFixed: 5n });
    const api = clientFor(engine.url, app);
    const wallets: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const { walletId } = await createUserWithWallet(api);
      await fundWallet(engine.pool, walletId, 20_000n);
      wallets.push(walletId);
    }
    const next = rng(7);
    const pick = () => wallets[next(wallets.length)]!;
    const other = (w: string) => {
      let o = pick();
      while (o === w) o = pick();
      return o;
    };

    // First wave: 60 holds and 60 transfers at once.
    const holdReplies: Reply[] = [];
    await Promise.all([
      ...Array.from({ length: 60 }, async () => {
        const w = pick();
        holdReplies.push(
          await api.post('/api/v1/escrow/hold', {
            wallet_id: w,
            amount: (1 + next(3000)) / 100,
            recipient_wallet_id: other(w),
          }),
        );
      }),
      ...Array.from({ length: 60 }, async () => {
        const w = pick();
        const r = await api.post('/api/v1/transactions/wallet/transfer', {
          from_wallet_id: w,
          to_wallet_id: other(w),
          amount: (1 + next(2000)) / 100,
        });
        expect([200, 400]).toContain(r.status);
      }),
    ]);
    const holds = holdReplies.filter((r) => r.status === 200).map((r) => r.body.id as string);
    expect(unexpected(holdReplies)).toEqual([]);
    expect(holds.length).toBeGreaterThan(10);

    // Second wave: on every hold, a random mix of partial releases, full releases and refunds,
    // racing each other and more transfers.
    const steps: Promise<Reply>[] = [];
    for (const hold of holds) {
      for (let k = 0; k < 3; k += 1) {
        const choice = next(3);
        if (choice === 0) steps.push(api.post(`/api/v1/escrow/${hold}/refund`));
        else if (choice === 1) steps.push(api.post(`/api/v1/escrow/${hold}/release`, {}));
        else
          steps.push(
            api.post(`/api/v1/escrow/${hold}/release`, { amount: (1 + next(1000)) / 100 }),
          );
      }
      const w = pick();
      steps.push(
        api.post('/api/v1/transactions/wallet/transfer', {
          from_wallet_id: w,
          to_wallet_id: other(w),
          amount: (1 + next(500)) / 100,
        }),
      );
    }
    const replies = await Promise.all(steps);
    expect(unexpected(replies)).toEqual([]);

    // No hold paid out more than it held, and every hold's remainder is what is left of it.
    const overpaid = await engine.pool.any(sql.type(z.object({ id: z.string() }))`
      SELECT h.id FROM transactions h
      LEFT JOIN transactions c ON c.parent_id = h.id
      WHERE h.transaction_type = 'escrow_hold' AND h.application_id = ${app.id}
      GROUP BY h.id, h.amount, h.escrow_amount
      HAVING h.amount - h.escrow_amount <> coalesce(sum(CASE WHEN c.transaction_type = 'escrow_release'
        THEN c.amount + coalesce(c.application_fee, 0) ELSE c.amount END), 0)`);
    expect(overpaid).toEqual([]);
    // The escrow account holds exactly what the open holds still hold.
    const escrow = await engine.pool.one(sql.type(
      z.object({ account: z.bigint(), held: z.bigint() }),
    )`
      SELECT (SELECT coalesce(sum(balance), 0) FROM ledger_accounts WHERE application_id = ${app.id} AND kind = 'escrow')::bigint AS account,
             (SELECT coalesce(sum(escrow_amount), 0) FROM transactions WHERE application_id = ${app.id} AND transaction_type = 'escrow_hold')::bigint AS held`);
    expect(escrow.account).toBe(escrow.held);
    await assertLedgerInvariant(engine.pool);
  }, 180_000);
});
