import { readFile } from 'node:fs/promises';
import type { Browser, Download, Page } from 'playwright-core';
import { sql } from 'slonik';
import { z } from 'zod';
import { createDashboardAccount } from '../../src/db/dashboard-accounts';
import { goTo, launchBrowser, signedInDashboard } from '../support/browser';
import { csvRecords } from '../support/csv';
import { fundWallet } from '../support/database';
import { createUserWithWallet, transfer } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

// The first launch unpacks Chromium into /tmp; a slow machine needs the time.
jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery staple';
const EMAIL = 'finance@merchant.test';
const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const SIMULATE = '/api/v1/testing/simulate-mobile-money-webhook';
/** docs/api.md, Metadata: the header rows, exactly. */
const EXPORT_HEADER =
  'id,created_at,transaction_type,status,amount,currency,application_fee,provider_fee,wallet_id,recipient_wallet_id,description,provider_reference,metadata';
const STATEMENT_HEADER =
  'transaction_id,transaction_type,created_at,amount,balance_after,description';
const DAY_MS = 86_400_000;

// Before the engine's hooks, so that the browser and its pages close before the engine does.
let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => browser?.close());

// One account walks many pages here: above the per-minute default.
const engine = useTestEngine({ env: { RATE_LIMIT_DASHBOARD_ACCOUNT: '1000' } });
const { app, api } = useTestApp(engine);

let walletA: string;
let walletB: string;
let userA: string;
let small: string;
let large: string;
let back: string;
let deposit: string;

beforeAll(async () => {
  expect(
    await createDashboardAccount(engine.pool, {
      applicationId: app.id,
      email: EMAIL,
      password: PASSWORD,
    }),
  ).not.toBeNull();
  const a = await createUserWithWallet(api, {
    name: 'Fatmata Bangura',
    app_user_id: 'CRM-777',
    phone_number: '+23276111222',
    metadata: { crm_id: 'C-42', segment: 'retail' },
  });
  const b = await createUserWithWallet(api, { name: 'Mohamed Conteh' });
  await createUserWithWallet(api, { name: 'Isatu Koroma', phone_number: '+23277999000' });
  walletA = a.walletId;
  walletB = b.walletId;
  userA = a.userId;
  const tagged = await api.request('PATCH', `/api/v1/wallets/${walletA}/`, {
    body: { metadata: { tier: 'gold' } },
  });
  expect(tagged.status).toBe(200);
  await fundWallet(engine.pool, walletA, 100_000n);
  small = (await transfer(api, walletA, walletB, 12.5)).id;
  large = (await transfer(api, walletA, walletB, 40)).id;
  back = (await transfer(api, walletB, walletA, 5)).id;
  const paid = await api.post(DEPOSIT, { wallet_id: walletA, amount: 100 });
  expect(paid.status).toBe(200);
  deposit = paid.body.transaction_id;
  const settled = await api.post(SIMULATE, { transaction_id: deposit, status: 'successful' });
  expect(settled.body.status).toBe('completed');
});

/** A signed-in dashboard page, recording the dashboard's API requests and console errors. */
const signedIn = () =>
  signedInDashboard(browser, engine.url, { email: EMAIL, password: PASSWORD }, (url) =>
    url.includes('/dashboard/api/'),
  );

/** The query of the last request the page made to a dashboard endpoint ending in `path`. */
function lastQuery(requests: string[], path: string): URLSearchParams {
  const url = requests.filter((u) => new URL(u).pathname.endsWith(path)).at(-1);
  expect(url).toBeDefined();
  return new URL(url!).searchParams;
}

/** The ids of the transaction rows shown, top to bottom, once the count shown is `total`. */
async function shownIds(page: Page, total: number): Promise<string[]> {
  await page
    .getByRole('status')
    .filter({ hasText: `${total} transactions` })
    .waitFor();
  const rows = await page.locator('tr[data-transaction]').all();
  return Promise.all(rows.map(async (row) => (await row.getAttribute('data-transaction')) ?? ''));
}

/** RFC 4180 records (quoted fields, doubled quotes, CRLF), a last one without CRLF too. */
function parseCsv(text: string): string[][] {
  const { records, rest } = csvRecords(text);
  return rest.length ? [...records, rest] : records;
}

async function downloaded(page: Page, click: () => Promise<void>): Promise<Download> {
  const [file] = await Promise.all([page.waitForEvent('download'), click()]);
  return file;
}

const day = (time: number) => new Date(time).toISOString().slice(0, 10);

/** A major-unit amount as the dashboard writes it: `1,234.50 SLE`. */
const amount = (n: number, currency: string) =>
  `${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })} ${currency}`;

describe('the dashboard’s search, exports and statements', () => {
  it('filters transactions by amount, type, wallet, dates and reference, in the address', async () => {
    const { page, requests, errors } = await signedIn();
    await goTo(page, 'Transactions');
    await shownIds(page, 4);

    await page.getByLabel('Type').selectOption(['transfer']);
    await page.getByLabel('Amount at least').fill('10');
    await page.getByLabel('Amount at most').fill('45');
    await page.getByLabel('Wallet id').fill(walletA);
    await page.getByRole('button', { name: 'Filter' }).click();
    // Newest first: the 40.00, then the 12.50; the 5.00 back is under the bound.
    expect(await shownIds(page, 2)).toEqual([large, small]);
    const address = new URL(page.url()).searchParams;
    expect(Object.fromEntries(address)).toEqual({
      transaction_type: 'transfer',
      wallet_id: walletA,
      'amount[gte]': '10',
      'amount[lte]': '45',
    });
    const sent = lastQuery(requests, '/v1/transactions/');
    expect(sent.get('amount[gte]')).toBe('10');
    expect(sent.get('amount[lte]')).toBe('45');
    expect(sent.get('transaction_type')).toBe('transfer');
    expect(sent.get('wallet_id')).toBe(walletA);

    // A reload (or a shared address) shows the same view, its form filled in.
    await page.reload();
    expect(await shownIds(page, 2)).toEqual([large, small]);
    expect(await page.getByLabel('Amount at least').inputValue()).toBe('10');
    expect(await page.getByLabel('Wallet id').inputValue()).toBe(walletA);
    expect(await page.getByLabel('Type').inputValue()).toBe('transfer');

    // Dates: today (UTC) holds them all; before today, none.
    const today = day(Date.now());
    await page.getByLabel('Amount at least').fill('');
    await page.getByLabel('Amount at most').fill('');
    await page.getByLabel('Created from (UTC)').fill(today);
    await page.getByLabel('Created before (UTC)').fill(day(Date.now() + DAY_MS));
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await shownIds(page, 3)).toEqual([back, large, small]);
    expect(new URL(page.url()).searchParams.get('created[gte]')).toBe(today);
    await page.getByLabel('Created before (UTC)').fill(today);
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await shownIds(page, 0)).toEqual([]);
    await page.getByText('No transactions.').waitFor();
    // Back: the previous view again, from the address.
    await page.goBack();
    expect(await shownIds(page, 3)).toEqual([back, large, small]);

    // Several statuses and types at once, comma-separated as the API takes them.
    await page.goto(`${engine.url}/dashboard/transactions`);
    await shownIds(page, 4);
    await page.getByLabel('Status').selectOption(['pending', 'completed']);
    await page.getByLabel('Type').selectOption(['transfer', 'mobile_money_deposit']);
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await shownIds(page, 4)).toEqual([deposit, back, large, small]);
    const several = new URL(page.url()).searchParams;
    expect(several.get('status')).toBe('pending,completed');
    expect(several.get('transaction_type')).toBe('mobile_money_deposit,transfer');

    // The provider's reference, exactly.
    // A deposit's record does not show it; the ledger's row has it.
    const reference = await engine.pool.oneFirst(
      sql.type(z.object({ ref: z.string() }))`
        SELECT provider_reference AS ref FROM transactions WHERE id = ${deposit}`,
    );
    await page.goto(`${engine.url}/dashboard/transactions`);
    await shownIds(page, 4);
    await page.getByLabel('Provider reference').fill(reference);
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await shownIds(page, 1)).toEqual([deposit]);

    // A filter the API refuses: its 422 detail, shown as it said it, and no rows.
    const bad = await api.get('/api/v1/transactions/?amount%5Bgte%5D=12.345&per_page=20');
    expect(bad.status).toBe(422);
    await page.goto(`${engine.url}/dashboard/transactions?amount%5Bgte%5D=12.345`);
    await page.getByRole('alert').filter({ hasText: bad.body.detail }).waitFor();
    expect(await page.locator('tr[data-transaction]').count()).toBe(0);
    expect(await page.getByLabel('Amount at least').inputValue()).toBe('12.345');

    // At a phone's width the filters wrap: no sideways scrolling.
    await page.goto(`${engine.url}/dashboard/transactions`);
    await shownIds(page, 4);
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth - innerWidth')).toBe(
      0,
    );
    expect(errors).toEqual([]);
  });

  it('sends metadata filters as metadata[KEY]=VALUE and shows what the API answers', async () => {
    const { page, errors } = await signedIn();
    await page.goto(`${engine.url}/dashboard/transactions`);
    await shownIds(page, 4);
    await page.getByLabel('Metadata key 1').fill('order');
    await page.getByLabel('Metadata value 1').fill('A-1');
    await page.getByRole('button', { name: 'Add a metadata pair' }).click();
    await page.getByLabel('Metadata key 2').fill('channel');
    await page.getByLabel('Metadata value 2').fill('web shop');
    // The address changes before the page asks the API: wait for the request itself.
    const asked = page.waitForRequest((r) => {
      const url = new URL(r.url());
      return url.pathname.endsWith('/v1/transactions/') && url.searchParams.has('metadata[order]');
    });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/metadata/);
    expect(new URL(page.url()).search).toBe(
      '?metadata%5Border%5D=A-1&metadata%5Bchannel%5D=web+shop',
    );
    const sent = new URL((await asked).url()).searchParams;
    expect(sent.get('metadata[order]')).toBe('A-1');
    expect(sent.get('metadata[channel]')).toBe('web shop');
    // The rows are the API's answer to that very query.
    const answer = await api.get<{ data: { id: string }[]; total: number }>(
      `/api/v1/transactions/?${sent.toString()}`,
    );
    expect(answer.status).toBe(200);
    const ids = answer.body.data.map((t) => t.id);
    expect(await shownIds(page, answer.body.total)).toEqual(ids);
    // The pairs come back into the form from the address; one removed, the other still sent.
    await page.reload();
    expect(await page.getByLabel('Metadata value 2').inputValue()).toBe('web shop');
    await page.getByRole('button', { name: 'Remove metadata pair 1' }).click();
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((url) => !url.search.includes('order'));
    expect(new URL(page.url()).search).toBe('?metadata%5Bchannel%5D=web+shop');
    expect(errors).toEqual([]);
  });

  it('exports the filtered transactions as the API’s CSV through the session', async () => {
    const { page, errors } = await signedIn();
    await page.goto(
      `${engine.url}/dashboard/transactions?transaction_type=transfer&wallet_id=${walletA}`,
    );
    expect(await shownIds(page, 3)).toEqual([back, large, small]);
    const file = await downloaded(page, () =>
      page.getByRole('button', { name: 'Export CSV' }).click(),
    );
    expect(file.suggestedFilename()).toBe('transactions.csv');
    const text = await readFile(await file.path(), 'utf8');
    const [header, ...rows] = parseCsv(text);
    expect(header!.join(',')).toBe(EXPORT_HEADER);
    // The filters shown, newest first, each row the API's record.
    expect(rows.map((r) => r[0])).toEqual([back, large, small]);
    const listed = (
      await api.get(`/api/v1/transactions/?transaction_type=transfer&wallet_id=${walletA}`)
    ).body.data as { id: string; amount: number; wallet_id: string; status: string }[];
    for (const [i, row] of rows.entries()) {
      const record = listed[i]!;
      expect({
        id: row[0],
        type: row[2],
        status: row[3],
        amount: Number(row[4]),
        wallet: row[8],
        metadata: JSON.parse(row[12]!),
      }).toEqual({
        id: record.id,
        type: 'transfer',
        status: record.status,
        amount: record.amount,
        wallet: record.wallet_id,
        metadata: {},
      });
    }
    // The same CSV as the public route answers to the application's keys.
    const direct = await api.get(
      `/api/v1/transactions/export?transaction_type=transfer&wallet_id=${walletA}`,
    );
    expect(direct.body).toBe(text);

    // A refused export shows the API's detail and downloads nothing.
    await page.goto(`${engine.url}/dashboard/transactions?created%5Bgte%5D=2026-02-30`);
    const refused = await api.get('/api/v1/transactions/export?created%5Bgte%5D=2026-02-30');
    expect(refused.status).toBe(422);
    await page.getByRole('alert').filter({ hasText: refused.body.detail }).first().waitFor();
    await page.getByRole('button', { name: 'Export CSV' }).click();
    await page.getByRole('alert').filter({ hasText: refused.body.detail }).nth(1).waitFor();

    // The dashboard's route opens only to a session: no cookie, no CSV.
    const anonymous = await fetch(`${engine.url}/dashboard/api/test/v1/transactions/export`);
    expect(anonymous.status).toBe(401);
    expect(errors).toEqual([]);
  });

  it('shows a wallet’s statement over a period, its balances the API’s, and its CSV', async () => {
    const { page, requests, errors } = await signedIn();
    await page.goto(`${engine.url}/dashboard/users/${userA}`);
    await page.getByRole('link', { name: 'Statement' }).click();
    await page.getByRole('heading', { name: 'Statement' }).waitFor();
    // By default the last 30 days, today included.
    const today = day(Date.now());
    expect(await page.getByLabel('From (UTC)').inputValue()).toBe(day(Date.now() - 30 * DAY_MS));
    expect(await page.getByLabel('To, included (UTC)').inputValue()).toBe(today);

    const figure = (label: string) => page.locator(`dd[data-figure="${label}"]`).innerText();
    const matches = async () => {
      await page.locator('dd[data-figure="Closing balance"]').waitFor();
      const sent = lastQuery(requests, '/statement');
      sent.delete('per_page');
      const s = (await api.get(`/api/v1/wallets/${walletA}/statement?${sent.toString()}`)).body;
      expect(await figure('Opening balance')).toBe(amount(s.opening_balance, s.currency));
      expect(await figure('Credits')).toBe(amount(s.total_credits, s.currency));
      expect(await figure('Debits')).toBe(amount(s.total_debits, s.currency));
      expect(await figure('Closing balance')).toBe(amount(s.closing_balance, s.currency));
      await page.getByText(`${s.total} entries, oldest first`).waitFor();
      expect(await page.locator('tr[data-entry]').count()).toBe(s.entries.length);
      return s;
    };
    const s = await matches();
    // The wallet's whole life so far: from nothing to what it holds now.
    const wallet = (await api.get(`/api/v1/wallets/${userA}/`)).body;
    expect(s.opening_balance).toBe(0);
    expect(s.closing_balance).toBe(wallet.balance);
    expect(s.total_debits).toBeGreaterThanOrEqual(52.5);
    expect(s.total).toBeGreaterThanOrEqual(5);
    const small12 = page.locator(`tr[data-entry="${small}"] td.num`).first();
    expect(await small12.innerText()).toBe('-12.50');

    // Its CSV: the same window, every entry, the running balance ending at the closing one.
    const file = await downloaded(page, () =>
      page.getByRole('button', { name: 'Download CSV' }).click(),
    );
    const [header, ...rows] = parseCsv(await readFile(await file.path(), 'utf8'));
    expect(header!.join(',')).toBe(STATEMENT_HEADER);
    expect(rows).toHaveLength(s.total);
    expect(rows.map((r) => r[0])).toEqual(expect.arrayContaining([small, large, back, deposit]));
    expect(Number(rows.at(-1)![4])).toBe(s.closing_balance);

    // A period after today: nothing moves, and it opens on what the wallet holds.
    const tomorrow = day(Date.now() + DAY_MS);
    await page.getByLabel('From (UTC)').fill(tomorrow);
    await page.getByLabel('To, included (UTC)').fill(tomorrow);
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL((url) => url.search.includes(`from=${tomorrow}`));
    await page.getByText('No entries in this period.').waitFor();
    const later = await matches();
    expect(later.opening_balance).toBe(wallet.balance);
    expect(later.total).toBe(0);
    // The address holds the period: a reload shows it again.
    await page.reload();
    expect(await page.getByLabel('From (UTC)').inputValue()).toBe(tomorrow);
    await matches();

    // A period ending before it starts: the API's detail.
    await page.getByLabel('From (UTC)').fill(tomorrow);
    await page.getByLabel('To, included (UTC)').fill(day(Date.now() - 5 * DAY_MS));
    await page.getByRole('button', { name: 'Show' }).click();
    const sent = new URLSearchParams({ from: tomorrow, to: day(Date.now() - 4 * DAY_MS) });
    const refused = await api.get(`/api/v1/wallets/${walletA}/statement?${sent.toString()}`);
    expect(refused.status).toBe(422);
    await page.getByRole('alert').filter({ hasText: refused.body.detail }).waitFor();

    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${engine.url}/dashboard/wallets/${walletA}/statement`);
    await page.locator('dd[data-figure="Closing balance"]').waitFor();
    expect(await page.evaluate<number>('document.documentElement.scrollWidth - innerWidth')).toBe(
      0,
    );
    expect(errors).toEqual([]);
  });

  it('searches users through the API’s q and shows each record’s metadata', async () => {
    const { page, requests, errors } = await signedIn();
    await goTo(page, 'Users and wallets');
    await page.getByRole('link', { name: 'Isatu Koroma' }).waitFor();
    // Your own user id, in another letter case: the API's q, over every user.
    await page.getByLabel('Search').fill('crm-777');
    await page.getByRole('link', { name: 'Isatu Koroma' }).waitFor({ state: 'detached' });
    expect(lastQuery(requests, '/v1/users/').get('q')).toBe('crm-777');
    const found = await api.get<{ data: { name: string }[] }>('/api/v1/users/?q=crm-777');
    expect(found.body.data.map((u) => u.name)).toEqual(['Fatmata Bangura']);
    expect(await page.locator('tbody tr').count()).toBe(1);
    // The address keeps the search: a reload shows the same users.
    await page.waitForURL((url) => url.search === '?q=crm-777');
    await page.reload();
    await page.getByRole('link', { name: 'Fatmata Bangura' }).waitFor();
    expect(await page.getByLabel('Search').inputValue()).toBe('crm-777');
    expect(await page.locator('tbody tr').count()).toBe(1);
    // Part of a phone number.
    await page.getByLabel('Search').fill('7999');
    await page.getByRole('link', { name: 'Isatu Koroma' }).waitFor();
    await page.getByRole('link', { name: 'Fatmata Bangura' }).waitFor({ state: 'detached' });
    expect(lastQuery(requests, '/v1/users/').get('q')).toBe('7999');

    // The user's and the wallet's metadata; a transaction without any shows none.
    await page.getByLabel('Search').fill('fatmata');
    await page.getByRole('link', { name: 'Fatmata Bangura' }).click();
    const lists = page.locator('[data-metadata]');
    await lists.nth(1).waitFor();
    expect(await lists.nth(0).innerText()).toBe('crm_id: C-42\nsegment: retail');
    expect(await lists.nth(1).innerText()).toBe('tier: gold');
    await page.locator(`tr[data-transaction="${small}"] a`).first().click();
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
    await page.locator('dt', { hasText: 'Metadata' }).waitFor();
    expect(await page.locator('dt:has-text("Metadata") + dd').innerText()).toBe('None');
    expect(errors).toEqual([]);
  });
});
