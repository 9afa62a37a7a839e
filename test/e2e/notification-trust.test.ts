/**
 * A notification is only a reason to ask the provider (docs/security.md): anyone reaching Temporal
 * can send a workflow's `notify` update, so these tests do, and check that no money moves
 * until the provider says the payment settled. The webhook route refuses oversized bodies unread.
 */
import { sql } from 'slonik';
import { z } from 'zod';
import { MAX_NOTIFICATION_BYTES } from '../../src/api/routes/provider-webhooks';
import { signMonimeNotification } from '../../src/providers/monime';
import { workflowIds } from '../../src/workflows/ids';
import { moneyOutUpdates } from '../../src/workflows/money-out-shared';
import { cardDepositUpdates, depositUpdates } from '../../src/workflows/shared';
import {
  assertLedgerInvariant,
  balanceOf,
  eventsOf as eventsOfPayment,
  fundWallet,
  ledgerSteps,
} from '../support/database';
import { sandboxWebhookSecret } from '../../src/crypto/secret-box';
import { createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { api } = useTestApp(engine);

const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const CARD_DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const CASHOUT = '/api/v1/transactions/wallet/mobile-money-cashout';
const SIMULATE = '/api/v1/testing/simulate-mobile-money-webhook';
const SIMULATE_CARD = '/api/v1/testing/simulate-card-authentication';
const WEBHOOK = '/api/v1/webhooks/providers/mobile-money';

const eventsOf = async (transactionId: string) =>
  (await eventsOfPayment(engine.pool, transactionId)).map((e) => e.type);
const statusOf = async (transactionId: string) =>
  (await api.get(`/api/v1/transactions/${transactionId}`)).body.status as string;
const notificationsAbout = (paymentReference: string) =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM provider_notifications
    WHERE payment_reference = ${paymentReference}`);

describe('a notify update the provider does not confirm moves no money', () => {
  it('mobile-money deposit: completed for an unpaid code stays pending; the real payment completes', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, { wallet_id: walletId, amount: 10_000 });
    expect(res.status).toBe(200);
    const id = res.body.transaction_id as string;
    const handle = engine.temporal.workflow.getHandle(workflowIds.deposit(id));

    const forged = await handle.executeUpdate(depositUpdates.notify, {
      args: [{ status: 'completed' }],
    });
    expect(forged).toBe('pending');
    expect(await statusOf(id)).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect(await ledgerSteps(engine.pool, id)).toEqual([]);
    expect(await eventsOf(id)).toEqual([]);

    // The payer pays: the sandbox's signed notification settles it, once.
    const paid = await api.post(SIMULATE, { transaction_id: id, status: 'successful' });
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ transaction_id: id, status: 'completed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
    expect(await eventsOf(id)).toEqual(['deposit.completed']);
    await assertLedgerInvariant(engine.pool);
  });

  it('card deposit awaiting 3-D Secure: succeeded stays pending until the payer authenticates', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(CARD_DEPOSIT, {
      wallet_id: walletId,
      amount: 40,
      payment_method_id: 'pm_card_authenticationRequired',
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('pending');
    const id = res.body.id as string;
    const handle = engine.temporal.workflow.getHandle(workflowIds.cardDeposit(id));

    const forged = await handle.executeUpdate(cardDepositUpdates.notify, {
      args: [{ status: 'succeeded' }],
    });
    expect(forged).toBe('pending');
    expect(await statusOf(id)).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect(await ledgerSteps(engine.pool, id)).toEqual([]);
    expect(await eventsOf(id)).toEqual([]);

    const done = await api.post(SIMULATE_CARD, { transaction_id: id, status: 'successful' });
    expect(done.body).toMatchObject({ transaction_id: id, status: 'completed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(4_000n);
    expect(await eventsOf(id)).toEqual(['deposit.completed']);
    await assertLedgerInvariant(engine.pool);
  });

  it('cashout: neither completed nor failed settles or gives back while the sandbox says pending', async () => {
    const { walletId } = await createUserWithWallet(api);
    await fundWallet(engine.pool, walletId, 100_000n);
    const res = await api.post(CASHOUT, {
      wallet_id: walletId,
      amount: 10_000,
      phone_number: '+23276123456',
    });
    expect(res.status).toBe(200);
    const id = res.body.id as string;
    const reserved = await balanceOf(engine.pool, walletId);
    const handle = engine.temporal.workflow.getHandle(workflowIds.cashout(id));

    for (const status of ['completed', 'failed'] as const) {
      const forged = await handle.executeUpdate(moneyOutUpdates.notify, { args: [{ status }] });
      expect(forged).toBe('pending');
    }
    expect(await statusOf(id)).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(reserved);
    expect(await ledgerSteps(engine.pool, id)).toEqual(['reserve']);
    expect(await eventsOf(id)).toEqual([]);

    const paid = await api.post(SIMULATE, { transaction_id: id, status: 'successful' });
    expect(paid.body).toMatchObject({ transaction_id: id, status: 'completed' });
    expect(await ledgerSteps(engine.pool, id)).toEqual(['reserve', 'settle']);
    expect(await eventsOf(id)).toEqual(['cashout.completed']);
    await assertLedgerInvariant(engine.pool);
  });
});

describe('provider webhook body bound', () => {
  it('refuses a notification larger than 64 KiB with 413, unread: nothing kept, nothing settled', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, { wallet_id: walletId, amount: 10_000 });
    const id = res.body.transaction_id as string;
    const codeId = res.body.payment_code.result.id as string;
    // Correctly signed, so only its size refuses it.
    const body = JSON.stringify({
      event: 'payment_code.completed',
      data: { id: codeId, status: 'completed', metadata: { reference: id } },
      padding: 'x'.repeat(MAX_NOTIFICATION_BYTES),
    });
    const reply = await api.request('POST', WEBHOOK, {
      raw: body,
      headers: {
        'sandbox-signature': signMonimeNotification(sandboxWebhookSecret(engine.config), body),
      },
    });
    expect(reply.status).toBe(413);
    expect(reply.body).toEqual({ detail: 'Notification body is larger than 64 KiB' });
    expect(await notificationsAbout(codeId)).toBe(0);
    expect(await statusOf(id)).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect(await eventsOf(id)).toEqual([]);
  });
});
