import type { Browser, Page } from 'playwright-core';
import { sql } from 'slonik';
import { z } from 'zod';
import { createDashboardAccount } from '../../src/db/dashboard-accounts';
import { goTo, launchBrowser, signedInDashboard } from '../support/browser';
import { assertLedgerInvariant, balanceOf } from '../support/database';
import { createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

/**
 * The dashboard's Reconciliation page (docs/dashboard.md) in Chromium, on the real engine: a
 * settlement file refused row by row, one imported, a run of the real workflow over it, and its
 * exceptions accepted one by one and in bulk.
 */

// The first launch unpacks Chromium into /tmp; a slow machine needs the time.
jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery staple';
const EMAIL = 'recon@merchant.test';
const COUNTED = [
  'matched',
  'missing_internal',
  'missing_external',
  'amount_mismatch',
  'status_mismatch',
  'duplicate',
] as const;
const HEADER = 'provider_reference,booked_at,amount,currency,fee,direction,status';

// Before the engine's hooks, so that the browser and its pages close before the engine does.
let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => browser?.close());

// The page follows a running run by reading the list again: above the per-minute default.
const engine = useTestEngine({ env: { RATE_LIMIT_DASHBOARD_ACCOUNT: '1000' } });
const { app, api } = useTestApp(engine, { currency: 'USD' });

/** A completed card deposit: its id, provider reference and what the provider booked (cents). */
type Deposit = { id: string; reference: string; booked: bigint };

let walletId: string;
const deposits: Record<'matched' | 'amount' | 'missing' | 'status', Deposit> = {} as never;

beforeAll(async () => {
  const account = await createDashboardAccount(engine.pool, {
    applicationId: app.id,
    email: EMAIL,
    password: PASSWORD,
  });
  expect(account).not.toBeNull();
  ({ walletId } = await createUserWithWallet(api, { name: 'Reconciled Payer' }));
  const amounts = { matched: 10, amount: 20, missing: 30, status: 40 } as const;
  for (const [name, amount] of Object.entries(amounts)) {
    const res = await api.post('/api/v1/transactions/wallet/card-deposit', {
      wallet_id: walletId,
      amount,
      payment_method_id: 'pm_card_visa',
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    const id = res.body.id as string;
    const row = await engine.pool.one(sql.type(
      z.object({ reference: z.string(), booked: z.string() }),
    )`
      SELECT provider_reference AS reference,
        coalesce((metadata->>'total_amount_paid')::bigint, amount)::text AS booked
      FROM transactions WHERE id = ${id}`);
    deposits[name as keyof typeof deposits] = { id, ...row, booked: BigInt(row.booked) };
  }
});

/** Cents as a settlement file writes them: `12.34`. */
const major = (cents: bigint) => `${cents / 100n}.${(cents % 100n).toString().padStart(2, '0')}`;

/**
 * The provider's file: one deposit as the engine has it, one a dollar more, one failed, one
 * payment the engine never made; the fourth deposit is not in it.
 */
function settlementFile(): string {
  const at = new Date(Date.now() - 5 * 60_000).toISOString();
  const row = (reference: string, cents: bigint, status = 'succeeded') =>
    `${reference},${at},${major(cents)},USD,0.00,in,${status}`;
  return [
    HEADER,
    row(deposits.matched.reference, deposits.matched.booked),
    row(deposits.amount.reference, deposits.amount.booked + 100n),
    row(deposits.status.reference, deposits.status.booked, 'failed'),
    row('ch_only_at_the_provider', 1_234n),
    '',
  ].join('\n');
}

const importCount = () =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM recon_imports WHERE application_id = ${app.id}`);

type Stored = { status: string; resolution: string | null; note: string | null };
const storedException = (id: string) =>
  engine.pool.one(sql.type(
    z.object({
      status: z.string(),
      resolution: z.string().nullable(),
      note: z.string().nullable(),
    }),
  )`
    SELECT status, resolution, note FROM recon_exceptions WHERE id = ${id}`) as Promise<Stored>;

async function uploadFile(page: Page, name: string, text: string): Promise<number> {
  await page.getByLabel('Provider').first().selectOption('card');
  await page
    .getByLabel('Settlement file')
    .setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(text) });
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/v1/reconciliation/imports')),
    page.getByRole('button', { name: 'Upload' }).click(),
  ]);
  return response.status();
}

describe('provider reconciliation on the dashboard', () => {
  it('imports a settlement file, runs over it and accepts its exceptions', async () => {
    const { page, requests, errors } = await signedInDashboard(browser, engine.url, {
      email: EMAIL,
      password: PASSWORD,
    });
    const balance = await balanceOf(engine.pool, walletId);
    await goTo(page, 'Reconciliation');
    await page.getByRole('heading', { name: 'Reconciliation', exact: true }).waitFor();
    await page.getByText('0 runs').waitFor();

    // A bad row refuses the whole file: each problem shown by row and field, nothing imported.
    const bad = `${HEADER}\n${deposits.matched.reference},2026-01-30T10:00:00Z,ten,USD,0.00,in,succeeded\nch_x,yesterday,1.00,USD,0.00,sideways,succeeded\n`;
    expect(await uploadFile(page, 'bad.csv', bad)).toBe(422);
    const problems = page.locator('table[data-upload-errors]');
    await problems.getByText('2 of 2 rows are bad').waitFor();
    expect(await problems.getByRole('columnheader').allInnerTexts()).toEqual([
      'Row',
      'Field',
      'Problem',
    ]);
    const cells = (n: number) => problems.locator(`tbody td:nth-child(${n})`).allInnerTexts();
    const fields = await cells(2);
    const rows = (await cells(1)).map((row, i) => [row, fields[i]]);
    expect(rows).toEqual([
      ['2', 'amount'],
      ['3', 'booked_at'],
      ['3', 'direction'],
    ]);
    await page.getByRole('alert').filter({ hasText: 'nothing was imported' }).waitFor();
    expect(await importCount()).toBe(0);

    // The good file, through the dashboard's path as multipart/form-data.
    expect(await uploadFile(page, 'settlement.csv', settlementFile())).toBe(201);
    const imported = page.locator('[data-import]');
    await imported.getByText('Imported: 4 rows').waitFor();
    const importId = (await imported.getAttribute('data-import')) ?? '';
    expect(await importCount()).toBe(1);
    expect(requests).toContain(`${engine.url}/dashboard/api/test/v1/reconciliation/imports`);
    await page.locator('table[data-upload-errors]').waitFor({ state: 'detached' });

    // A run over the import: the form takes its provider and id, the list follows the run.
    await imported.getByRole('button', { name: 'Start a run over this import' }).click();
    expect(await page.getByLabel('Import id (optional)').inputValue()).toBe(importId);
    await page.getByRole('button', { name: 'Start the run' }).click();
    const started = page.locator('[data-started-run]');
    await started.waitFor();
    const runId = (await started.getAttribute('data-started-run')) ?? '';
    const run = page.locator(`tr[data-run="${runId}"]`);
    await run.locator('[data-run-status]', { hasText: 'completed' }).waitFor({ timeout: 60_000 });
    const counts: Record<string, string> = {};
    for (const name of COUNTED) {
      counts[name] = await run.locator(`td[data-count="${name}"]`).innerText();
    }
    expect(counts).toEqual({
      matched: '1',
      missing_internal: '1',
      missing_external: '1',
      amount_mismatch: '1',
      status_mismatch: '1',
      duplicate: '0',
    });
    expect((await api.get(`/api/v1/reconciliation/runs/${runId}`)).body).toMatchObject({
      status: 'completed',
      import_id: importId,
    });

    // Its exceptions, then filtered by kind and status (the filters are the address's).
    await run.getByRole('link', { name: 'Exceptions of this run' }).click();
    await page.getByText('4 exceptions', { exact: true }).waitFor();
    await page.locator('select[name=status]').selectOption('open');
    await page.locator('select[name=kind]').selectOption('amount_mismatch');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('1 exceptions', { exact: true }).waitFor();
    expect(new URL(page.url()).searchParams.get('kind')).toBe('amount_mismatch');
    expect(
      requests.some((url) =>
        url.includes(
          `/v1/reconciliation/exceptions?status=open&kind=amount_mismatch&run_id=${runId}`,
        ),
      ),
    ).toBe(true);

    // One exception: ours and theirs side by side, accepted with a note.
    await page.locator('tr[data-exception] a').first().click();
    await page.getByRole('heading', { name: 'Reconciliation exception' }).waitFor();
    await page.getByText(deposits.amount.reference, { exact: true }).waitFor();
    const amountRow = page.locator('tr[data-side="Amount"]');
    expect(await amountRow.getAttribute('class')).toBe('differs');
    expect(await amountRow.locator('td').allInnerTexts()).toEqual([
      major(deposits.amount.booked),
      major(deposits.amount.booked + 100n),
    ]);
    // The words differ, the statuses agree: only the amount is marked.
    expect(await page.locator('tr[data-side="Status"]').getAttribute('class')).toBe('');
    expect(await page.locator('tr[data-side="Status"] td').allInnerTexts()).toEqual([
      'completed',
      'succeeded',
    ]);
    const note = 'The provider added a dollar of its own fee; agreed with them.';
    const accept = page.getByRole('button', { name: 'Accept', exact: true });
    expect(await accept.isDisabled()).toBe(true);
    await page.getByLabel('Note').fill(note);
    await accept.click();
    await page.locator('dd[data-exception-status]', { hasText: 'resolved' }).waitFor();
    await page.locator('dd[data-note]', { hasText: note }).waitFor();
    const amountException = (
      await api.get(`/api/v1/reconciliation/exceptions?run_id=${runId}&kind=amount_mismatch`)
    ).body.data[0] as { id: string };
    expect(await storedException(amountException.id)).toEqual({
      status: 'resolved',
      resolution: 'accept',
      note,
    });

    // The open ones left: two chosen by their boxes, accepted together with one note.
    await page.goto(
      `${engine.url}/dashboard/reconciliation/exceptions?status=open&run_id=${runId}`,
    );
    await page.getByText('3 exceptions', { exact: true }).waitFor();
    await page.getByLabel(`Select the exception of ${deposits.missing.reference}`).check();
    await page.getByLabel('Select the exception of ch_only_at_the_provider').check();
    const bulk = page.getByRole('button', { name: 'Accept 2 selected' });
    expect(await bulk.isDisabled()).toBe(true);
    await page.getByLabel('Note for the selected').fill('Settled by hand with the provider.');
    await bulk.click();
    await page.getByRole('status').filter({ hasText: 'Accepted 2 exceptions.' }).waitFor();
    await page.getByText('1 exceptions', { exact: true }).waitFor();
    const left = await api.get(`/api/v1/reconciliation/exceptions?run_id=${runId}&status=open`);
    expect((left.body.data as { kind: string }[]).map((e) => e.kind)).toEqual(['status_mismatch']);
    const resolved = await api.get(
      `/api/v1/reconciliation/exceptions?run_id=${runId}&status=resolved&per_page=10`,
    );
    expect(resolved.body.total).toBe(3);
    for (const e of resolved.body.data as { id: string; kind: string }[]) {
      if (e.kind === 'amount_mismatch') continue;
      expect(await storedException(e.id)).toEqual({
        status: 'resolved',
        resolution: 'accept',
        note: 'Settled by hand with the provider.',
      });
    }

    // Every status of the run: the resolved ones without a box.
    await page.locator('select[name=status]').selectOption('');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('4 exceptions', { exact: true }).waitFor();
    expect(await page.locator('tr[data-exception] input[type=checkbox]').count()).toBe(1);

    // Accepting moves no money.
    expect(await balanceOf(engine.pool, walletId)).toBe(balance);
    await assertLedgerInvariant(engine.pool);
    const origin = new URL(engine.url).origin;
    expect(requests.filter((url) => !url.startsWith(`${origin}/`))).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('fits a phone: the page and an exception never scroll sideways, their tables do', async () => {
    const { page, errors } = await signedInDashboard(browser, engine.url, {
      email: EMAIL,
      password: PASSWORD,
    });
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = () =>
      page.evaluate<number>('document.documentElement.scrollWidth - innerWidth');
    await page.goto(`${engine.url}/dashboard/reconciliation`);
    await page.locator('tr[data-run]').first().waitFor();
    expect(await overflow()).toBe(0);
    await page.goto(`${engine.url}/dashboard/reconciliation/exceptions`);
    await page.locator('tr[data-exception] a').first().click();
    await page.getByRole('heading', { name: 'Ours and theirs' }).waitFor();
    expect(await overflow()).toBe(0);
    expect(errors).toEqual([]);
  });
});
