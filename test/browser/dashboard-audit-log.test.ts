import path from 'node:path';
import type { Browser } from 'playwright-core';
import { createDashboardAccount } from '../../src/db/dashboard-accounts';
import { goTo, launchBrowser, signedInDashboard } from '../support/browser';
import { useTestApp, useTestEngine } from '../support/hooks';

// The first launch unpacks Chromium into /tmp; a slow machine needs the time.
jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery staple';
const EMAIL = 'auditor@merchant.test';
const SUBSCRIPTIONS = '/api/v1/webhooks/subscriptions';
// Never called: the subscriptions are only made and changed.
const HOOK = 'http://127.0.0.1:9/audit';

// Before the engine's hooks, so that the browser and its pages close before the engine does.
let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => browser?.close());

const engine = useTestEngine({
  env: { RATE_LIMIT_DASHBOARD_ACCOUNT: '1000', WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32' },
});
const { app, api } = useTestApp(engine);

let subscriptionId: string;
beforeAll(async () => {
  const account = await createDashboardAccount(engine.pool, {
    applicationId: app.id,
    email: EMAIL,
    password: PASSWORD,
  });
  expect(account).not.toBeNull();
  // Twenty-two changes by the application's key: more than one page of the log.
  const made = await api.post(SUBSCRIPTIONS, { url: HOOK, events: ['deposit.completed'] });
  expect(made.status).toBe(201);
  subscriptionId = made.body.id as string;
  for (let i = 1; i <= 21; i += 1) {
    const res = await api.request('PATCH', `${SUBSCRIPTIONS}/${subscriptionId}`, {
      body: { url: `${HOOK}/${i}` },
    });
    expect(res.status).toBe(200);
  }
});

const SHOTS = process.env.DASHBOARD_SCREENSHOTS === '1';

describe('the Audit log page', () => {
  it('shows the dashboard’s own change first, pages back through older ones and filters them', async () => {
    const { page, errors } = await signedInDashboard(browser, engine.url, {
      email: EMAIL,
      password: PASSWORD,
    });
    // A change made on the dashboard: a new key, its secret shown once on that page only.
    await goTo(page, 'Credentials');
    await page.getByRole('button', { name: 'Generate a key' }).click();
    const secret = await page.getByLabel('Secret key').inputValue();
    expect(secret).toMatch(/^sk_test_/);

    await goTo(page, 'Audit log');
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    const rows = page.locator('tr[data-audit-entry]');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(20);
    const newest = rows.first();
    expect(await newest.getAttribute('data-action')).toBe('credential.created');
    expect(await newest.locator('td').nth(1).innerText()).toBe(`Dashboard: ${EMAIL}`);
    expect(await page.locator('body').innerText()).not.toContain(secret);
    if (SHOTS) {
      await page.screenshot({
        path: path.join(__dirname, '..', '..', 'docs', 'dashboard-audit-log.png'),
      });
    }
    const firstPage = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.auditEntry));

    // Older: the rest, none of the first page again; Newest goes back.
    const pager = page.getByRole('navigation', { name: 'Audit log paging' });
    await pager.getByRole('button', { name: 'Older' }).click();
    await page.waitForURL(/starting_after=/);
    // The older page has three entries: the first page's fourth row goes once it is shown.
    await rows.nth(3).waitFor({ state: 'detached' });
    const secondPage = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.auditEntry));
    expect(secondPage).toHaveLength(3);
    expect(secondPage.filter((id) => firstPage.includes(id))).toEqual([]);
    expect(await rows.last().getAttribute('data-action')).toBe('webhook_subscription.created');
    expect(await pager.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    await pager.getByRole('button', { name: 'Newest' }).click();
    await page.waitForURL((url) => !url.search.includes('starting_after'));
    await rows.nth(19).waitFor();

    // Filters: by action, then a day range that holds nothing.
    const filters = page.getByRole('form', { name: 'Filters' });
    await filters.getByLabel('Action').fill('credential.created');
    await filters.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/action=credential.created/);
    await rows.nth(1).waitFor({ state: 'detached' });
    expect(await rows.count()).toBe(1);
    expect(await rows.first().getAttribute('data-action')).toBe('credential.created');
    await filters.getByLabel('From (UTC)').fill('2999-01-01');
    await filters.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No entries.').waitFor();
    expect(await rows.count()).toBe(0);

    // A filter the API refuses: its detail shown.
    await page.goto(`${engine.url}/dashboard/audit-log?action=Not-An-Action`);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').innerText()).toContain('action');
    expect(errors).toEqual([]);
  });
});
