import type { Browser, Page } from 'playwright-core';
import { sql } from 'slonik';
import { z } from 'zod';
import { createDashboardAccount } from '../../src/db/dashboard-accounts';
import { goTo, launchBrowser, signedInDashboard } from '../support/browser';
import { assertLedgerInvariant, balanceOf } from '../support/database';
import { createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { pollUntil } from '../support/wait';

// The first launch unpacks Chromium into /tmp; a slow machine needs the time.
jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery staple';
const EMAIL = 'disputes@merchant.test';
const CARD_DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const SIMULATE_DISPUTE = '/api/v1/testing/simulate-dispute';
const SIMULATE_OUTCOME = '/api/v1/testing/simulate-dispute-outcome';
const EXCEEDS = 'Refund amount exceeds the refundable amount';

// Before the engine's hooks, so that the browser and its pages close before the engine does.
let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => browser?.close());

// One account walks every page here, reloading while it waits: above the per-minute default.
const engine = useTestEngine({ env: { RATE_LIMIT_DASHBOARD_ACCOUNT: '1000' } });
const { app, api } = useTestApp(engine, { currency: 'USD' });

beforeAll(async () => {
  const account = await createDashboardAccount(engine.pool, {
    applicationId: app.id,
    email: EMAIL,
    password: PASSWORD,
  });
  expect(account).not.toBeNull();
});

/** A completed sandbox card deposit of `amount` dollars into `walletId`. */
async function cardDeposit(walletId: string, amount: number, card = 'pm_card_visa') {
  const res = await api.post(CARD_DEPOSIT, {
    wallet_id: walletId,
    amount,
    payment_method_id: card,
  });
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('completed');
  return res.body.id as string;
}

async function openDispute(transactionId: string): Promise<string> {
  const res = await api.post(SIMULATE_DISPUTE, { transaction_id: transactionId });
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('needs_response');
  return res.body.id as string;
}

async function closeDispute(disputeId: string, status: 'won' | 'lost'): Promise<void> {
  const res = await api.post(SIMULATE_OUTCOME, { dispute_id: disputeId, status });
  expect(res.status).toBe(200);
  expect(res.body.status).toBe(status);
}

/** A signed-in dashboard page, recording every request and console errors. */
const signedIn = () => signedInDashboard(browser, engine.url, { email: EMAIL, password: PASSWORD });

/** Dollars as the dashboard writes them: `1,234.50`. */
const dollars = (n: number) =>
  n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** The dashboard's time: `2026-01-02 03:04:05Z`. */
const shownTime = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');

const refundsOf = (depositId: string) =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM transactions
    WHERE transaction_type = 'card_refund' AND parent_id = ${depositId}`);

/** Submits the refund form; the Idempotency-Key it sent and the answer's status. */
async function submitRefund(page: Page): Promise<{ key: string; status: number }> {
  const [request] = await Promise.all([
    page.waitForRequest((r) => r.url().endsWith('/refund') && r.method() === 'POST'),
    page.getByRole('button', { name: 'Refund', exact: true }).click(),
  ]);
  const response = await request.response();
  return { key: request.headers()['idempotency-key'] ?? '', status: response?.status() ?? 0 };
}

describe('card refunds on the dashboard', () => {
  it('refunds a card deposit in parts from its page, a fresh key each time, the API’s detail on too much', async () => {
    const { walletId } = await createUserWithWallet(api, { name: 'Refund Payer' });
    const deposit = await cardDeposit(walletId, 100);
    const { page, requests, errors } = await signedIn();
    await page.goto(`${engine.url}/dashboard/transactions/${deposit}`);
    await page.getByRole('heading', { name: 'Refund' }).waitFor();
    expect(await page.locator('dd[data-amount-refunded]').innerText()).toBe('0.00');
    // The default is all that is left.
    expect(await page.getByLabel('Refund amount').inputValue()).toBe('100.00');

    await page.getByLabel('Refund amount').fill('30');
    await page.getByLabel('Reason').selectOption('duplicate');
    const first = await submitRefund(page);
    expect(first.status).toBe(200);
    expect(first.key).toMatch(/^dashboard-[0-9a-f]{32}$/);
    const outcome = page.getByRole('status');
    await outcome.waitFor();
    const refundId = (await outcome.getAttribute('data-refund')) ?? '';
    const refund = (await api.get(`/api/v1/transactions/${refundId}`)).body;
    expect(refund).toMatchObject({
      id: refundId,
      transaction_type: 'card_refund',
      amount: 30,
      source_transaction_id: deposit,
    });
    expect(['pending', 'completed']).toContain(refund.status);
    expect(await outcome.innerText()).toContain(refundId);
    // The deposit's record is read again: what was refunded, and the new default.
    await page.locator('dd[data-amount-refunded]', { hasText: '30.00' }).waitFor();
    expect(await page.getByLabel('Refund amount').inputValue()).toBe('70.00');
    expect((await api.get(`/api/v1/transactions/${deposit}`)).body.amount_refunded).toBe(30);
    expect(await balanceOf(engine.pool, walletId)).toBe(7_000n);

    // More than is left: the API's detail, nothing written, and the next key is another.
    await page.getByLabel('Refund amount').fill('80');
    const refused = await submitRefund(page);
    expect(refused.status).toBe(400);
    expect(refused.key).toMatch(/^dashboard-[0-9a-f]{32}$/);
    expect(refused.key).not.toBe(first.key);
    await page.getByRole('alert').filter({ hasText: EXCEEDS }).waitFor();
    expect(await refundsOf(deposit)).toBe(1);
    expect(await balanceOf(engine.pool, walletId)).toBe(7_000n);

    // The rest, by the default amount.
    await page.getByLabel('Refund amount').fill('70.00');
    const rest = await submitRefund(page);
    expect(rest.status).toBe(200);
    expect(new Set([first.key, refused.key, rest.key]).size).toBe(3);
    await page.locator('dd[data-amount-refunded]', { hasText: '100.00' }).waitFor();
    expect(await page.locator('[data-refundable]').innerText()).toBe('0.00');
    expect(await refundsOf(deposit)).toBe(2);
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);

    // The refund's own page names its deposit; the lists show both sides.
    await page.getByRole('status').getByRole('link').click();
    await page.getByRole('heading', { name: 'Transaction', exact: true }).waitFor();
    await page.getByText('Source transaction').waitFor();
    await page.getByRole('link', { name: deposit }).waitFor();
    expect(await page.getByRole('heading', { name: 'Refund' }).count()).toBe(0);
    await goTo(page, 'Transactions');
    await page.getByLabel('Type').selectOption('card_refund');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('2 transactions').waitFor();
    expect(await page.locator('tr[data-transaction] td:nth-child(2)').allInnerTexts()).toEqual([
      `card_refund\nof ${deposit.slice(0, 8)}`,
      `card_refund\nof ${deposit.slice(0, 8)}`,
    ]);
    await page.getByLabel('Type').selectOption('card_deposit');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page
      .locator(`tr[data-transaction="${deposit}"]`)
      .getByText(`refunded ${dollars(100)}`)
      .waitFor();

    await assertLedgerInvariant(engine.pool);
    const origin = new URL(engine.url).origin;
    expect(requests.filter((url) => !url.startsWith(`${origin}/`))).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('honours the Idempotency-Key through the dashboard: a retry answers the first refund', async () => {
    const { walletId } = await createUserWithWallet(api);
    const deposit = await cardDeposit(walletId, 20);
    const { page } = await signedIn();
    const path = `/dashboard/api/test/v1/transactions/${deposit}/refund`;
    const answers = await page.evaluate(async (path) => {
      const session = (await (await fetch('/dashboard/api/session')).json()) as {
        csrf_token: string;
      };
      const send = async () => {
        const res = await fetch(path, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            'X-CSRF-Token': session.csrf_token,
            'Idempotency-Key': 'dashboard-retry-1',
          },
          body: JSON.stringify({ amount: 5 }),
        });
        return {
          status: res.status,
          replayed: res.headers.get('idempotent-replayed'),
          body: await res.json(),
        };
      };
      return [await send(), await send()];
    }, path);
    expect(answers[0]!.status).toBe(200);
    expect(answers[0]!.replayed).toBeNull();
    expect(answers[1]).toEqual({ ...answers[0], replayed: 'true' });
    expect(await refundsOf(deposit)).toBe(1);
    expect(await balanceOf(engine.pool, walletId)).toBe(1_500n);
  });

  it('shows a refund that the card provider refuses, and the wallet paid back', async () => {
    const { walletId } = await createUserWithWallet(api);
    const deposit = await cardDeposit(walletId, 40, 'pm_card_refundFails');
    const { page, errors } = await signedIn();
    await page.goto(`${engine.url}/dashboard/transactions/${deposit}`);
    await page.getByLabel('Refund amount').fill('15');
    expect((await submitRefund(page)).status).toBe(200);
    const refundId = (await page.getByRole('status').getAttribute('data-refund')) ?? '';
    await page.getByRole('status').getByRole('link').click();
    await page.getByText(refundId, { exact: true }).waitFor();
    // The provider's refusal arrives a moment later: reload until the record says so.
    const shown = await pollUntil(
      async () => {
        await page.reload();
        await page.getByRole('heading', { name: 'Timeline' }).waitFor();
        return page.locator('.record .status').first().innerText();
      },
      (status) => status === 'failed',
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(shown).toBe('failed');
    await page.getByRole('link', { name: deposit }).click();
    await page.locator('dd[data-amount-refunded]', { hasText: '0.00' }).waitFor();
    expect(await page.getByLabel('Refund amount').inputValue()).toBe('40.00');
    const balance = await pollUntil(
      () => balanceOf(engine.pool, walletId),
      (b) => b === 4_000n,
    );
    expect(balance).toBe(4_000n);
    await assertLedgerInvariant(engine.pool);
    expect(errors).toEqual([]);
  });
});

describe('disputes on the dashboard', () => {
  let walletId: string;
  const deposits: string[] = [];
  const disputes: string[] = [];
  beforeAll(async () => {
    ({ walletId } = await createUserWithWallet(api, { name: 'Disputed Payer' }));
    // One more than a page of the list.
    for (let i = 1; i <= 21; i++) deposits.push(await cardDeposit(walletId, i));
    for (const deposit of deposits) disputes.push(await openDispute(deposit));
    await closeDispute(disputes[0]!, 'lost');
    await closeDispute(disputes[1]!, 'won');
  });

  it('lists disputes by page and by status, and opens the disputes of one deposit', async () => {
    const { page, requests, errors } = await signedIn();
    await goTo(page, 'Disputes');
    await page.getByRole('heading', { name: 'Disputes' }).waitFor();
    await page.getByText('21 disputes', { exact: true }).waitFor();
    expect(await page.locator('tr[data-dispute]').count()).toBe(20);
    await page.getByText('Page 1 of 2').waitFor();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('Page 2 of 2').waitFor();
    // The first page stays shown until the second has loaded.
    await page.locator('tr[data-dispute]').nth(1).waitFor({ state: 'detached' });
    expect(await page.locator('tr[data-dispute]').count()).toBe(1);

    await page.getByLabel('Status').selectOption('lost');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('1 disputes', { exact: true }).waitFor();
    expect(
      requests.some((url) => /\/v1\/disputes\?page=1&per_page=20&status=lost$/.test(url)),
    ).toBe(true);
    const lost = page.locator(`tr[data-dispute="${disputes[0]}"]`);
    await lost.getByText('lost', { exact: true }).waitFor();
    await page.getByLabel('Status').selectOption('needs_response');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('19 disputes', { exact: true }).waitFor();

    // From a deposit's page: the list filtered by its id.
    await page.goto(`${engine.url}/dashboard/transactions/${deposits[2]}`);
    await page.getByRole('link', { name: 'Disputes of this deposit' }).click();
    await page.getByText('1 disputes', { exact: true }).waitFor();
    expect(await page.getByLabel('Transaction id').inputValue()).toBe(deposits[2]);
    await page.locator(`tr[data-dispute="${disputes[2]}"]`).waitFor();

    // The dispute's reserve and its release are records of the wallet, naming the deposit.
    await goTo(page, 'Transactions');
    await page.getByLabel('Type').selectOption('dispute_release');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('1 transactions').waitFor();
    await page
      .locator('tr[data-transaction] td:nth-child(2)')
      .getByRole('link', { name: deposits[1]!.slice(0, 8) })
      .waitFor();
    expect(errors).toEqual([]);
  });

  it('shows one dispute and takes its evidence; a closed one takes none', async () => {
    const { page, errors } = await signedIn();
    const id = disputes[3]!;
    const before = (await api.get(`/api/v1/disputes/${id}`)).body;
    await goTo(page, 'Disputes');
    await page.locator(`tr[data-dispute="${id}"] a`).first().click();
    await page.getByRole('heading', { name: 'Dispute', exact: true }).waitFor();
    await page.getByText(id, { exact: true }).waitFor();
    expect(await page.locator('dd[data-dispute-status]').innerText()).toBe('needs_response');
    await page.getByText(shownTime(before.evidence_due_by)).waitFor();
    await page.getByText(dollars(before.amount), { exact: true }).first().waitFor();
    await page.getByRole('link', { name: before.transaction_id }).waitFor();

    const submit = page.getByRole('button', { name: 'Submit evidence' });
    expect(await submit.isDisabled()).toBe(true);
    await page.getByLabel('Evidence').fill('Delivered on 2 March, signed for by the payer.');
    await submit.click();
    await page.getByRole('status').filter({ hasText: 'under_review' }).waitFor();
    await page.locator('dd[data-dispute-status]', { hasText: 'under_review' }).waitFor();
    expect((await api.get(`/api/v1/disputes/${id}`)).body.status).toBe('under_review');

    // Closed: the form is disabled.
    await page.goto(`${engine.url}/dashboard/disputes/${disputes[0]}`);
    await page.locator('dd[data-dispute-status]', { hasText: 'lost' }).waitFor();
    expect(await page.getByLabel('Evidence').isDisabled()).toBe(true);
    expect(await submit.isDisabled()).toBe(true);
    await page.getByText('This dispute is closed').waitFor();

    // Closed while the page was open: the API's detail, and the dispute as it was.
    const late = disputes[4]!;
    await page.goto(`${engine.url}/dashboard/disputes/${late}`);
    await page.locator('dd[data-dispute-status]', { hasText: 'needs_response' }).waitFor();
    await page.getByLabel('Evidence').fill('Too late.');
    await closeDispute(late, 'won');
    await submit.click();
    const detail = (await api.post(`/api/v1/disputes/${late}/evidence`, { text: 'Too late.' })).body
      .detail as string;
    expect(detail).toEqual(expect.any(String));
    await page.getByRole('alert').filter({ hasText: detail }).waitFor();
    expect((await api.get(`/api/v1/disputes/${late}`)).body.status).toBe('won');
    expect(errors).toEqual([]);
  });
});
