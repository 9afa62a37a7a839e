import type { Browser, Page } from 'playwright-core';

/**
 * Headless Chromium (`@sparticuz/chromium`, driven by `playwright-core`, both npm packages).
 * The first launch unpacks it into /tmp, so give the file a long timeout; close it in afterAll.
 */
export async function launchBrowser(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  const { default: Chromium } = await import('@sparticuz/chromium');
  return chromium.launch({
    executablePath: await Chromium.executablePath(),
    args: Chromium.args,
    headless: true,
  });
}

export type DashboardPage = { page: Page; requests: string[]; errors: string[] };

/**
 * A dashboard page at `baseUrl`, signed in as `account`, recording the URLs of its requests
 * (those `record` keeps) and its console errors. Pages stay open until the browser closes
 * (with the package's --single-process, closing the last one ends it).
 */
export async function signedInDashboard(
  browser: Browser,
  baseUrl: string,
  account: { email: string; password: string },
  record: (url: string) => boolean = () => true,
): Promise<DashboardPage> {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 }, locale: 'en-US' });
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (request) => {
    if (record(request.url())) requests.push(request.url());
  });
  page.on('console', (message) => {
    // A refused API call is shown on the page; the browser also logs it as a resource error.
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) {
      errors.push(message.text());
    }
  });
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${baseUrl}/dashboard/`);
  // The package's single process keeps one cookie store for every page: an earlier page's
  // session may open this one already.
  const signIn = page.getByRole('heading', { name: 'Sign in' });
  await signIn.or(page.getByRole('heading', { name: 'Overview' })).waitFor();
  if (await signIn.isVisible()) {
    await page.getByLabel('Email').fill(account.email);
    await page.getByLabel('Password').fill(account.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }
  await page.locator('header .who', { hasText: account.email }).waitFor();
  return { page, requests, errors };
}

/** Follows the dashboard's navigation link `name`. */
export const goTo = (page: Page, name: string) =>
  page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click();
