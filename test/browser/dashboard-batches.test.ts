import type { Browser, Page } from 'playwright-core';
import { sql } from 'slonik';
import { z } from 'zod';
import { updateApplication } from '../../src/db/applications';
import { createDashboardAccount } from '../../src/db/dashboard-accounts';
import { goTo, launchBrowser, signedInDashboard } from '../support/browser';
import { assertLedgerInvariant, balanceOf } from '../support/database';
import { createFundedWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { awaitRoomInWindow } from '../support/rate-limit';
import { pollUntil } from '../support/wait';

// The first launch unpacks Chromium into /tmp; a slow machine needs the time.
jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery staple';
const EMAIL = 'batches@merchant.test';
const BATCHES = '/api/v1/batches';

// Before the engine's hooks, so that the browser and its pages close before the engine does.
let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => browser?.close());

// A batch's page reads it again every second while it runs: above the per-minute default.
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

const signedIn = () => signedInDashboard(browser, engine.url, { email: EMAIL, password: PASSWORD });

let keys = 0;
async function submit(body: unknown): Promise<string> {
  const res = await api.post(BATCHES, body, { 'Idempotency-Key': `dash-batch-${(keys += 1)}` });
  expect(res.status).toBe(202);
  return res.body.id as string;
}

const batchCount = () =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM batches WHERE application_id = ${app.id}`);

const transfersFrom = (walletId: string) =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM transactions
    WHERE transaction_type = 'transfer' AND wallet_id = ${walletId}`);

const completedFrom = (walletId: string) =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM transactions
    WHERE transaction_type = 'transfer' AND status = 'completed' AND wallet_id = ${walletId}`);

/** The rows the item table shows: index, status and error text. */
async function shownItems(page: Page) {
  const rows = await page.locator('table[data-items] tbody tr').all();
  return Promise.all(
    rows.map(async (row) => {
      const cells = await row.locator('td').allInnerTexts();
      return [Number(cells[0]), cells[2], cells[4]] as const;
    }),
  );
}

/** A CSV file handed to the page's file input. */
const chooseFile = (page: Page, name: string, text: string) =>
  page.getByLabel('Batch file').setInputFiles({
    name,
    mimeType: 'text/csv',
    buffer: Buffer.from(text, 'utf8'),
  });

describe('bulk payments on the dashboard', () => {
  it('cancels a processing batch from its page: the items not started end canceled', async () => {
    const from = await createFundedWallet(api, engine.pool, 10_000n);
    const to = await createFundedWallet(api, engine.pool, 0n);
    // Two transfers a minute: the batch runs two items and waits for the next window.
    await updateApplication(engine.pool, app.id, { rateLimits: { transfers: 2 } });
    try {
      await awaitRoomInWindow(engine.pool, 40);
      const id = await submit({
        kind: 'transfer',
        items: Array.from({ length: 6 }, (_, i) => ({
          from_wallet_id: from.walletId,
          to_wallet_id: to.walletId,
          amount: 1,
          reference: `held-${i}`,
        })),
      });
      // Its first two transfers are paid; the rest wait for the next minute.
      expect(
        await pollUntil(
          () => completedFrom(from.walletId),
          (n) => n === 2,
        ),
      ).toBe(2);

      const { page, requests, errors } = await signedIn();
      await goTo(page, 'Batches');
      await page.getByRole('heading', { name: 'Batches' }).waitFor();
      const row = page.locator(`tr[data-batch="${id}"]`);
      expect(await row.locator('.status').innerText()).toBe('processing');
      await row.getByRole('link').click();
      await page.getByRole('heading', { name: 'Batch', exact: true }).waitFor();
      // The batch records its items' ends in groups: the two paid may not be counted yet.
      expect(await page.locator('progress').getAttribute('data-progress')).toMatch(/^[0-2]\/6$/);

      await page.getByRole('button', { name: 'Cancel the items not started' }).click();
      await page.locator('dd[data-batch-status]', { hasText: 'canceled' }).waitFor();
      expect(await page.locator('progress').getAttribute('data-progress')).toBe('6/6');
      expect(await page.getByRole('button', { name: 'Cancel the items not started' }).count()).toBe(
        0,
      );
      expect(requests.some((u) => u.endsWith(`/dashboard/api/test/v1/batches/${id}/cancel`))).toBe(
        true,
      );
      await page.getByLabel('Item status').selectOption('canceled');
      await page.locator('table[data-items] tr[data-item="0"]').waitFor({ state: 'detached' });
      expect(await shownItems(page)).toEqual([
        [2, 'canceled', ''],
        [3, 'canceled', ''],
        [4, 'canceled', ''],
        [5, 'canceled', ''],
      ]);
      expect(errors).toEqual([]);

      expect((await api.get(`${BATCHES}/${id}`)).body).toMatchObject({
        status: 'canceled',
        succeeded: 2,
        failed: 0,
        canceled: 4,
      });
      expect(await balanceOf(engine.pool, to.walletId)).toBe(200n);
      expect(await balanceOf(engine.pool, from.walletId)).toBe(9_800n);
      expect(await transfersFrom(from.walletId)).toBe(2);
    } finally {
      await updateApplication(engine.pool, app.id, { rateLimits: { transfers: 100_000 } });
    }
    await assertLedgerInvariant(engine.pool);
  });

  it('shows a batch’s progress and its items by status, a cursor page at a time', async () => {
    const from = await createFundedWallet(api, engine.pool, 10_000n);
    const empty = await createFundedWallet(api, engine.pool, 0n);
    const to = await createFundedWallet(api, engine.pool, 0n);
    // Twenty-five items: one from an empty wallet declines as its single transfer would.
    const id = await submit({
      kind: 'transfer',
      items: Array.from({ length: 25 }, (_, i) => ({
        from_wallet_id: i === 3 ? empty.walletId : from.walletId,
        to_wallet_id: to.walletId,
        amount: 1,
      })),
    });
    await pollUntil(
      () => api.get(`${BATCHES}/${id}`),
      (reply) => reply.body.status !== 'processing',
      { timeoutMs: 60_000 },
    );

    const { page, requests, errors } = await signedIn();
    await page.goto(`${engine.url}/dashboard/batches`);
    const row = page.locator(`tr[data-batch="${id}"]`);
    await row.waitFor();
    expect(await row.locator('td').allInnerTexts()).toEqual([
      expect.any(String),
      'partially_failed',
      'Transfers',
      '25',
      '24',
      '1',
      '0',
    ]);
    await row.getByRole('link').click();
    await page.locator('dd[data-batch-status]', { hasText: 'partially_failed' }).waitFor();
    expect(await page.locator('progress').getAttribute('data-progress')).toBe('25/25');
    expect(await page.getByRole('button', { name: 'Cancel the items not started' }).count()).toBe(
      0,
    );

    // Every item, twenty a page: the next page starts after the last index shown.
    await page.locator('table[data-items] tr[data-item="19"]').waitFor();
    expect((await shownItems(page)).map(([index]) => index)).toEqual(
      Array.from({ length: 20 }, (_, i) => i),
    );
    await page.getByRole('navigation', { name: 'Item pages' }).getByText('Next').click();
    await page.locator('table[data-items] tr[data-item="24"]').waitFor();
    expect((await shownItems(page)).map(([index]) => index)).toEqual([20, 21, 22, 23, 24]);
    expect(requests.some((u) => u.includes(`/items?`) && u.includes('starting_after=19'))).toBe(
      true,
    );
    await page.getByRole('navigation', { name: 'Item pages' }).getByText('Previous').click();
    await page.locator('table[data-items] tr[data-item="0"]').waitFor();

    await page.getByLabel('Item status').selectOption('failed');
    await page.locator('table[data-items] tr[data-item="0"]').waitFor({ state: 'detached' });
    expect(await shownItems(page)).toEqual([[3, 'failed', '400: Insufficient funds']]);
    await page.getByLabel('Item status').selectOption('succeeded');
    await page.locator('table[data-items] tr[data-item="0"]').waitFor();
    const succeeded = await shownItems(page);
    expect(succeeded).toHaveLength(20);
    expect(succeeded.every(([index, status]) => index !== 3 && status === 'succeeded')).toBe(true);
    expect(errors).toEqual([]);

    expect(await balanceOf(engine.pool, to.walletId)).toBe(2_400n);
    expect(await balanceOf(engine.pool, from.walletId)).toBe(7_600n);
    expect(await balanceOf(engine.pool, empty.walletId)).toBe(0n);
    await assertLedgerInvariant(engine.pool);
  });

  it('checks a CSV file row by row and sends nothing while a row is wrong; a good file completes', async () => {
    const from = await createFundedWallet(api, engine.pool, 10_000n);
    const a = await createFundedWallet(api, engine.pool, 0n);
    const b = await createFundedWallet(api, engine.pool, 0n);
    const before = await batchCount();
    const { page, requests, errors } = await signedIn();
    await goTo(page, 'Batches');
    await page.getByRole('heading', { name: 'New batch from a file' }).waitFor();
    await page.getByLabel('Source wallet').fill(from.walletId);

    const send = page.getByRole('button', { name: 'Send batch' });
    await chooseFile(
      page,
      'bad.csv',
      [
        'to_wallet_id,amount,reference,description',
        `${a.walletId},1.50,r-1,first`,
        `${a.walletId},1.234,r-2,too precise`,
        `,2.00,r-3,no recipient`,
        `${b.walletId},-1,r-4,negative`,
        `${b.walletId},3,${'x'.repeat(101)},long reference`,
        `${b.walletId},3,r-1,same reference`,
      ].join('\n'),
    );
    await page.locator('[data-file-summary]', { hasText: '5 with errors' }).waitFor();
    const problems = (line: number) =>
      page.locator(`tr[data-line="${line}"] [data-row-errors]`).innerText();
    expect(await problems(2)).toBe('');
    expect(await problems(3)).toBe('amount must be a positive number with at most 2 decimals');
    expect(await problems(4)).toBe('to_wallet_id is required');
    expect(await problems(5)).toBe('amount must be a positive number with at most 2 decimals');
    expect(await problems(6)).toBe('reference must be 1 to 100 characters');
    expect(await problems(7)).toBe("reference is the same as line 2's");
    expect(await send.isDisabled()).toBe(true);

    // A description longer than a transfer takes is the API's to judge: its 422 marks the row.
    await chooseFile(
      page,
      'long-description.csv',
      [
        'to_wallet_id,amount,description',
        `${a.walletId},1,fine`,
        `${b.walletId},1,${'d'.repeat(501)}`,
      ].join('\n'),
    );
    await page.locator('[data-file-summary]', { hasText: 'ready to send' }).waitFor();
    await send.click();
    const refusal = page.getByRole('alert').filter({ hasText: 'items[1].description' });
    await refusal.waitFor();
    await page.locator('tr[data-line="3"].differs').waitFor();
    expect(await page.locator('tr[data-line="2"].differs').count()).toBe(0);
    expect(await batchCount()).toBe(before);
    expect(requests.filter((u) => u.endsWith('/dashboard/api/test/v1/batches'))).toHaveLength(1);

    await chooseFile(
      page,
      'good.csv',
      [
        'to_wallet_id,amount,reference,description',
        `${a.walletId},1.50,inv-1,"Invoice 1, March"`,
        `${b.walletId},2.25,inv-2,Invoice 2`,
        `${a.walletId},10,inv-3,`,
      ].join('\r\n'),
    );
    await page.locator('[data-file-summary]', { hasText: '3 transfers, ready to send' }).waitFor();
    const [request] = await Promise.all([
      page.waitForRequest((r) => r.url().endsWith('/v1/batches') && r.method() === 'POST'),
      send.click(),
    ]);
    expect(request.headers()['idempotency-key']).toMatch(/^dashboard-[0-9a-f]{32}$/);
    expect(request.postDataJSON()).toEqual({
      kind: 'transfer',
      items: [
        {
          from_wallet_id: from.walletId,
          to_wallet_id: a.walletId,
          amount: 1.5,
          description: 'Invoice 1, March',
          reference: 'inv-1',
        },
        {
          from_wallet_id: from.walletId,
          to_wallet_id: b.walletId,
          amount: 2.25,
          description: 'Invoice 2',
          reference: 'inv-2',
        },
        { from_wallet_id: from.walletId, to_wallet_id: a.walletId, amount: 10, reference: 'inv-3' },
      ],
    });
    await page.getByRole('heading', { name: 'Batch', exact: true }).waitFor();
    await page.locator('dd[data-batch-status]', { hasText: 'completed' }).waitFor({
      timeout: 60_000,
    });
    expect(await page.locator('[data-counts]').innerText()).toBe(
      '3 of 3 ended: 3 succeeded, 0 failed, 0 canceled',
    );
    const id = new URL(page.url()).pathname.split('/').at(-1)!;
    await page.locator('table[data-items] tr[data-item="2"]').waitFor();
    expect(await shownItems(page)).toEqual([
      [0, 'succeeded', ''],
      [1, 'succeeded', ''],
      [2, 'succeeded', ''],
    ]);
    expect(errors).toEqual([]);

    expect((await api.get(`${BATCHES}/${id}`)).body).toMatchObject({
      id,
      kind: 'transfer',
      atomic: false,
      status: 'completed',
      total: 3,
      succeeded: 3,
    });
    expect(await batchCount()).toBe(before + 1);
    expect(await balanceOf(engine.pool, a.walletId)).toBe(1_150n);
    expect(await balanceOf(engine.pool, b.walletId)).toBe(225n);
    expect(await balanceOf(engine.pool, from.walletId)).toBe(10_000n - 1_375n);
    expect(await transfersFrom(from.walletId)).toBe(3);
    await assertLedgerInvariant(engine.pool);
  });
});
