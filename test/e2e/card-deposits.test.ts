import { temporal } from '@temporalio/proto';
import { sql } from 'slonik';
import { z } from 'zod';
import { SandboxCardProvider } from '../../src/providers/sandbox-card';
import { workflowIds } from '../../src/workflows/ids';
import { SearchAttributes } from '../../src/workflows/shared';
import {
  assertLedgerInvariant,
  balanceOf,
  eventsOf as eventsOfPayment,
  systemBalance,
  fundWallet,
} from '../support/database';
import { createTestApp } from '../support/engine';
import { sandboxWebhookSecret } from '../../src/crypto/secret-box';
import { clientFor, createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { reportedInProcess } from '../support/metrics';

const engine = useTestEngine();
const { app, api } = useTestApp(engine, { currency: 'USD', settings: { feeBps: { card: 150 } } });

const DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const ESTIMATE = '/api/v1/fees/estimate/deposit/card-metadata';
const GENERIC_ESTIMATE = '/api/v1/fees/estimate/deposit';
const SIMULATE = '/api/v1/testing/simulate-card-authentication';
const WEBHOOK = '/api/v1/webhooks/providers/card';

const accountBalance = (kind: string, appId = app.id, currency: 'SLE' | 'USD' = 'USD') =>
  systemBalance(engine.pool, appId, kind, currency);

const eventsOf = (transactionId: string) => eventsOfPayment(engine.pool, transactionId);

async function ledgerEntriesOf(transactionId: string) {
  return engine.pool.any(sql.type(
    z.object({ kind: z.string(), amount: z.bigint(), currency: z.string() }),
  )`
    SELECT a.kind, e.amount, e.currency
    FROM ledger_entries e
    JOIN ledger_transactions t ON t.id = e.ledger_transaction_id
    JOIN ledger_accounts a ON a.id = e.account_id
    WHERE t.transaction_id = ${transactionId}
    ORDER BY e.amount`);
}

async function rowsOfWallet(walletId: string): Promise<number> {
  return engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM transactions WHERE wallet_id = ${walletId}`);
}

describe('card deposits', () => {
  it('charges the card and credits the wallet at once: one balanced ledger transaction', async () => {
    const { walletId } = await createUserWithWallet(api);
    const clearingBefore = await accountBalance('provider_clearing_card');
    const feesBefore = await accountBalance('application_fees');
    const res = await api.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 100,
      payment_method_id: 'pm_card_visa',
    });
    expect(res.status).toBe(200);
    // A US visa on a USD application: the domestic rate, 2.9 % + 0.30.
    expect(res.body).toMatchObject({
      id: expect.any(String),
      wallet_id: walletId,
      amount: 100,
      application_fee: 1.5,
      transaction_type: 'card_deposit',
      status: 'completed',
      description: 'Card deposit',
      provider_fee: 3.2,
      total_amount_paid: 104.7,
      provider_reference: expect.stringMatching(/^pi_sandbox_[0-9a-f]{32}$/),
      next_action: null,
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
    expect((await accountBalance('application_fees')) - feesBefore).toBe(150n);
    expect((await accountBalance('provider_clearing_card')) - clearingBefore).toBe(-10_150n);
    const entries = await ledgerEntriesOf(res.body.id);
    expect(entries.map((e) => [e.kind, e.amount])).toEqual([
      ['provider_clearing_card', -10_470n],
      ['application_fees', 150n],
      ['provider_clearing_card', 320n],
      ['user_wallet', 10_000n],
    ]);
    const events = await eventsOf(res.body.id);
    expect(events.map((e) => e.type)).toEqual(['deposit.completed']);
    expect(events[0]!.data).toMatchObject({
      id: res.body.id,
      transaction_type: 'card_deposit',
      status: 'completed',
      provider_reference: res.body.provider_reference,
      provider_fee: 3.2,
      total_amount_paid: 104.7,
    });
    const listed = await api.get(`/api/v1/transactions/${res.body.id}`);
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ id: res.body.id, status: 'completed' });
    // The answer can come before the workflow task's completion reaches the server.
    const handle = engine.temporal.workflow.getHandle(workflowIds.cardDeposit(res.body.id));
    await handle.result();
    const described = await handle.describe();
    expect(described.typedSearchAttributes.get(SearchAttributes.PaymentType)).toBe('card_deposit');
    expect(described.typedSearchAttributes.get(SearchAttributes.PaymentStatus)).toBe('completed');
    await assertLedgerInvariant(engine.pool);
  });

  it('costs Temporal 1 workflow task: its 2 steps are local activities, no timer or update', async () => {
    // The dev server's work per deposit follows its history: a step added here slows
    // `npm run bench`'s card row, so the shape is pinned. A deposit whose worker reported too
    // late (a loaded machine) went through its `open` update instead, and is set aside.
    const { walletId } = await createUserWithWallet(api);
    const res = await reportedInProcess('card_deposit', () =>
      api.post(DEPOSIT, { wallet_id: walletId, amount: 5, payment_method_id: 'pm_card_visa' }),
    );
    expect(res.status).toBe(200);
    // Answered by its own worker, before the task's completion reached the server.
    const handle = engine.temporal.workflow.getHandle(workflowIds.cardDeposit(res.body.id));
    expect(await handle.result()).toBe('completed');
    const { events } = await handle.fetchHistory();
    const counts: Record<string, number> = {};
    for (const e of events ?? []) {
      const name = temporal.api.enums.v1.EventType[e.eventType!].replace('EVENT_TYPE_', '');
      counts[name] = (counts[name] ?? 0) + 1;
    }
    expect(counts).toEqual({
      WORKFLOW_EXECUTION_STARTED: 1,
      WORKFLOW_TASK_SCHEDULED: 1,
      WORKFLOW_TASK_STARTED: 1,
      WORKFLOW_TASK_COMPLETED: 1,
      MARKER_RECORDED: 2,
      UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: 1,
      WORKFLOW_EXECUTION_COMPLETED: 1,
    });
    // Local activities' markers only: no `patched` marker (the API's start says `localSteps`).
    const markers = (events ?? []).flatMap(
      (e) => e.markerRecordedEventAttributes?.markerName ?? [],
    );
    expect(markers).toEqual(['core_local_activity', 'core_local_activity']);
    const timeline = await api.get(`/api/v1/transactions/${res.body.id}/timeline`);
    expect(timeline.status).toBe(200);
    const steps = timeline.body.steps as { name: string; kind: string; status: string }[];
    expect(steps.filter((step) => step.kind === 'activity')).toEqual([
      expect.objectContaining({ name: 'openCardDeposit', status: 'completed' }),
      expect.objectContaining({ name: 'completeCardDeposit', status: 'completed' }),
    ]);
  });

  it.each([
    ['pm_card_chargeDeclined', 'Card declined: Your card was declined.'],
    ['pm_card_insufficientFunds', 'Card declined: Your card has insufficient funds.'],
  ])('declines %s: 400, recorded failed and listed, nothing credited', async (pm, detail) => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, { wallet_id: walletId, amount: 25, payment_method_id: pm });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail });
    expect(res.body.detail).toMatch(/^Card declined/);
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    const list = await api.get(`/api/v1/transactions/?wallet_id=${walletId}`);
    expect(list.status).toBe(200);
    const rows = (list.body.data ?? list.body) as {
      id: string;
      transaction_type: string;
      status: string;
    }[];
    expect(rows).toEqual([
      expect.objectContaining({ transaction_type: 'card_deposit', status: 'failed' }),
    ]);
    const id = rows[0]!.id;
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(['deposit.failed']);
    expect(await ledgerEntriesOf(id)).toEqual([]);
  });

  it('ignores X-Forwarded-Proto and X-Forwarded-Host without TRUST_PROXY: the URL is the request’s origin', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(
      DEPOSIT,
      { wallet_id: walletId, amount: 40, payment_method_id: 'pm_card_authenticationRequired' },
      { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'attacker.example' },
    );
    expect(res.status).toBe(200);
    expect(res.body.next_action).toEqual({
      type: 'authenticate',
      url: `${engine.url}/api/v1/testing/card-authentication/${res.body.provider_reference}`,
    });
  });

  it('waits for 3-D Secure: pending with next_action, then simulate successful completes it', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 40,
      payment_method_id: 'pm_card_authenticationRequired',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'pending', amount: 40 });
    expect(res.body.next_action).toEqual({
      type: 'authenticate',
      url: `${engine.url}/api/v1/testing/card-authentication/${res.body.provider_reference}`,
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);

    const done = await api.post(SIMULATE, { transaction_id: res.body.id, status: 'successful' });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ transaction_id: res.body.id, status: 'completed' });
    // The timeline shows each step, the provider's steps with the payment's reference.
    const timeline = await api.get(`/api/v1/transactions/${res.body.id}/timeline`);
    expect(timeline.status).toBe(200);
    const steps = timeline.body.steps as { name: string; provider_reference: string | null }[];
    expect(steps.map((step) => step.name)).toEqual(
      expect.arrayContaining(['open', 'openCardDeposit', 'notify', 'completeCardDeposit']),
    );
    expect(steps.find((step) => step.name === 'openCardDeposit')!.provider_reference).toBe(
      res.body.provider_reference,
    );
    expect(await balanceOf(engine.pool, walletId)).toBe(4_000n);
    // Again: the sandbox's event is the same, the deposit settled once.
    const again = await api.post(SIMULATE, { transaction_id: res.body.id, status: 'failed' });
    expect(again.body.status).toBe('completed');
    expect(await balanceOf(engine.pool, walletId)).toBe(4_000n);
    expect((await eventsOf(res.body.id)).map((e) => e.type)).toEqual(['deposit.completed']);
    const notifications = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM provider_notifications WHERE transaction_id = ${res.body.id}`);
    expect(notifications).toBeGreaterThanOrEqual(1);
    await assertLedgerInvariant(engine.pool);
  });

  it('fails a payment whose 3-D Secure fails: nothing credited', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 40,
      payment_method_id: 'pm_card_authenticationRequired',
    });
    const failed = await api.post(SIMULATE, { transaction_id: res.body.id, status: 'failed' });
    expect(failed.status).toBe(200);
    expect(failed.body.status).toBe('failed');
    expect((await api.get(`/api/v1/transactions/${res.body.id}`)).body.status).toBe('failed');
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect((await eventsOf(res.body.id)).map((e) => e.type)).toEqual(['deposit.failed']);
  });

  it('the authentication page approves the payment through a real HTML form post', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 12.5,
      payment_method_id: 'pm_card_authenticationRequired',
    });
    const page = await fetch(res.body.next_action.url as string);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('Approve');
    expect(html).toContain('Fail');
    const actions = [...html.matchAll(/<form method="post" action="([^"]+)">/g)].map((m) =>
      m[1]!.replace(/&amp;/g, '&'),
    );
    const approve = actions.find((a) => a.includes('status=successful'));
    expect(approve).toBeDefined();
    // What a browser sends for a form with a submit button and no named field.
    const posted = await fetch(new URL(approve!, res.body.next_action.url as string), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    expect(posted.status).toBe(200);
    expect(await posted.text()).toContain('completed');
    expect((await api.get(`/api/v1/transactions/${res.body.id}`)).body.status).toBe('completed');
    expect(await balanceOf(engine.pool, walletId)).toBe(1_250n);
    // An unknown payment has no page.
    expect((await fetch(`${engine.url}/api/v1/testing/card-authentication/pi_nope`)).status).toBe(
      404,
    );
  });

  it('answers 400 "No such payment method" on the deposit and the estimate, writing nothing', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 10,
      payment_method_id: 'pm_card_nope',
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'No such payment method' });
    expect(await rowsOfWallet(walletId)).toBe(0);
    const estimate = await api.post(ESTIMATE, { amount: 10, payment_method_id: 'pm_card_nope' });
    expect(estimate.status).toBe(400);
    expect(estimate.body).toEqual({ detail: 'No such payment method' });
  });

  it('refuses a disabled wallet (403) and a missing one (404)', async () => {
    const { walletId } = await createUserWithWallet(api);
    await api.post(`/api/v1/wallets/${walletId}/disable`);
    const disabled = await api.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 10,
      payment_method_id: 'pm_card_visa',
    });
    expect(disabled.status).toBe(403);
    expect(disabled.body.detail).toBe('Wallet is disabled');
    const missing = await api.post(DEPOSIT, {
      wallet_id: '00000000-0000-4000-8000-000000000000',
      amount: 10,
      payment_method_id: 'pm_card_visa',
    });
    expect(missing.status).toBe(404);
    expect(await rowsOfWallet(walletId)).toBe(0);
  });

  it('answers 503 in Live Mode without Stripe keys, writing nothing; simulate refuses Live keys', async () => {
    const live = clientFor(engine.url, app, 'live');
    const { walletId } = await createUserWithWallet(live);
    const res = await live.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 10,
      payment_method_id: 'pm_card_visa',
    });
    expect(res.status).toBe(503);
    expect(res.body.detail).toMatch(/not configured/);
    expect(await rowsOfWallet(walletId)).toBe(0);
    const estimate = await live.post(ESTIMATE, { amount: 10, payment_method_id: 'pm_card_visa' });
    expect(estimate.status).toBe(503);
    const simulate = await live.post(SIMULATE, { transaction_id: walletId, status: 'successful' });
    expect(simulate.status).toBe(403);
  });

  it.each([
    // payment method, international, the card detected (docs/api.md, Test Mode sandbox)
    ['pm_card_visa', false, { brand: 'visa', country: 'US', funding: 'credit' }],
    ['pm_card_mastercard', false, { brand: 'mastercard', country: 'US', funding: 'credit' }],
    ['pm_card_visa_debit', false, { brand: 'visa', country: 'US', funding: 'debit' }],
    ['pm_card_amex', true, { brand: 'amex', country: 'US', funding: 'credit' }],
    ['pm_card_gb', true, { brand: 'visa', country: 'GB', funding: 'credit' }],
    ['pm_card_sl', true, { brand: 'visa', country: 'SL', funding: 'debit' }],
  ])(
    'the estimate for %s names its card and equals the real deposit’s fees to the cent',
    async (pm, international, card) => {
      const amount = 123.45;
      const estimate = await api.post(ESTIMATE, { amount, payment_method_id: pm });
      expect(estimate.status).toBe(200);
      const generic = await api.post(GENERIC_ESTIMATE, {
        amount,
        payment_method: 'card',
        is_international: international,
      });
      expect(estimate.body).toEqual({ ...generic.body, card_metadata: card });
      const { walletId } = await createUserWithWallet(api);
      const res = await api.post(DEPOSIT, { wallet_id: walletId, amount, payment_method_id: pm });
      expect(res.status).toBe(200);
      const breakdown = estimate.body.fee_breakdown as Record<string, string>;
      const deposit = res.body as Record<string, number>;
      expect(deposit.provider_fee!.toFixed(2)).toBe(breakdown.estimated_provider_fee);
      expect(deposit.application_fee!.toFixed(2)).toBe(breakdown.application_fee);
      expect(deposit.total_amount_paid!.toFixed(2)).toBe(breakdown.total_amount_to_pay);
      const charged = await engine.pool.oneFirst(sql.type(z.object({ amount: z.bigint() }))`
      SELECT amount FROM sandbox_card_payments WHERE id = ${res.body.provider_reference}`);
      expect(charged.toString()).toBe(breakdown.total_amount_to_pay!.replace('.', ''));
    },
  );

  it('uses SL as the home country of an SLE application', async () => {
    const sle = await createTestApp(engine.pool, { currency: 'SLE' });
    const sleApi = clientFor(engine.url, sle);
    const domestic = await sleApi.post(ESTIMATE, { amount: 100, payment_method_id: 'pm_card_sl' });
    expect(domestic.body.fee_breakdown.estimated_provider_fee).toBe('3.20');
    expect(domestic.body.message).toContain('domestic');
    const foreign = await sleApi.post(ESTIMATE, { amount: 100, payment_method_id: 'pm_card_visa' });
    expect(foreign.body.fee_breakdown.estimated_provider_fee).toBe('4.20');
    expect(foreign.body.message).toContain('international');
  });

  it('replays an Idempotency-Key: the card is charged once', async () => {
    const { walletId } = await createUserWithWallet(api);
    const body = { wallet_id: walletId, amount: 5, payment_method_id: 'pm_card_visa' };
    const key = { 'Idempotency-Key': `card-${walletId}` };
    const [first, second] = await Promise.all([
      api.post(DEPOSIT, body, key),
      api.post(DEPOSIT, body, key),
    ]);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(first.body.id);
    const third = await api.post(DEPOSIT, body, key);
    expect(third.headers.get('idempotent-replayed')).toBe('true');
    expect(third.body).toEqual(first.body);
    expect(await balanceOf(engine.pool, walletId)).toBe(500n);
    const charges = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM sandbox_card_payments WHERE reference = ${first.body.id}`);
    expect(charges).toBe(1);
    const mismatch = await api.post(DEPOSIT, { ...body, amount: 6 }, key);
    expect(mismatch.status).toBe(422);
  });

  it('syncs a pending card deposit with the provider', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 7,
      payment_method_id: 'pm_card_authenticationRequired',
    });
    const unchanged = await api.post(`/api/v1/transactions/sync/${res.body.provider_reference}`);
    expect(unchanged.status).toBe(200);
    expect(unchanged.body.status).toBe('pending');
    // The payer authenticated, but the provider's event was lost.
    await engine.pool.query(
      sql.unsafe`UPDATE sandbox_card_payments SET status = 'succeeded' WHERE id = ${res.body.provider_reference as string}`,
    );
    const synced = await api.post(`/api/v1/transactions/sync/${res.body.id}`);
    expect(synced.body).toMatchObject({ transaction_id: res.body.id, status: 'completed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(700n);
  });

  it('takes a signed card event through the webhook, once; refuses a bad signature (400)', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, {
      wallet_id: walletId,
      amount: 9,
      payment_method_id: 'pm_card_authenticationRequired',
    });
    const sandbox = new SandboxCardProvider(engine.pool, sandboxWebhookSecret(engine.config));
    const event = sandbox.eventFor(
      await sandbox.authenticate(res.body.provider_reference as string, true),
    );
    const send = () =>
      api.request('POST', WEBHOOK, { raw: event.body, headers: { ...event.headers } });
    const [first, duplicate] = await Promise.all([send(), send()]);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      received: true,
      transaction_id: res.body.id,
      status: 'completed',
    });
    expect(duplicate.body.status).toBe('completed');
    expect(await balanceOf(engine.pool, walletId)).toBe(900n);
    expect((await eventsOf(res.body.id)).map((e) => e.type)).toEqual(['deposit.completed']);
    const recorded = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM provider_notifications WHERE transaction_id = ${res.body.id}`);
    expect(recorded).toBe(2);

    const tampered = await api.request('POST', WEBHOOK, {
      raw: event.body.replace('succeeded', 'failed'),
      headers: { ...event.headers },
    });
    expect(tampered.status).toBe(400);
    expect(tampered.body).toEqual({ detail: 'Invalid event signature' });
    // Live Mode has no Stripe keys here: a Stripe-signed event has no one to check it.
    const stripe = await api.request('POST', WEBHOOK, {
      raw: '{}',
      headers: { 'stripe-signature': 't=1,v1=00' },
    });
    expect(stripe.status).toBe(400);
  });

  it('keeps the books exact under many card deposits and transfers at once', async () => {
    const wallets = await Promise.all(
      Array.from({ length: 4 }, () => createUserWithWallet(api).then((w) => w.walletId)),
    );
    for (const walletId of wallets) await fundWallet(engine.pool, walletId, 100_000n);
    const requests: Promise<{ status: number }>[] = [];
    for (let i = 0; i < 40; i += 1) {
      const walletId = wallets[i % wallets.length]!;
      requests.push(
        api.post(DEPOSIT, {
          wallet_id: walletId,
          amount: 1 + (i % 5),
          payment_method_id: i % 7 === 0 ? 'pm_card_chargeDeclined' : 'pm_card_visa',
        }),
        api.post('/api/v1/transactions/wallet/transfer', {
          from_wallet_id: walletId,
          to_wallet_id: wallets[(i + 1) % wallets.length],
          amount: 2.5,
        }),
      );
    }
    const replies = await Promise.all(requests);
    expect(replies.filter((r) => r.status !== 200 && r.status !== 400)).toEqual([]);
    const deposited = await engine.pool.oneFirst(sql.type(z.object({ n: z.bigint() }))`
      SELECT coalesce(sum(amount), 0)::bigint AS n FROM transactions
      WHERE transaction_type = 'card_deposit' AND status = 'completed'
        AND wallet_id = ANY(${sql.array(wallets, 'uuid')})`);
    let total = 0n;
    for (const walletId of wallets) total += await balanceOf(engine.pool, walletId);
    // Transfers move money among the four; only the completed card deposits add to it.
    expect(total).toBe(400_000n + deposited);
    await assertLedgerInvariant(engine.pool);
  });
});
