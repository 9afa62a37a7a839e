import { sql } from 'slonik';
import { z } from 'zod';
import { SearchAttributes } from '../../src/workflows/shared';
import { assertLedgerInvariant, balanceOf, fundWallet } from '../support/database';
import { createTestApp } from '../support/engine';
import { clientFor, createUserWithWallet } from '../support/http';
import { useTestEngine } from '../support/hooks';
import { listWorkflowIds } from '../support/wait';

const engine = useTestEngine();

describe('transfers under concurrency', () => {
  it('runs 240 transfers at once among 4 wallets without losing or inventing a cent', async () => {
    const app = await createTestApp(engine.pool);
    const api = clientFor(engine.url, app);
    const wallets: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const { walletId } = await createUserWithWallet(api);
      await fundWallet(engine.pool, walletId, 5_000n);
      wallets.push(walletId);
    }
    // A fixed pseudo-random plan, so that a failure can be replayed.
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const plan = Array.from({ length: 240 }, () => {
      const from = next() % 4;
      const to = (from + 1 + (next() % 3)) % 4;
      return { from: wallets[from]!, to: wallets[to]!, cents: 1 + (next() % 900) };
    });
    const replies = await Promise.all(
      plan.map((p) =>
        api.post('/api/v1/transactions/wallet/transfer', {
          from_wallet_id: p.from,
          to_wallet_id: p.to,
          amount: p.cents / 100,
        }),
      ),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 400)).toBe(true);
    const declined = replies.filter((r) => r.status === 400);
    expect(declined.every((r) => r.body.detail === 'Insufficient funds')).toBe(true);

    // Replay the completed transfers on paper: the books must agree to the cent.
    const expected = new Map(wallets.map((w) => [w, 5_000n]));
    replies.forEach((r, i) => {
      if (r.status !== 200) return;
      const p = plan[i]!;
      expected.set(p.from, expected.get(p.from)! - BigInt(p.cents));
      expected.set(p.to, expected.get(p.to)! + BigInt(p.cents));
    });
    for (const w of wallets) expect(await balanceOf(engine.pool, w)).toBe(expected.get(w));
    const completed = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions WHERE application_id = ${app.id} AND transaction_type = 'transfer'`);
    expect(completed).toBe(replies.filter((r) => r.status === 200).length);
    await assertLedgerInvariant(engine.pool);
  }, 120_000);

  it('tags the transfer workflow with the search attributes operators filter on', async () => {
    const app = await createTestApp(engine.pool);
    const api = clientFor(engine.url, app);
    const a = await createUserWithWallet(api);
    const b = await createUserWithWallet(api);
    await fundWallet(engine.pool, a.walletId, 1_000n);
    const ok = await api.post('/api/v1/transactions/wallet/transfer', {
      from_wallet_id: a.walletId,
      to_wallet_id: b.walletId,
      amount: 1,
    });
    const declined = await api.post('/api/v1/transactions/wallet/transfer', {
      from_wallet_id: a.walletId,
      to_wallet_id: b.walletId,
      amount: 100,
    });
    expect([ok.status, declined.status]).toEqual([200, 400]);
    const described = await engine.temporal.workflow.getHandle(`transfer-${ok.body.id}`).describe();
    expect(described.typedSearchAttributes.get(SearchAttributes.ApplicationId)).toBe(app.id);
    expect(described.typedSearchAttributes.get(SearchAttributes.PaymentMode)).toBe('test');
    expect(described.typedSearchAttributes.get(SearchAttributes.PaymentType)).toBe('transfer');
    expect(described.typedSearchAttributes.get(SearchAttributes.PaymentStatus)).toBe('completed');
    expect(described.typedSearchAttributes.get(SearchAttributes.WalletId)).toEqual([
      a.walletId,
      b.walletId,
    ]);

    // The operator's query of docs/operations.md finds the failed one (visibility is eventually consistent).
    const query = `ApplicationId = "${app.id}" AND PaymentType = "transfer" AND PaymentStatus = "failed"`;
    const found = await listWorkflowIds(engine.temporal, query);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^transfer-/);
    expect(found[0]).not.toBe(`transfer-${ok.body.id}`);
  });
});
