import { sql } from 'slonik';
import { z } from 'zod';
import { assertLedgerInvariant, balanceOf, fundWallet } from '../support/database';
import { createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

/**
 * docs/cli.md, apps update --currency: a wallet left in another currency than its
 * application's takes no money step, and a mobile-money amount under a cent once converted is
 * refused; both at once, before any provider is asked, with nothing written.
 */
const engine = useTestEngine();
const { app, api } = useTestApp(engine, { currency: 'USD' });

const MISMATCH = { detail: 'Wallets hold different currencies' };

/** A wallet of the USD application left in SLE, as a switch before the rule could leave it. */
async function legacyWallet(fundMinor = 0n): Promise<string> {
  const { walletId } = await createUserWithWallet(api);
  await engine.pool.query(
    sql.unsafe`UPDATE ledger_accounts SET currency = 'SLE' WHERE id = ${walletId}`,
  );
  if (fundMinor > 0n) await fundWallet(engine.pool, walletId, fundMinor);
  return walletId;
}

async function usdWallet(fundMinor = 0n): Promise<string> {
  const { walletId } = await createUserWithWallet(api);
  if (fundMinor > 0n) await fundWallet(engine.pool, walletId, fundMinor);
  return walletId;
}

/** Everything a refused payment could have written: records, ledger, events, provider state. */
async function written(): Promise<Record<string, number>> {
  return engine.pool.one(sql.type(
    z.object({
      transactions: z.number(),
      ledger: z.number(),
      events: z.number(),
      codes: z.number(),
      cards: z.number(),
      payouts: z.number(),
    }),
  )`
    SELECT (SELECT count(*)::int FROM transactions WHERE application_id = ${app.id}) AS transactions,
      (SELECT count(*)::int FROM ledger_transactions WHERE application_id = ${app.id}
        AND transaction_id IS NOT NULL) AS ledger,
      (SELECT count(*)::int FROM events WHERE application_id = ${app.id}) AS events,
      (SELECT count(*)::int FROM sandbox_payment_codes) AS codes,
      (SELECT count(*)::int FROM sandbox_card_payments) AS cards,
      (SELECT count(*)::int FROM sandbox_mobile_money_payouts) AS payouts`);
}

describe('a wallet left in another currency than its application', () => {
  it.each([
    {
      payment: 'mobile-money deposit',
      path: '/api/v1/transactions/wallet/mobile-money-deposit',
      body: { amount: 10_000 },
      funded: 0n,
    },
    {
      payment: 'card deposit',
      path: '/api/v1/transactions/wallet/card-deposit',
      body: { amount: 12.5, payment_method_id: 'pm_card_visa' },
      funded: 0n,
    },
    {
      payment: 'cashout',
      path: '/api/v1/transactions/wallet/mobile-money-cashout',
      body: { amount: 10_000, phone_number: '+23276123456' },
      funded: 50_000n,
    },
  ])('takes no $payment: 400 before any provider is asked', async ({ path, body, funded }) => {
    const wallet = await legacyWallet(funded);
    const before = await written();
    const res = await api.post(path, { wallet_id: wallet, ...body });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: MISMATCH });
    expect(await written()).toEqual(before);
    expect(await balanceOf(engine.pool, wallet)).toBe(funded);
  });

  it('sends and receives no transfer, even from a wallet of its own currency', async () => {
    const legacy = await legacyWallet(5_000n);
    const otherLegacy = await legacyWallet();
    const usd = await usdWallet(5_000n);
    const before = await written();
    for (const [from, to] of [
      [legacy, usd],
      [usd, legacy],
      [legacy, otherLegacy],
      // Again, now that the worker has seen both wallets: its one-statement way refuses too.
      [legacy, otherLegacy],
    ]) {
      const res = await api.post('/api/v1/transactions/wallet/transfer', {
        from_wallet_id: from,
        to_wallet_id: to,
        amount: 10,
      });
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: MISMATCH });
    }
    expect(await written()).toEqual(before);
    expect(await balanceOf(engine.pool, legacy)).toBe(5_000n);
    expect(await balanceOf(engine.pool, usd)).toBe(5_000n);
  });

  it('neither holds nor is named as the recipient of a hold', async () => {
    const legacy = await legacyWallet(5_000n);
    const usd = await usdWallet(5_000n);
    const before = await written();
    for (const body of [
      { wallet_id: legacy, amount: 10 },
      { wallet_id: usd, amount: 10, recipient_wallet_id: legacy },
    ]) {
      const res = await api.post('/api/v1/escrow/hold', body);
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: MISMATCH });
    }
    expect(await written()).toEqual(before);
    expect(await balanceOf(engine.pool, usd)).toBe(5_000n);
  });

  it('is not paid by a release (400, nothing moves), and the hold can still be refunded', async () => {
    const sender = await usdWallet(5_000n);
    const recipient = await usdWallet();
    const hold = await api.post('/api/v1/escrow/hold', {
      wallet_id: sender,
      amount: 20,
      recipient_wallet_id: recipient,
    });
    expect(hold.status).toBe(200);
    // The recipient is left in SLE after the hold (as data from before the rule could be).
    await engine.pool.query(
      sql.unsafe`UPDATE ledger_accounts SET currency = 'SLE' WHERE id = ${recipient}`,
    );
    const before = await written();
    for (const amount of [5, undefined]) {
      const res = await api.post(`/api/v1/escrow/${hold.body.id}/release`, {
        recipient_wallet_id: recipient,
        ...(amount === undefined ? {} : { amount }),
      });
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: MISMATCH });
    }
    expect(await written()).toEqual(before);
    expect(await balanceOf(engine.pool, recipient)).toBe(0n);

    const refund = await api.post(`/api/v1/escrow/${hold.body.id}/refund`, {});
    expect(refund.status).toBe(200);
    expect(await balanceOf(engine.pool, sender)).toBe(5_000n);
    await assertLedgerInvariant(engine.pool);
  });
});

describe('a mobile-money amount too small for a USD application', () => {
  it('is refused with 422 naming amount before a payment code exists', async () => {
    const wallet = await usdWallet();
    const before = await written();
    const res = await api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      wallet_id: wallet,
      amount: 5,
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/^amount: /);
    expect(await written()).toEqual(before);
  });

  it('still takes the smallest amount that converts to a cent, and credits it once paid', async () => {
    const wallet = await usdWallet();
    const res = await api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      wallet_id: wallet,
      amount: 24,
    });
    expect(res.status).toBe(200);
    const paid = await api.post('/api/v1/testing/simulate-mobile-money-webhook', {
      transaction_id: res.body.transaction_id,
    });
    expect({ status: paid.status, deposit: paid.body.status }).toEqual({
      status: 200,
      deposit: 'completed',
    });
    expect(await balanceOf(engine.pool, wallet)).toBe(1n);
    await assertLedgerInvariant(engine.pool);
  });
});
