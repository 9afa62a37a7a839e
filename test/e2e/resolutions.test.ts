import { spawn } from 'node:child_process';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { sql } from 'slonik';
import { z } from 'zod';
import { formatPayloadKeys, temporalAddress } from '../../src/config';
import { createAdmin, type CreatedAdmin } from '../../src/db/admins';
import { decodePayloadsIn, payloadKeys } from '../../src/temporal/data-converter';
import { workflowIds } from '../../src/workflows/ids';
import {
  assertLedgerInvariant,
  balanceOf,
  eventsOf as eventsOfPayment,
  ledgerLegs,
} from '../support/database';
import {
  clientFor,
  createFundedWallet,
  createUserWithWallet,
  transfer,
  type Reply,
} from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { increase, scrape, series } from '../support/metrics';
import { sandboxMobileMoneyPayouts } from '../support/payouts';

/**
 * An operator's resolution of a payment stuck on its provider (docs/api.md, "Resolve a stuck
 * payment"): the admin endpoint and the command line, end to end on the real engine. The
 * payment's workflow asks the provider first, then settles as its provider's answer would.
 */
jest.setTimeout(180_000);

const engine = useTestEngine({ env: { API_METRICS_PORT: '0', TRUST_PROXY: 'true' } });
const { api } = useTestApp(engine);
const { api: usd } = useTestApp(engine, { currency: 'USD' });

const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const CASHOUT = '/api/v1/transactions/wallet/mobile-money-cashout';
const CARD_DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const resolveOf = (id: string) => `/api/v1/admin/payments/${id}/resolve`;
const REASON = 'The provider confirmed by phone that the payer paid (ticket 4711)';

const eventsOf = (transactionId: string) => eventsOfPayment(engine.pool, transactionId);
const resolutions = (type: string, outcome: string) =>
  series('payment_resolutions_total', { type, outcome });

/** Admin calls are limited to 5 a minute per admin: each test takes a fresh one. */
const newAdmin = () => createAdmin(engine.pool, `ops-${Math.random().toString(36).slice(2, 8)}`);

/** A client address per test: failed authentications lock an address out of admin endpoints. */
let lastAddress = 20;
function asAdmin(admin: CreatedAdmin | null, headers: Record<string, string> = {}) {
  const address = `192.0.2.${lastAddress++}`;
  const client = clientFor(engine.url, null);
  return (id: string, body: unknown): Promise<Reply> =>
    client.post(resolveOf(id), body, {
      ...(admin ? { 'api-key': admin.api_key, 'secret-key': admin.secret_key } : {}),
      'x-forwarded-for': address,
      ...headers,
    });
}

/** `npm run --silent cli -- ...` against the engine's database and Temporal. */
function cli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'cli', '--', ...args], {
      cwd: path.resolve(__dirname, '..', '..'),
      env: {
        ...process.env,
        DATABASE_URL: engine.config.database.url!,
        TEMPORAL_ADDRESS: temporalAddress(engine.config),
        TEMPORAL_NAMESPACE: engine.config.temporal.namespace,
        TEMPORAL_PAYLOAD_KEYS: formatPayloadKeys(payloadKeys(engine.config)),
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The `resolve` update's argument as the payment's history keeps it (decrypted). */
async function resolutionInHistory(workflowId: string): Promise<unknown> {
  const { events } = await engine.temporal.workflow.getHandle(workflowId).fetchHistory();
  await decodePayloadsIn(events, engine.temporal.options.loadedDataConverter.payloadCodecs);
  const accepted = (events ?? []).find(
    (e) =>
      e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'resolve',
  );
  const payload =
    accepted?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args
      ?.payloads?.[0];
  return payload ? defaultPayloadConverter.fromPayload(payload) : undefined;
}

const SIMULATE = '/api/v1/testing/simulate-mobile-money-webhook';
const PHONE = '+23276123456';

/** The provider paid the payer's code (its books say so), but its notification was lost. */
async function paidAtProviderOnly(transactionId: string): Promise<void> {
  await engine.pool.query(sql.unsafe`
    UPDATE sandbox_payment_codes SET status = 'completed' WHERE reference = ${transactionId}`);
}

/** A cashout of 500.00 SLE with its fees reserved (`total`), pending at the sandbox. */
async function pendingCashout(): Promise<{ walletId: string; id: string; total: bigint }> {
  const { walletId } = await createFundedWallet(api, engine.pool, 100_000n);
  const res = await api.post(CASHOUT, { wallet_id: walletId, amount: 50_000, phone_number: PHONE });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: 'pending', amount: 500 });
  const total = BigInt(Math.round((res.body.total_amount as number) * 100));
  expect(await balanceOf(engine.pool, walletId)).toBe(100_000n - total);
  return { walletId, id: res.body.id as string, total };
}

async function pendingDeposit(): Promise<{ walletId: string; id: string }> {
  const { walletId } = await createUserWithWallet(api);
  const res = await api.post(DEPOSIT, { wallet_id: walletId, amount: 10_000 });
  expect(res.status).toBe(200);
  expect(res.body.transaction).toMatchObject({ status: 'pending' });
  return { walletId, id: res.body.transaction_id as string };
}

describe('POST /api/v1/admin/payments/{transaction_id}/resolve', () => {
  it('resolves a pending deposit completed: the wallet credited, its event, the timeline step, the metric', async () => {
    const admin = await newAdmin();
    const { walletId, id } = await pendingDeposit();
    await paidAtProviderOnly(id);
    const before = await scrape(engine.metricsUrl!);

    const res = await asAdmin(admin)(id, {
      outcome: 'completed',
      reason: REASON,
      operator: 'Ada Operator',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id,
      transaction_type: 'mobile_money_deposit',
      status: 'completed',
      wallet_id: walletId,
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
    expect(await ledgerLegs(engine.pool, id)).toHaveLength(1);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['deposit.completed']);
    expect((await api.get(`/api/v1/transactions/${id}`)).body.status).toBe('completed');

    const timeline = await api.get(`/api/v1/transactions/${id}/timeline`);
    expect(timeline.status).toBe(200);
    const steps = timeline.body.steps as { name: string }[];
    expect(steps.filter((s) => s.name === 'resolve')).toEqual([
      expect.objectContaining({
        kind: 'update',
        status: 'completed',
        operator: 'Ada Operator',
        reason: REASON,
      }),
    ]);
    // Settled by the provider's own path: the deposit's completion step follows the update.
    const names = steps.map((s) => s.name);
    expect(names.indexOf('completeDeposit')).toBeGreaterThan(names.indexOf('resolve'));

    // The history keeps who and why, and the admin credential by its id, never its secret.
    const kept = await resolutionInHistory(workflowIds.deposit(id));
    expect(kept).toEqual({
      outcome: 'completed',
      reason: REASON,
      operator: 'Ada Operator',
      adminId: admin.admin.id,
      via: 'api',
      force: false,
      // Written by the settlement with the payment (docs/security.md, Audit log).
      audit: expect.objectContaining({
        action: 'payment.resolved',
        actor: { type: 'admin', id: admin.admin.id, name: admin.admin.name },
        target: { type: 'transaction', id },
      }),
    });
    const history = await engine.temporal.workflow
      .getHandle(workflowIds.deposit(id))
      .fetchHistory();
    await decodePayloadsIn(history, engine.temporal.options.loadedDataConverter.payloadCodecs);
    expect(JSON.stringify(history)).not.toContain(admin.secret_key);
    const logged = engine.logs.filter((line) => line.includes('payment resolved by an operator'));
    expect(logged.map((line) => JSON.parse(line) as unknown)).toEqual([
      expect.objectContaining({
        transaction_id: id,
        outcome: 'completed',
        operator: 'Ada Operator',
        admin_id: admin.admin.id,
      }),
    ]);
    expect(logged.join('\n')).not.toContain(admin.secret_key);

    const after = await scrape(engine.metricsUrl!);
    expect(increase(before, after, resolutions('mobile_money_deposit', 'completed'))).toBe(1);
    await assertLedgerInvariant(engine.pool);
  });

  it('resolves a pending card refund completed: settled as the provider would have', async () => {
    const admin = await newAdmin();
    const { walletId } = await createUserWithWallet(usd);
    const deposit = await usd.post(CARD_DEPOSIT, {
      wallet_id: walletId,
      amount: 30,
      payment_method_id: 'pm_card_refundFails',
    });
    expect(deposit.body).toMatchObject({ status: 'completed' });
    const refund = await usd.post(`/api/v1/transactions/${deposit.body.id}/refund`, { amount: 10 });
    expect(refund.body).toMatchObject({ status: 'pending', amount: 10 });
    const id = refund.body.id as string;
    // The provider sent the refund, but the engine never heard: its check is a day away.
    await engine.pool.query(sql.unsafe`
      UPDATE sandbox_card_refunds SET fails_at = now() + interval '1 day', status = 'succeeded'
      WHERE id = ${refund.body.provider_reference as string}`);

    const res = await asAdmin(admin)(id, {
      outcome: 'completed',
      reason: 'Stripe dashboard shows the refund succeeded',
      operator: 'Grace',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, transaction_type: 'card_refund', status: 'completed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(20_00n);
    expect((await ledgerLegs(engine.pool, id)).map((l) => l.step)).toEqual(['reserve', 'settle']);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['refund.completed']);
    expect((await usd.get(`/api/v1/transactions/${deposit.body.id}`)).body.amount_refunded).toBe(
      10,
    );
    await assertLedgerInvariant(engine.pool);
  });

  it('refuses what cannot be resolved, with the reason, and writes nothing', async () => {
    const admin = await newAdmin();
    const other = await newAdmin();
    const resolve = asAdmin(admin);
    const { walletId, id } = await pendingDeposit();
    const good = { outcome: 'failed', reason: 'The provider has no record of it', operator: 'Ada' };

    // Bad bodies: 422, before anything is asked of the workflow.
    for (const body of [
      { ...good, outcome: 'expired' },
      { ...good, reason: '  ' },
      { outcome: 'failed', reason: 'x' },
    ]) {
      const reply = await resolve(id, body);
      expect(reply.status).toBe(422);
      expect(typeof reply.body.detail).toBe('string');
    }
    expect((await resolve('a0000000-0000-4000-8000-00000000dead', good)).status).toBe(404);

    // A transfer is no payment a provider settles.
    const funded = await createFundedWallet(api, engine.pool, 5_000n);
    const sent = await transfer<{ id: string }>(api, funded.walletId, walletId, 10);
    const byOther = asAdmin(other);
    const refusedTransfer = await byOther(sent.id, good);
    expect(refusedTransfer.status).toBe(400);
    expect(refusedTransfer.body).toEqual({
      detail: 'Only a pending deposit, card deposit, payout, cashout or refund can be resolved',
    });

    // Application credentials: 403; none or wrong ones: 401.
    const asApplication = await api.post(resolveOf(id), good);
    expect(asApplication.status).toBe(403);
    expect((await asAdmin(null)(id, good)).status).toBe(401);
    expect(
      (await asAdmin(null, { 'api-key': admin.api_key, 'secret-key': 'sk_admin_wrong' })(id, good))
        .status,
    ).toBe(401);

    expect((await api.get(`/api/v1/transactions/${id}`)).body.status).toBe('pending');
    expect(await ledgerLegs(engine.pool, id)).toEqual([]);

    // Resolved once; a second resolution finds it ended: 400 with the reason.
    const first = await byOther(id, good);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id, status: 'failed' });
    const second = await byOther(id, { ...good, outcome: 'completed' });
    expect(second.status).toBe(400);
    expect(second.body).toEqual({ detail: 'The payment is already failed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(1_000n);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['deposit.failed']);
    await assertLedgerInvariant(engine.pool);
  });
});

describe('npm run cli -- payments resolve', () => {
  it('resolves an accepted cashout failed: the saga gives everything back; prints the record', async () => {
    const { walletId } = await createFundedWallet(api, engine.pool, 20_000n);
    const res = await api.post(CASHOUT, {
      wallet_id: walletId,
      amount: 5_000,
      phone_number: '+23276123456',
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('pending');
    const id = res.body.id as string;
    expect(await balanceOf(engine.pool, walletId)).toBe(20_000n - 5_050n);
    const before = await scrape(engine.metricsUrl!);

    const run = await cli(
      'payments',
      'resolve',
      '--id',
      id,
      '--outcome',
      'failed',
      '--reason',
      'Provider says the payout never left',
      '--operator',
      'Lin',
    );
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({
      id,
      transaction_type: 'mobile_money_cashout',
      status: 'failed',
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(20_000n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([
      { step: 'reserve', legs: 2 },
      { step: 'give_back', legs: 2 },
    ]);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['cashout.failed']);
    expect(await resolutionInHistory(workflowIds.cashout(id))).toEqual({
      outcome: 'failed',
      reason: 'Provider says the payout never left',
      operator: 'Lin',
      adminId: null,
      via: 'cli',
      force: false,
      audit: expect.objectContaining({
        action: 'payment.resolved',
        actor: expect.objectContaining({ type: 'cli' }),
        target: { type: 'transaction', id },
      }),
    });
    // Cancelled at the provider before anything was given back.
    expect(await sandboxMobileMoneyPayouts(engine.pool, id)).toMatchObject([{ status: 'failed' }]);
    const after = await scrape(engine.metricsUrl!);
    expect(increase(before, after, resolutions('mobile_money_cashout', 'failed'))).toBe(1);

    // Ended now: refused with the reason, exit status 2, nothing changed.
    const again = await cli(
      'payments',
      'resolve',
      '--id',
      id,
      '--outcome',
      'completed',
      '--reason',
      'second try',
      '--operator',
      'Lin',
    );
    expect(again).toMatchObject({ code: 2, stdout: '' });
    expect(again.stderr).toContain('The payment is already failed');
    const bad = await cli('payments', 'resolve', '--id', id, '--outcome', 'paid', '--reason', 'x');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--outcome must be completed or failed');
    expect(await balanceOf(engine.pool, walletId)).toBe(20_000n);
    await assertLedgerInvariant(engine.pool);
  });
});

describe('a resolution asks the provider first: the cashout is never paid twice', () => {
  const failed = {
    outcome: 'failed',
    reason: 'Provider support says it never left',
    operator: 'Ada',
  };

  it('resolve failed, then the provider pays: cancelled at the provider, the payment stays failed', async () => {
    const { walletId, id } = await pendingCashout();
    const res = await asAdmin(await newAdmin())(id, failed);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'failed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(100_000n);
    // The provider was told first: its payout is cancelled, so the phone can never be paid.
    expect(await sandboxMobileMoneyPayouts(engine.pool, id)).toMatchObject([{ status: 'failed' }]);

    const paid = await api.post(SIMULATE, { transaction_id: id, status: 'successful' });
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ transaction_id: id, status: 'failed' });
    expect(await sandboxMobileMoneyPayouts(engine.pool, id)).toMatchObject([{ status: 'failed' }]);
    expect(await balanceOf(engine.pool, walletId)).toBe(100_000n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([
      { step: 'reserve', legs: 2 },
      { step: 'give_back', legs: 2 },
    ]);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['cashout.failed']);
    await assertLedgerInvariant(engine.pool);
  });

  it('the provider pays, then resolve failed: 400 with the payment’s state, nothing moves', async () => {
    const { walletId, id, total } = await pendingCashout();
    const paid = await api.post(SIMULATE, { transaction_id: id, status: 'successful' });
    expect(paid.body).toMatchObject({ status: 'completed' });

    const res = await asAdmin(await newAdmin())(id, failed);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'The payment is already completed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(100_000n - total);
    expect((await ledgerLegs(engine.pool, id)).map((l) => l.step)).toEqual(['reserve', 'settle']);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['cashout.completed']);
    await assertLedgerInvariant(engine.pool);
  });

  it('the provider paid but never said so, then resolve failed: 400 with the provider’s answer', async () => {
    const { walletId, id, total } = await pendingCashout();
    await engine.pool.query(sql.unsafe`
      UPDATE sandbox_mobile_money_payouts SET status = 'completed' WHERE reference = ${id}`);

    const res = await asAdmin(await newAdmin())(id, failed);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      detail: 'The provider says the payment is completed: it cannot be resolved failed',
    });
    expect((await api.get(`/api/v1/transactions/${id}`)).body.status).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(100_000n - total);
    expect(await ledgerLegs(engine.pool, id)).toEqual([{ step: 'reserve', legs: 2 }]);
    expect(await eventsOf(id)).toEqual([]);
    expect(await sandboxMobileMoneyPayouts(engine.pool, id)).toMatchObject([
      { status: 'completed' },
    ]);
    const timeline = await api.get(`/api/v1/transactions/${id}/timeline`);
    expect((timeline.body.steps as { name: string }[]).filter((s) => s.name === 'resolve')).toEqual(
      [expect.objectContaining({ status: 'failed', operator: 'Ada', force: false })],
    );

    // The provider's answer still settles it, once.
    const synced = await api.post(SIMULATE, { transaction_id: id, status: 'successful' });
    expect(synced.body).toMatchObject({ status: 'completed' });
    expect((await ledgerLegs(engine.pool, id)).map((l) => l.step)).toEqual(['reserve', 'settle']);
    await assertLedgerInvariant(engine.pool);
  });

  it('resolve completed on a deposit the provider has not been paid: 400, nothing credited', async () => {
    const { walletId, id } = await pendingDeposit();
    const res = await asAdmin(await newAdmin())(id, {
      outcome: 'completed',
      reason: 'The payer sent a screenshot',
      operator: 'Ada',
      force: true,
    });
    // Force does not overrule a provider that answers.
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      detail: 'The provider says the payment is pending: it cannot be resolved completed',
    });
    expect((await api.get(`/api/v1/transactions/${id}`)).body.status).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([]);
    expect(await eventsOf(id)).toEqual([]);
    await assertLedgerInvariant(engine.pool);
  });

  it('resolve failed on a card deposit awaiting 3-D Secure cancels the card payment first', async () => {
    const { walletId } = await createUserWithWallet(usd);
    const res = await usd.post(CARD_DEPOSIT, {
      wallet_id: walletId,
      amount: 40,
      payment_method_id: 'pm_card_authenticationRequired',
    });
    expect(res.body).toMatchObject({ status: 'pending' });
    const id = res.body.id as string;
    const paymentId = res.body.provider_reference as string;

    const resolved = await asAdmin(await newAdmin())(id, failed);
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ id, status: 'failed' });
    const card = await engine.pool.oneFirst(sql.type(z.object({ status: z.string() }))`
      SELECT status FROM sandbox_card_payments WHERE id = ${paymentId}`);
    expect(card).toBe('failed');
    // The payer authenticates too late: the card is never charged, the wallet never credited.
    const late = await usd.post('/api/v1/testing/simulate-card-authentication', {
      transaction_id: id,
      status: 'successful',
    });
    expect(late.body).toMatchObject({ status: 'failed' });
    expect(
      await engine.pool.oneFirst(sql.type(z.object({ status: z.string() }))`
        SELECT status FROM sandbox_card_payments WHERE id = ${paymentId}`),
    ).toBe('failed');
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([]);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['deposit.failed']);
    await assertLedgerInvariant(engine.pool);
  });
});
