import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { AddressInfo } from 'node:net';
import { sql } from 'slonik';
import { z } from 'zod';
import { createApp } from '../../src/api/app';
import { SIGN_IN_LOCKOUT_SCOPE } from '../../src/api/dashboard/lockout';
import { clear } from '../../src/db/auth-lockout';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { createProviders } from '../../src/providers';
import { launchBrowser } from '../support/browser';
import { fundWallet } from '../support/database';
import { createUserWithWallet, transfer } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { pollUntil } from '../support/wait';

// The first launch unpacks Chromium into /tmp; a slow machine needs the time.
jest.setTimeout(240_000);

const ROOT = path.resolve(__dirname, '../..');
const PASSWORD = 'correct horse battery staple';
const EMAIL = 'ops@merchant.test';
/** Loopback only: the allowlist below lets 127.0.0.1 through the SSRF guard, nothing else. */
const HOOK = 'http://127.0.0.1:9/hooks/wallet';
const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const SIMULATE = '/api/v1/testing/simulate-mobile-money-webhook';
/** Screenshots for docs/ are written only when asked: `DASHBOARD_SCREENSHOTS=1`. */
const SHOTS = Boolean(process.env.DASHBOARD_SCREENSHOTS);

// Before the engine's hooks, so that the browser and its pages close before the engine does.
let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => browser?.close());

const engine = useTestEngine({ env: { WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32' } });
const { app, api, live } = useTestApp(engine);
let deposit: string;
let walletA: string;
let walletB: string;
let userA: string;

/** The real command line, against the test database; the password on standard input. */
function cli(
  args: string[],
  stdin = '',
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'tools/cli/main.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: engine.config.database.url, LOG_LEVEL: 'silent' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

beforeAll(async () => {
  const a = await createUserWithWallet(api, { name: 'Aminata Kamara', email: 'aminata@x.test' });
  const b = await createUserWithWallet(api, { name: 'Ibrahim Sesay' });
  walletA = a.walletId;
  walletB = b.walletId;
  userA = a.userId;
  await fundWallet(engine.pool, a.walletId, 50_000n);
  await transfer(api, a.walletId, b.walletId, 12.5);
  const paid = await api.post(DEPOSIT, { wallet_id: a.walletId, amount: 10_000 });
  expect(paid.status).toBe(200);
  deposit = paid.body.transaction_id;
  const settled = await api.post(SIMULATE, { transaction_id: deposit, status: 'successful' });
  expect(settled.body.status).toBe('completed');
  await createUserWithWallet(live, { name: 'Live Only Person' });
});

/**
 * A page of its own (its own cookies), recording every request and console error. Pages stay
 * open until the browser closes: with the package's --single-process, closing the last one
 * ends it.
 */
async function openPage(): Promise<{ page: Page; requests: string[]; errors: string[] }> {
  // A locale of its own: this machine's (`en-US@posix`) is no language tag Intl accepts.
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 }, locale: 'en-US' });
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('console', (message) => {
    // A failed API call is shown on the page; the browser also logs it as a resource error.
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) {
      errors.push(message.text());
    }
  });
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('dialog', (dialog) => void dialog.accept());
  await page.context().clearCookies();
  await page.goto(`${engine.url}/dashboard/`);
  return { page, requests, errors };
}

/** Signs in through the form, submitted with the keyboard; the sign-in answer's status. */
async function signIn(page: Page, password = PASSWORD): Promise<number> {
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password').fill(password);
  const [response] = await Promise.all([
    page.waitForResponse(
      (r) => r.url().endsWith('/dashboard/api/session') && r.request().method() === 'POST',
    ),
    page.getByLabel('Password').press('Enter'),
  ]);
  return response.status();
}

async function shot(page: Page, name: string): Promise<void> {
  const png = await page.screenshot({ fullPage: true });
  expect(png.subarray(1, 4).toString()).toBe('PNG');
  if (SHOTS) await page.screenshot({ path: path.join(ROOT, 'docs', name), fullPage: true });
}

/** A major-unit amount of the API as the dashboard writes it: `1,234.50 SLE`. */
const amount = (n: number, currency: string) =>
  `${n.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })} ${currency}`;

const go = (page: Page, name: string) =>
  page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click();

const count = (query: ReturnType<typeof sql.unsafe>) =>
  engine.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM (${query}) q`,
  );

describe('the dashboard', () => {
  it('creates an account from the command line, refusing bad arguments with status 2', async () => {
    const bad = await cli(
      ['dashboard-users', 'create', '--app', app.id, '--email', EMAIL],
      PASSWORD,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--password-stdin is required');
    const short = await cli(
      ['dashboard-users', 'create', '--app', app.id, '--email', EMAIL, '--password-stdin'],
      'short',
    );
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('12 to 1024 characters');

    const made = await cli(
      ['dashboard-users', 'create', '--app', app.id, '--email', EMAIL, '--password-stdin'],
      `${PASSWORD}\n`,
    );
    expect(made.stderr).toBe('');
    expect(made.code).toBe(0);
    const body = JSON.parse(made.stdout);
    expect(body.dashboard_user).toEqual({
      id: expect.any(String),
      application_id: app.id,
      email: EMAIL,
      // The command line makes owners: the first account of a team runs everything.
      role: 'owner',
      created_at: expect.any(String),
    });
    const stored = await engine.pool.one(sql.type(z.object({ password_hash: z.string() }))`
      SELECT password_hash FROM dashboard_users WHERE id = ${body.dashboard_user.id}`);
    expect(stored.password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(stored.password_hash).not.toContain(PASSWORD);

    const again = await cli(
      [
        'dashboard-users',
        'create',
        '--app',
        app.id,
        '--email',
        EMAIL.toUpperCase(),
        '--password-stdin',
      ],
      PASSWORD,
    );
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already exists');
  });

  it('is served by the API from the build: content types, caching, client routes, no session no data', async () => {
    const index = await fetch(`${engine.url}/dashboard/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('content-security-policy')).toContain("default-src 'self'");
    const html = await index.text();
    const script = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${engine.url}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');

    const route = await fetch(`${engine.url}/dashboard/transactions/${deposit}`);
    expect(route.status).toBe(200);
    expect(await route.text()).toBe(html);
    const missing = await fetch(`${engine.url}/dashboard/assets/nothing-here.js`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: 'No such dashboard file' });
    const escape = await fetch(`${engine.url}/dashboard/..%2f..%2fpackage.json`);
    expect(await escape.text()).not.toContain('"devDependencies"');

    const data = await fetch(`${engine.url}/dashboard/api/test/v1/users/`);
    expect(data.status).toBe(401);
    expect(await data.json()).toEqual({ detail: 'Not signed in: sign in to the dashboard' });
    const write = await fetch(`${engine.url}/dashboard/api/test/credentials`, { method: 'POST' });
    expect(write.status).toBe(401);
  });

  it('signs in and walks every page: keys used and revoked, a webhook, a timeline, both modes', async () => {
    const { page, requests, errors } = await openPage();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await signIn(page, 'not the password at all')).toBe(401);
    await page.getByRole('alert').filter({ hasText: 'Wrong email or password' }).waitFor();
    expect(await signIn(page)).toBe(200);
    await page.locator('header .who', { hasText: EMAIL }).waitFor();

    const [cookie] = (await page.context().cookies()).filter((c) => c.name === 'dashboard_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/dashboard' });
    const stored = await count(sql.unsafe`
      SELECT 1 FROM dashboard_sessions s JOIN dashboard_users u ON u.id = s.dashboard_user_id
      WHERE u.email = ${EMAIL} AND s.revoked_at IS NULL`);
    expect(stored).toBe(1);

    // Overview: the very figures of GET /api/v1/analytics/dashboard, and the 14-day chart.
    const figures = (await api.get('/api/v1/analytics/dashboard')).body;
    expect(figures.transaction_count).toBeGreaterThanOrEqual(2);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    const shown = (label: string) => page.locator(`dd[data-figure="${label}"]`).innerText();
    expect(await shown('Total volume')).toBe(amount(figures.total_volume, figures.currency));
    expect(await shown('Transactions')).toBe(String(figures.transaction_count));
    expect(await shown('Total balance')).toBe(amount(figures.total_balance, figures.currency));
    await page.locator('.uplot canvas').first().waitFor({ state: 'visible' });
    expect(await page.locator('figure.chart table.sr-only tbody tr').count()).toBe(14);
    await shot(page, 'dashboard-overview.png');

    // Credentials: generate, use against the API, see last_used, revoke, see 401.
    await go(page, 'Credentials');
    await page.getByRole('button', { name: 'Generate a key' }).click();
    const apiKey = await page.getByLabel('API key').inputValue();
    const secretKey = await page.getByLabel('Secret key').inputValue();
    expect(apiKey).toMatch(/^pk_test_/);
    expect(secretKey).toMatch(/^sk_test_/);
    await shot(page, 'dashboard-credentials.png');
    const withKey = () =>
      fetch(`${engine.url}/api/v1/users/`, {
        headers: { 'api-key': apiKey, 'secret-key': secretKey },
      });
    const used = await withKey();
    expect(used.status).toBe(200);
    expect(((await used.json()) as { total: number }).total).toBe(2);
    await page.getByRole('button', { name: 'Done' }).click();
    await go(page, 'Overview');
    await go(page, 'Credentials');
    const row = page.locator('tr', { hasText: apiKey.slice(0, 12) });
    await row.getByText('active', { exact: true }).waitFor();
    expect(await row.locator('td').nth(2).innerText()).toMatch(/^\d{4}-\d\d-\d\d /);
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByText('revoked', { exact: true }).waitFor();
    const refused = await withKey();
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({
      detail: 'Invalid application credentials: this credential has been revoked',
    });

    // A state-changing request without the CSRF token is refused, and writes nothing.
    const before = await count(
      sql.unsafe`SELECT 1 FROM credentials WHERE application_id = ${app.id}`,
    );
    const forged = await page.evaluate(async () => {
      const res = await fetch('/dashboard/api/test/credentials', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{}',
      });
      return { status: res.status, body: await res.json() };
    });
    expect(forged).toEqual({
      status: 403,
      body: { detail: 'Missing or wrong X-CSRF-Token: reload the dashboard' },
    });
    expect(
      await count(sql.unsafe`SELECT 1 FROM credentials WHERE application_id = ${app.id}`),
    ).toBe(before);

    // Webhooks: the API's detail on a bad URL, then a subscription with its secret shown once.
    await go(page, 'Webhooks');
    await page.getByRole('button', { name: 'New subscription' }).click();
    await page.getByLabel('Endpoint URL').fill('http://user:pass@127.0.0.1/hook');
    await page.getByLabel('transfer.completed').check();
    await page.getByRole('button', { name: 'Create subscription' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'Webhook URL must be a valid http or https URL without credentials' })
      .waitFor();
    await page.getByLabel('Endpoint URL').fill(HOOK);
    await page.getByRole('button', { name: 'Create subscription' }).click();
    const secret = await page.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32,}={0,2}$/);
    let card = page.locator('li.card', { hasText: HOOK });
    await card.waitFor();
    const subscription = await engine.pool.one(
      sql.type(
        z.object({
          id: z.string(),
          mode: z.string(),
          events: z.array(z.string()),
          is_active: z.boolean(),
        }),
      )`SELECT id, mode, events, is_active FROM webhook_subscriptions WHERE application_id = ${app.id}`,
    );
    expect(subscription).toMatchObject({
      mode: 'test',
      events: ['transfer.completed'],
      is_active: true,
    });

    // A payment now: its event and the delivery's attempts (port 9 answers nothing).
    await transfer(api, walletA, walletB, 1);
    const attempts = await pollUntil(
      async () =>
        ((await api.get('/api/v1/events?type=transfer.completed')).body.data[0]?.deliveries[0]
          ?.attempts ?? 0) as number,
      (n) => n > 0,
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(attempts).toBeGreaterThan(0);
    await go(page, 'Overview');
    await go(page, 'Webhooks');
    await page
      .locator('td li', { hasText: subscription.id.slice(0, 8) })
      .getByText(/\d+ attempts?/)
      .waitFor();
    await shot(page, 'dashboard-webhooks.png');

    // The operations: a test send shows its outcome (port 9 answers nothing), a redelivery adds
    // a delivery, each delivery folds out its attempts, a rotation shows the new secret once.
    const ops = page.locator(`li.card[data-subscription="${subscription.id}"]`);
    await ops.getByRole('button', { name: 'Send test' }).click();
    await ops
      .getByRole('status')
      .filter({ hasText: /Test: failed · no answer · \d+ ms · / })
      .waitFor();
    const eventRow = page.locator('tr', { hasText: 'transfer.completed' }).first();
    await eventRow.getByText('History').first().click();
    await eventRow.locator('details.history li').first().waitFor();
    await eventRow.getByRole('button', { name: 'Redeliver' }).click();
    await pollUntil(
      async () =>
        ((await api.get('/api/v1/events?type=transfer.completed')).body.data[0]?.deliveries
          ?.length ?? 0) as number,
      (n) => n === 2,
      { timeoutMs: 10_000, intervalMs: 200 },
    );
    await page
      .locator('tr', { hasText: 'transfer.completed' })
      .first()
      .locator('td ul.plain > li')
      .nth(1)
      .waitFor();
    await ops.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = await pollUntil(
      () => page.getByLabel('Signing secret').inputValue(),
      (value) => value !== secret,
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    const previous = await engine.pool.oneFirst(
      sql.type(
        z.object({ previous_secret_sealed: z.string().nullable() }),
      )`SELECT previous_secret_sealed FROM webhook_subscriptions WHERE id = ${subscription.id}`,
    );
    expect(previous).toMatch(/^v2\./);

    // Edit, disable, delete: each through the API's own route.
    card = page.locator(`li.card[data-subscription="${subscription.id}"]`);
    await card.getByRole('button', { name: 'Edit' }).click();
    await card.getByLabel('deposit.completed').check();
    await card.getByRole('button', { name: 'Save' }).click();
    await page.locator('li.card', { hasText: 'deposit.completed' }).waitFor();
    await card.getByRole('button', { name: 'Disable' }).click();
    await card.getByText('disabled', { exact: true }).waitFor();
    const edited = await engine.pool.one(
      sql.type(
        z.object({ events: z.array(z.string()), is_active: z.boolean() }),
      )`SELECT events, is_active FROM webhook_subscriptions WHERE id = ${subscription.id}`,
    );
    expect({ ...edited, events: [...edited.events].sort() }).toEqual({
      events: ['deposit.completed', 'transfer.completed'],
      is_active: false,
    });
    await card.getByRole('button', { name: 'Delete' }).click();
    await card.waitFor({ state: 'detached' });
    expect(
      await count(sql.unsafe`SELECT 1 FROM webhook_subscriptions WHERE id = ${subscription.id}`),
    ).toBe(0);

    // Transactions: the API's filters, then a transaction's record and timeline.
    await go(page, 'Transactions');
    await page.getByLabel('Type').selectOption('mobile_money_deposit');
    await page.getByLabel('Status').selectOption('completed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('1 transactions').waitFor();
    expect(
      requests.some(
        (url) =>
          url.includes('transaction_type=mobile_money_deposit&') ||
          url.endsWith('transaction_type=mobile_money_deposit'),
      ),
    ).toBe(true);
    await page.locator(`tr[data-transaction="${deposit}"] a`).click();
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
    await page.getByText(deposit, { exact: true }).waitFor();
    for (const step of ['openDeposit', 'completeDeposit']) {
      await page.locator('.steps strong', { hasText: step }).first().waitFor();
    }
    await shot(page, 'dashboard-transaction.png');

    // Users and wallets: the list, a search, a user's wallet and recent transactions.
    await go(page, 'Users and wallets');
    await page.getByRole('link', { name: 'Ibrahim Sesay' }).waitFor();
    await page.getByLabel('Search').fill('aminata');
    await page.getByRole('link', { name: 'Ibrahim Sesay' }).waitFor({ state: 'detached' });
    // The API searched every user, not the page in the browser.
    expect(requests.some((url) => url.includes('/v1/users/?') && url.endsWith('&q=aminata'))).toBe(
      true,
    );
    await page.getByRole('link', { name: 'Aminata Kamara' }).click();
    const wallet = (await api.get(`/api/v1/wallets/${userA}/`)).body;
    await page.locator('dd[data-balance]').waitFor();
    expect(await page.locator('dd[data-balance]').innerText()).toBe(
      amount(wallet.balance, wallet.currency),
    );
    // The deposit and the two transfers of the user's wallet, once the wallet has loaded.
    await page.locator('tr[data-transaction]').nth(2).waitFor();
    expect(await page.locator('tr[data-transaction]').count()).toBe(3);

    // Live Mode: the other half of the application's data, and back.
    await page.getByRole('button', { name: 'Live' }).click();
    await page.getByText('Live Mode.').waitFor();
    await go(page, 'Users and wallets');
    await page.getByRole('link', { name: 'Live Only Person' }).waitFor();
    expect(await page.getByRole('link', { name: 'Aminata Kamara' }).count()).toBe(0);
    await go(page, 'Credentials');
    await page.locator('tbody tr').first().waitFor();
    expect(await page.locator('tbody tr code').allInnerTexts()).toEqual([
      expect.stringMatching(/^pk_live_/),
    ]);
    await page.getByRole('button', { name: 'Test' }).click();
    await page.getByText('Test Mode: sandbox data, no real money.').waitFor();

    // The keyboard alone, and a phone's width without sideways scrolling.
    await page.getByRole('link', { name: 'Transactions' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Transactions' }).waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    for (const name of ['Overview', 'Transactions', 'Webhooks']) {
      await go(page, name);
      await page.getByRole('heading', { name, exact: true }).waitFor();
      const overflow = await page.evaluate<number>(
        'document.documentElement.scrollWidth - innerWidth',
      );
      expect({ name, overflow }).toEqual({ name, overflow: 0 });
    }
    await go(page, 'Overview');
    await page.locator('.uplot canvas').first().waitFor({ state: 'visible' });
    await shot(page, 'dashboard-phone.png');

    // Sign out: the session is revoked, its cookie no longer opens anything.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    const old = await fetch(`${engine.url}/dashboard/api/session`, {
      headers: { cookie: `dashboard_session=${cookie!.value}` },
    });
    expect(old.status).toBe(401);

    const origin = new URL(engine.url).origin;
    expect(
      requests.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:')),
    ).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('revokes every session of an account from the command line', async () => {
    const { page } = await openPage();
    expect(await signIn(page)).toBe(200);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    const revoked = await cli(['dashboard-users', 'revoke-sessions', '--email', EMAIL]);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual({ email: EMAIL, revoked_sessions: 1 });
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    const open = await count(sql.unsafe`
      SELECT 1 FROM dashboard_sessions s JOIN dashboard_users u ON u.id = s.dashboard_user_id
      WHERE u.email = ${EMAIL} AND s.revoked_at IS NULL`);
    expect(open).toBe(0);
  });

  it('marks the session cookie Secure outside local development', async () => {
    const production = { NODE_ENV: 'production', SANDBOX_WEBHOOK_SECRET: 'x'.repeat(32) };
    expect(loadConfig(production).dashboard.secureCookie).toBe(true);
    expect(loadConfig({ NODE_ENV: 'development' }).dashboard.secureCookie).toBe(false);
    expect(
      loadConfig({ NODE_ENV: 'development', DASHBOARD_SECURE_COOKIE: 'true' }).dashboard
        .secureCookie,
    ).toBe(true);
    // The same app as the engine's, with the production setting, on a port of its own.
    const config = {
      ...engine.config,
      dashboard: { ...engine.config.dashboard, secureCookie: true },
    };
    const server = createApp({
      config,
      pool: engine.pool,
      temporal: engine.temporal,
      logger: createLogger('silent'),
      providers: createProviders({ config, pool: engine.pool }),
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/dashboard/api/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
      });
      expect(res.status).toBe(200);
      const cookie = res.headers.get('set-cookie') ?? '';
      expect(cookie.split('; ').slice(1).sort()).toEqual([
        'HttpOnly',
        'Max-Age=43200',
        'Path=/dashboard',
        'SameSite=Strict',
        'Secure',
      ]);
      expect(cookie).toMatch(/^dashboard_session=[A-Za-z0-9_-]{43};/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  // Last: it locks this machine's address out of the dashboard for 15 minutes.
  it('locks an address out after five failed sign-ins, even with the right password then', async () => {
    // The wrong password tried above still counts (a success keeps an address's failures).
    await clear(engine.pool, SIGN_IN_LOCKOUT_SCOPE, '127.0.0.1');
    const { page } = await openPage();
    for (let i = 1; i <= 4; i++) {
      expect(await signIn(page, `wrong password ${i}`)).toBe(401);
      await page.getByRole('alert').filter({ hasText: 'Wrong email or password' }).waitFor();
    }
    expect(await signIn(page, 'wrong password 5')).toBe(429);
    const locked = 'Too many failed authentications from this address, retry in 900 seconds';
    await page.getByRole('alert').filter({ hasText: locked }).waitFor();
    expect(await signIn(page)).toBe(429);
    await page
      .getByRole('alert')
      .filter({ hasText: /Too many failed authentications/ })
      .waitFor();
    expect(await page.getByRole('heading', { name: 'Sign in' }).count()).toBe(1);
    const res = await fetch(`${engine.url}/dashboard/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(res.headers.get('set-cookie')).toBeNull();
    expect(
      await count(
        sql.unsafe`SELECT 1 FROM auth_lockouts WHERE scope = 'dashboard_sign_in' AND locked_until > now()`,
      ),
    ).toBe(1);
  });
});
