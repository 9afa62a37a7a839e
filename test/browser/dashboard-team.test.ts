import type { Browser, Page } from 'playwright-core';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DashboardRole } from '../../src/domain/dashboard-access';
import { goTo, launchBrowser, signedInDashboard } from '../support/browser';
import { dashboardAccount, nextCode, PASSWORD } from '../support/dashboard';
import { createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

// The first launch unpacks Chromium into /tmp; a slow machine needs the time.
jest.setTimeout(240_000);

/**
 * Team access in the dashboard (docs/dashboard.md, Roles, Team, Two-step sign-in): each role
 * sees only what it may do; two-step sign-in turned on and used; an invitation accepted; an
 * action that wants a fresh sign-in asks for the password and then goes through.
 */
let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => browser?.close());

const engine = useTestEngine({ env: { RATE_LIMIT_DASHBOARD_ACCOUNT: '1000' } });
const { app, api } = useTestApp(engine);
let depositId: string;

beforeAll(async () => {
  const { walletId } = await createUserWithWallet(api);
  const res = await api.post('/api/v1/transactions/wallet/card-deposit', {
    wallet_id: walletId,
    amount: 25,
    payment_method_id: 'pm_card_visa',
  });
  expect(res.body.status).toBe('completed');
  depositId = res.body.id as string;
});

const base = () => engine.url;

// The browser keeps one cookie store: a test that failed before signing out must not sign in
// the next one as its account.
beforeEach(async () => {
  await engine.pool.query(sql.unsafe`UPDATE dashboard_sessions SET revoked_at = now()`);
});

async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Sign out' }).click();
  // Pages stay open: with the package's single process, closing the last one ends the browser.
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
}

/** What each role must see (true) or not (false), page by page. */
const SEES: Record<DashboardRole, Record<string, boolean>> = {
  owner: { generate: true, subscribe: true, refund: true, invite: true, runs: true },
  developer: { generate: true, subscribe: true, refund: false, invite: false, runs: false },
  operator: { generate: false, subscribe: false, refund: true, invite: false, runs: false },
  viewer: { generate: false, subscribe: false, refund: false, invite: false, runs: false },
};

describe('roles in the dashboard', () => {
  it.each(Object.keys(SEES) as DashboardRole[])(
    'shows a %s only what the role may do',
    async (role) => {
      const email = await dashboardAccount(engine.pool, app.id, role);
      const { page, errors } = await signedInDashboard(browser, base(), {
        email,
        password: PASSWORD,
      });
      await page.locator('header .role', { hasText: role }).waitFor();
      const seen: Record<string, boolean> = {};

      await goTo(page, 'Credentials');
      await page.getByRole('heading', { name: /^Credentials/ }).waitFor();
      await page.locator('tr[data-credential]').first().waitFor();
      seen.generate = await page.getByRole('button', { name: 'Generate a key' }).isVisible();

      await goTo(page, 'Webhooks');
      await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
      seen.subscribe = await page.getByRole('button', { name: 'New subscription' }).isVisible();

      await page.goto(`${base()}/dashboard/transactions/${depositId}`);
      await page.locator('[data-amount-refunded]').waitFor();
      seen.refund = await page.getByRole('heading', { name: 'Refund' }).isVisible();

      await goTo(page, 'Reconciliation');
      await page.getByRole('heading', { name: 'Reconciliation' }).waitFor();
      seen.runs = await page.getByRole('button', { name: 'Start the run' }).isVisible();

      await goTo(page, 'Team');
      await page.locator('tr[data-member]', { hasText: email }).waitFor();
      seen.invite = await page.getByRole('heading', { name: 'Invite' }).isVisible();
      expect(await page.getByRole('combobox', { name: `Role of ${email}` }).count()).toBe(
        SEES[role].invite ? 1 : 0,
      );

      expect(seen).toEqual(SEES[role]);
      expect(errors).toEqual([]);
      await signOut(page);
    },
  );
});

describe('two-step sign-in in the dashboard', () => {
  it('turns it on with the QR code and secret, then signs in with a code', async () => {
    const email = await dashboardAccount(engine.pool, app.id, 'viewer');
    const first = await signedInDashboard(browser, base(), { email, password: PASSWORD });
    const { page } = first;
    await goTo(page, 'Two-step sign-in');
    await page.getByRole('button', { name: 'Set up two-step sign-in' }).click();
    const qr = page.getByRole('img', { name: 'QR code of the two-step secret' });
    await qr.waitFor();
    expect(await qr.getAttribute('src')).toMatch(/^data:image\/png;base64,/);
    const secret = await page.getByLabel('Secret').inputValue();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    await expect(page.locator('code.uri').textContent()).resolves.toMatch(/^otpauth:\/\/totp\//);
    await page.getByLabel('Code').fill(await nextCode(secret));
    await page.getByRole('button', { name: 'Turn on' }).click();
    const codes = page.locator('.recovery-codes li');
    await codes.first().waitFor();
    expect(await codes.count()).toBe(10);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByText('Two-step sign-in is on').waitFor();
    expect(
      await engine.pool.oneFirst(sql.type(z.object({ on: z.boolean() }))`
        SELECT totp_enabled_at IS NOT NULL AS on FROM dashboard_users WHERE email = ${email}`),
    ).toBe(true);
    await signOut(page);

    const again = await browser.newPage({ locale: 'en-US' });
    await again.goto(`${base()}/dashboard/`);
    await again.getByLabel('Email').fill(email);
    await again.getByLabel('Password').fill(PASSWORD);
    await again.getByRole('button', { name: 'Sign in' }).click();
    await again.getByRole('heading', { name: 'Two-step sign-in' }).waitFor();
    await again.getByLabel('Code').fill('000000');
    await again.getByRole('button', { name: 'Continue' }).click();
    await again.getByRole('alert').filter({ hasText: 'Wrong or used code' }).waitFor();
    await again.getByLabel('Code').fill(await nextCode(secret));
    await again.getByRole('button', { name: 'Continue' }).click();
    await again.locator('header .who', { hasText: email }).waitFor();
    await signOut(again);
  });
});

describe('team and fresh sign-in in the dashboard', () => {
  it('invites a member who joins by the link; a stale session confirms the password before a new key', async () => {
    const ownerEmail = await dashboardAccount(engine.pool, app.id, 'owner');
    const { page } = await signedInDashboard(browser, base(), {
      email: ownerEmail,
      password: PASSWORD,
    });
    await goTo(page, 'Team');
    const invited = `joiner-${Date.now()}@team.test`;
    const form = page.getByRole('form', { name: 'Invite' });
    await form.getByLabel('Email').fill(invited);
    await form.getByLabel('Role').selectOption('developer');
    await form.getByRole('button', { name: 'Invite' }).click();
    const link = await page.getByLabel('Invitation link').inputValue();
    expect(link).toMatch(new RegExp(`^${base()}/dashboard/invitations/[A-Za-z0-9_-]{43}$`));
    await page.locator('[data-invitation]', { hasText: invited }).waitFor();

    // The session grows stale: a new key asks for the password first, then is made.
    await engine.pool.query(sql.unsafe`
      UPDATE dashboard_sessions s SET confirmed_at = now() - interval '6 minutes'
      FROM dashboard_users u WHERE u.id = s.dashboard_user_id AND u.email = ${ownerEmail}`);
    const keys = () =>
      engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM credentials WHERE application_id = ${app.id}`);
    const before = await keys();
    await goTo(page, 'Credentials');
    await page.getByRole('button', { name: 'Generate a key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Confirm it is you' });
    await dialog.waitFor();
    expect(await keys()).toBe(before);
    await dialog.getByLabel('Password').fill(PASSWORD);
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await page.getByText('Copy the secret key now').waitFor();
    expect(await dialog.count()).toBe(0);
    expect(await keys()).toBe(before + 1);
    await signOut(page);

    const joiner = await browser.newPage({ locale: 'en-US' });
    await joiner.goto(link);
    await joiner.getByRole('heading', { name: 'Join a team' }).waitFor();
    await joiner.getByText(`invites ${invited} as developer`).waitFor();
    await joiner.getByLabel(/Choose a password/).fill(PASSWORD);
    await joiner.getByRole('button', { name: 'Join' }).click();
    await joiner.locator('header .who', { hasText: invited }).waitFor();
    await joiner.locator('header .role', { hasText: 'developer' }).waitFor();
    expect(
      await engine.pool.oneFirst(sql.type(z.object({ role: z.string() }))`
        SELECT role FROM dashboard_users WHERE email = ${invited}`),
    ).toBe('developer');
    await signOut(joiner);
  });
});
