import { fundWallet } from '../support/database';
import { createTestApp } from '../support/engine';
import { clientFor, createUserWithWallet } from '../support/http';
import { useTestEngine } from '../support/hooks';
import { listWorkflowIds } from '../support/wait';

const engine = useTestEngine();

/** Runs a List Filter as the operator's guide (docs/operations.md) writes it; visibility is eventually consistent. */
const find = (query: string, expected: number) =>
  listWorkflowIds(engine.temporal, query, (ids) => ids.length >= expected);

describe('the operator guide’s Temporal UI queries', () => {
  it('find held escrows, stuck pending deposits and failed payments', async () => {
    const app = await createTestApp(engine.pool);
    const api = clientFor(engine.url, app);
    const a = await createUserWithWallet(api);
    const b = await createUserWithWallet(api);
    await fundWallet(engine.pool, a.walletId, 10_000n);

    const held = await api.post('/api/v1/escrow/hold', { wallet_id: a.walletId, amount: 10 });
    const released = await api.post('/api/v1/escrow/hold', { wallet_id: a.walletId, amount: 5 });
    // Released to a wallet the hold did not name: the wallet joins the hold's WalletId.
    await api.post(`/api/v1/escrow/${released.body.id}/release`, {
      recipient_wallet_id: b.walletId,
    });
    const pending = await api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      wallet_id: b.walletId,
      amount: 1_000,
    });
    const paid = await api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      wallet_id: b.walletId,
      amount: 2_000,
    });
    await api.post('/api/v1/testing/simulate-mobile-money-webhook', {
      transaction_id: paid.body.transaction_id,
    });
    const refused = await api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      wallet_id: b.walletId,
      amount: 4040,
    });
    const declined = await api.post('/api/v1/transactions/wallet/transfer', {
      from_wallet_id: b.walletId,
      to_wallet_id: a.walletId,
      amount: 1_000,
    });
    expect([
      held.status,
      released.status,
      pending.status,
      paid.status,
      refused.status,
      declined.status,
    ]).toEqual([200, 200, 200, 200, 400, 400]);

    const scope = `ApplicationId = "${app.id}"`;
    expect(
      await find(`${scope} AND PaymentType = "escrow_hold" AND PaymentStatus = "held"`, 1),
    ).toEqual([`escrow-${held.body.id}`]);
    expect(
      await find(
        `${scope} AND PaymentType = "mobile_money_deposit" AND PaymentStatus = "pending" AND ExecutionStatus = "Running"`,
        1,
      ),
    ).toEqual([`deposit-${pending.body.transaction_id}`]);
    const failed = await find(`${scope} AND PaymentStatus = "failed"`, 2);
    expect(failed).toHaveLength(2);
    expect(failed.some((id) => id.startsWith('deposit-'))).toBe(true);
    expect(failed.some((id) => id.startsWith('transfer-'))).toBe(true);
    expect(
      await find(`${scope} AND PaymentType = "escrow_hold" AND WalletId = "${b.walletId}"`, 1),
    ).toEqual([`escrow-${released.body.id}`]);
    expect(
      await find(
        `${scope} AND PaymentMode = "test" AND WalletId = "${b.walletId}" AND PaymentType = "mobile_money_deposit" AND PaymentStatus = "completed"`,
        1,
      ),
    ).toEqual([`deposit-${paid.body.transaction_id}`]);
  });
});
