import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../support/browser';
import { useTestApp, useTestEngine } from '../support/hooks';

// The first launch unpacks Chromium into /tmp; a slow machine needs the time.
jest.setTimeout(240_000);

// Before the engine's hooks, so that the browser and its pages close before the engine does.
let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => browser?.close());

const engine = useTestEngine();
const { app } = useTestApp(engine);

/**
 * Opens /docs, recording every request the page makes and every console error. Pages stay open
 * until the browser closes: with the package's --single-process, closing the last page ends it.
 */
async function openDocs(): Promise<{ page: Page; requests: string[]; errors: string[] }> {
  const page = await browser.newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${engine.url}/docs`);
  return { page, requests, errors };
}

const TRANSFER = '/api/v1/transactions/wallet/transfer';

describe('the API reference page', () => {
  it('renders the operations from the OpenAPI document, with a request body schema, offline', async () => {
    const { page, requests, errors } = await openDocs();
    const transfer = page.locator(`.opblock-post:has([data-path="${TRANSFER}"])`);
    await transfer.first().waitFor({ state: 'visible', timeout: 60_000 });
    await page.getByText('Wallet and payments engine').first().waitFor();

    await transfer.locator('.opblock-summary').first().click();
    const body = transfer.locator('.opblock-section-request-body');
    await body.waitFor({ state: 'visible' });
    await body.getByText('Schema', { exact: true }).click();
    for (const field of ['from_wallet_id', 'to_wallet_id', 'amount', 'description']) {
      await body.getByText(field, { exact: true }).first().waitFor({ state: 'visible' });
    }
    const documented = await transfer
      .locator('.responses-table .response-col_status')
      .allInnerTexts();
    expect(documented.map((s) => s.trim())).toEqual(
      expect.arrayContaining(['200', '400', '401', '413', '422', '429']),
    );

    const origin = new URL(engine.url).origin;
    const outside = requests.filter(
      (url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:'),
    );
    expect(outside).toEqual([]);
    expect(requests).toContain(`${origin}/api/v1/openapi.json`);
    expect(errors).toEqual([]);
  });

  it('tries a call with Test Mode keys entered through Authorize', async () => {
    const { page, errors } = await openDocs();
    await page.locator('.btn.authorize').first().click();
    const dialog = page.locator('.dialog-ux');
    await dialog.waitFor({ state: 'visible' });
    const credentials: [string, string][] = [
      ['ApiKey', app.credentials.test.apiKey],
      ['SecretKey', app.credentials.test.secretKey],
    ];
    for (const [scheme, value] of credentials) {
      const section = dialog.locator('.auth-container').filter({
        has: page.locator('h4 code', { hasText: new RegExp(`^${scheme}$`) }),
      });
      await section.locator('input').fill(value);
      await section.getByRole('button', { name: 'Apply credentials' }).click();
      await section.getByRole('button', { name: 'Remove authorization' }).waitFor();
    }
    await dialog.locator('button.btn-done').first().click();

    const list = page.locator('.opblock-get:has([data-path="/api/v1/users/"])');
    await list.locator('.opblock-summary').first().click();
    await list.getByRole('button', { name: 'Execute' }).click();
    const status = list.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor({ state: 'visible' });
    expect((await status.innerText()).trim()).toBe('200');
    expect(await list.locator('.live-responses-table').innerText()).toContain('"total_pages"');
    expect(errors).toEqual([]);
  });
});
