import { computeMoneyOutFees, CASHOUT_PROVIDER_FEE } from '../../src/domain/fees';
import { assertLedgerInvariant, balanceOf, fundWallet, systemBalance } from '../support/database';
import { createTestApp } from '../support/engine';
import { workflowIds } from '../../src/workflows/ids';
import { clientFor, createUserWithWallet, type Reply } from '../support/http';
import { useTestEngine } from '../support/hooks';
import { onboardForPayouts } from '../support/payouts';

const engine = useTestEngine();

type Op =
  | { kind: 'transfer'; from: number; to: number; cents: number }
  | { kind: 'cashout'; from: number; cents: number; outcome: 'successful' | 'failed' }
  | { kind: 'hold'; from: number; to: number; cents: number; end: 'release' | 'refund' }
  | { kind: 'payout'; from: number; cents: number };

/** What each wallet starts with: some of the plan's requests find too little, most do not. */
const FUNDS = 30_000n;

/** The sandbox accepts a card payout of exactly 40.40 and then fails it. */
const PAYOUT_FAILS_LATER = 4040;

describe('card payouts, cashouts, transfers and escrow under concurrency', () => {
  it('keeps the books exact when they all run at once on a few wallets', async () => {
    const app = await createTestApp(engine.pool);
    const api = clientFor(engine.url, app);
    const wallets: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const { walletId } = await createUserWithWallet(api);
      await fundWallet(engine.pool, walletId, FUNDS);
      // The owner is verified at once with a debit card: card payouts are enabled.
      const onboarded = await onboardForPayouts(api, walletId);
      expect(onboarded.status).toBe(200);
      wallets.push(walletId);
    }
    // A fixed pseudo-random plan, so that a failure can be replayed. Every draw takes the
    // generator's high bits: its low bits repeat every few draws (the wallets would not vary).
    let seed = 7;
    const draw = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) >>> 16) % n;
    const plan: Op[] = Array.from({ length: 120 }, (): Op => {
      const from = draw(4);
      const to = (from + 1 + draw(3)) % 4;
      const cents = 100 + draw(4_000);
      const pick = draw(4);
      if (pick === 0) return { kind: 'transfer', from, to, cents };
      if (pick === 3) {
        // One in four fails after the provider accepted it (40.40); the rest are paid at once.
        const fails = draw(4) === 0;
        return {
          kind: 'payout',
          from,
          cents: fails || cents === 4040 ? PAYOUT_FAILS_LATER : cents,
        };
      }
      if (pick === 1) {
        // Never the sandbox's refused amount: that branch has its own test.
        const amount = cents === 4040 ? 4041 : cents;
        return {
          kind: 'cashout',
          from,
          cents: amount,
          outcome: draw(2) ? 'successful' : 'failed',
        };
      }
      return { kind: 'hold', from, to, cents, end: draw(2) ? 'release' : 'refund' };
    });

    const first = (op: Op): Promise<Reply> => {
      const from = wallets[op.from]!;
      if (op.kind === 'transfer')
        return api.post('/api/v1/transactions/wallet/transfer', {
          from_wallet_id: from,
          to_wallet_id: wallets[op.to]!,
          amount: op.cents / 100,
        });
      if (op.kind === 'payout')
        return api.post('/api/v1/transactions/wallet/card-payout', {
          wallet_id: from,
          amount: op.cents / 100,
        });
      if (op.kind === 'cashout')
        return api.post('/api/v1/transactions/wallet/mobile-money-cashout', {
          wallet_id: from,
          amount: op.cents,
          phone_number: '+23276123456',
        });
      return api.post('/api/v1/escrow/hold', {
        wallet_id: from,
        amount: op.cents / 100,
        recipient_wallet_id: wallets[op.to]!,
      });
    };
    const replies = await Promise.all(plan.map(first));
    for (const reply of replies) {
      expect([200, 400]).toContain(reply.status);
      if (reply.status === 400) expect(reply.body).toEqual({ detail: 'Insufficient funds' });
    }

    // Then every accepted cashout is settled or failed, every hold released or refunded, at once.
    const second = await Promise.all(
      plan.map((op, i) => {
        const reply = replies[i]!;
        if (reply.status !== 200 || op.kind === 'transfer') return Promise.resolve(null);
        // A card payout settles by itself: paid at once, or failed at the saga's next look.
        if (op.kind === 'payout')
          return engine.temporal.workflow
            .getHandle(workflowIds.payout(reply.body.id as string))
            .result()
            .then((status) => ({ status: 200, body: { status } }) as Reply);
        if (op.kind === 'cashout')
          return api.post('/api/v1/testing/simulate-mobile-money-webhook', {
            transaction_id: reply.body.id,
            status: op.outcome,
          });
        return api.post(`/api/v1/escrow/${reply.body.id}/${op.end}`, {});
      }),
    );
    for (const reply of second) if (reply) expect(reply.status).toBe(200);

    // The same on paper: the books must agree to the cent.
    const expected = wallets.map(() => FUNDS);
    plan.forEach((op, i) => {
      if (replies[i]!.status !== 200) return;
      const cents = BigInt(op.cents);
      if (op.kind === 'payout') {
        const paid = op.cents !== PAYOUT_FAILS_LATER;
        expect(second[i]!.body.status).toBe(paid ? 'completed' : 'failed');
        if (paid) expected[op.from]! -= cents;
        return;
      }
      if (op.kind === 'cashout') {
        expect(second[i]!.body.status).toBe(op.outcome === 'successful' ? 'completed' : 'failed');
        if (op.outcome === 'successful') {
          const fees = computeMoneyOutFees({
            rule: CASHOUT_PROVIDER_FEE,
            amount: cents,
            applicationFeeBps: 0,
          });
          expected[op.from]! -= fees.total;
        }
        return;
      }
      if (op.kind === 'hold' && op.end === 'refund') return;
      expected[op.from]! -= cents;
      expected[op.to]! += cents;
    });
    for (const [i, w] of wallets.entries()) {
      expect(await balanceOf(engine.pool, w)).toBe(expected[i]);
    }
    expect(await systemBalance(engine.pool, app.id, 'payouts', 'SLE')).toBe(0n);
    expect(await systemBalance(engine.pool, app.id, 'escrow', 'SLE')).toBe(0n);
    for (const kind of ['cashout', 'payout'] as const) {
      expect(plan.some((op, i) => op.kind === kind && replies[i]!.status === 200)).toBe(true);
    }
    expect(
      plan.some(
        (op, i) =>
          op.kind === 'payout' && op.cents === PAYOUT_FAILS_LATER && replies[i]!.status === 200,
      ),
    ).toBe(true);
    await assertLedgerInvariant(engine.pool);
  }, 180_000);
});
