import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { createActivities } from '../../src/activities';
import { createProviders } from '../../src/providers';
import { workflowIds } from '../../src/workflows/ids';
import type { MoneyOutInput } from '../../src/workflows/money-out-shared';
import {
  assertLedgerInvariant,
  balanceOf,
  fundWallet,
  ledgerTransactionCount,
} from '../support/database';
import { createUserWithWallet, type Reply } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { app, api } = useTestApp(engine, { currency: 'USD' });

const EXCEEDS = { detail: 'Refund amount exceeds the refundable amount' };

/** What the wallet holds besides the deposit: only what is left of the deposit limits refunds. */
const OTHER_FUNDS = 300_00n;

/** A refund request's amount in major units; null: all that is left. */
const AMOUNTS: (number | null)[] = [12.5, 30, null, 7.25, 25, 40, null, 3, 18.75, 50, 9.99, null];

const refundRows = (depositId: string) =>
  engine.pool.any(sql.type(z.object({ id: z.string(), status: z.string(), amount: z.bigint() }))`
    SELECT id, status, amount FROM transactions
    WHERE parent_id = ${depositId} AND transaction_type = 'card_refund'`);

const sum = (amounts: bigint[]) => amounts.reduce((a, b) => a + b, 0n);

async function deposit(method: string) {
  const { walletId } = await createUserWithWallet(api);
  const res = await api.post('/api/v1/transactions/wallet/card-deposit', {
    wallet_id: walletId,
    amount: 100,
    payment_method_id: method,
  });
  expect(res.body).toMatchObject({ status: 'completed', amount: 100 });
  await fundWallet(engine.pool, walletId, OTHER_FUNDS);
  return { walletId, depositId: res.body.id as string };
}

describe('refunds of one deposit at once', () => {
  it.each([
    ['refunded at once', 'pm_card_visa'],
    ['accepted, then failed', 'pm_card_refundFails'],
  ])(
    'never refund more than was credited (%s): each request answered once, the books exact',
    async (_name, method) => {
      const { walletId, depositId } = await deposit(method);
      // The wallet also spends while the refunds run.
      const { walletId: shop } = await createUserWithWallet(api);
      const requests: Promise<Reply>[] = AMOUNTS.map((amount, i) =>
        api.post(`/api/v1/transactions/${depositId}/refund`, amount === null ? {} : { amount }, {
          'idempotency-key': `${depositId}-${i}`,
        }),
      );
      const spending = api.post('/api/v1/transactions/wallet/transfer', {
        from_wallet_id: walletId,
        to_wallet_id: shop,
        amount: 15,
      });
      const answers = await Promise.all(requests);
      const spent = (await spending).status === 200 ? 15_00n : 0n;

      const opened = answers.filter((a) => a.status === 200);
      for (const a of answers) {
        if (a.status === 200) {
          expect(a.body).toMatchObject({
            transaction_type: 'card_refund',
            source_transaction_id: depositId,
          });
        } else {
          expect(a.status).toBe(400);
          expect(a.body).toEqual(EXCEEDS);
        }
      }
      // The amounts asked add up to more than was credited: some are declined.
      expect(opened.length).toBeGreaterThan(0);
      expect(opened.length).toBeLessThan(AMOUNTS.length);
      // One refund for each request answered 200, none for a decline.
      const rows = await refundRows(depositId);
      expect(new Set(opened.map((a) => a.body.id))).toEqual(new Set(rows.map((r) => r.id)));
      expect(rows).toHaveLength(opened.length);
      // What is refunded (pending or completed; a failed one gave its amount back) is never more
      // than the deposit credited.
      const taken = rows.filter((r) => r.status !== 'failed').map((r) => r.amount);
      expect(sum(taken)).toBeLessThanOrEqual(100_00n);

      // Every saga ends; a failed refund gives its amount back.
      const outcomes = await Promise.all(
        rows.map((r) => engine.temporal.workflow.getHandle(workflowIds.refund(r.id)).result()),
      );
      const ended = await refundRows(depositId);
      const kept = sum(ended.filter((r) => r.status === 'completed').map((r) => r.amount));
      expect(kept).toBeLessThanOrEqual(100_00n);
      if (method === 'pm_card_refundFails') {
        expect(outcomes.every((o) => o === 'failed')).toBe(true);
        expect(kept).toBe(0n);
      } else {
        expect(outcomes.every((o) => o === 'completed')).toBe(true);
      }
      const balance = await balanceOf(engine.pool, walletId);
      expect(balance).toBeGreaterThanOrEqual(0n);
      expect(balance).toBe(100_00n + OTHER_FUNDS - spent - kept);
      const record = await api.get(`/api/v1/transactions/${depositId}`);
      expect(record.body).toMatchObject({ status: 'completed' });
      expect(BigInt(Math.round(record.body.amount_refunded * 100))).toBe(kept);

      // Asked again with the same keys, each request answers as it did (no refund twice).
      const again = await Promise.all(
        AMOUNTS.map((amount, i) =>
          api.post(`/api/v1/transactions/${depositId}/refund`, amount === null ? {} : { amount }, {
            'idempotency-key': `${depositId}-${i}`,
          }),
        ),
      );
      again.forEach((a, i) => {
        expect(a.status).toBe(answers[i]!.status);
        if (a.status === 200) expect(a.body.id).toBe(answers[i]!.body.id);
      });
      expect(await refundRows(depositId)).toHaveLength(rows.length);
      await assertLedgerInvariant(engine.pool);
    },
  );
});

describe('a refund’s steps retried (a worker that died after its commit)', () => {
  it('reserve, provider and settle each move money once, the retry declining nothing', async () => {
    const { walletId, depositId } = await deposit('pm_card_visa');
    const activities = createActivities({
      pool: engine.pool,
      config: engine.config,
      providers: createProviders({ config: engine.config, pool: engine.pool }),
    });
    const input: MoneyOutInput = {
      kind: 'refund',
      transactionId: randomUUID(),
      applicationId: app.id,
      mode: 'test',
      walletId,
      amount: '10000',
      destination: { deposit_id: depositId },
    };
    const id = { transactionId: input.transactionId };
    await activities.reserveMoneyOut(input);
    // All of the deposit is taken now: the retried reserve finds its own record first.
    await activities.reserveMoneyOut(input);
    const sent = await activities.sendMoneyOut(id);
    expect(await activities.sendMoneyOut(id)).toEqual(sent);
    await activities.settleMoneyOut(id);
    await activities.settleMoneyOut(id);
    expect(await ledgerTransactionCount(engine.pool, input.transactionId)).toBe(2);
    expect(await balanceOf(engine.pool, walletId)).toBe(OTHER_FUNDS);
    const refunds = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM sandbox_card_refunds WHERE reference = ${input.transactionId}`);
    expect(refunds).toBe(1);
    await assertLedgerInvariant(engine.pool);
  });
});
