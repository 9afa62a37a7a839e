import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { createAdmin, type CreatedAdmin } from '../../src/db/admins';
import { workflowIds } from '../../src/workflows/ids';
import { assertLedgerInvariant, balanceOf, systemBalance } from '../support/database';
import { createTestApp } from '../support/engine';
import {
  clientFor,
  createUserWithWallet,
  expectError,
  transfer,
  type ApiClient,
  type Reply,
} from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { pollUntil } from '../support/wait';

/**
 * The provider reconciliation's HTTP side (docs/api.md, Reconciliation): settlement files, runs,
 * exceptions and their resolutions, and the Test Mode discrepancy, on the real engine.
 */

const engine = useTestEngine();
const { app, api, live } = useTestApp(engine, { currency: 'USD' });
const { app: otherApp, api: other } = useTestApp(engine, { currency: 'USD' });

const IMPORTS = '/api/v1/reconciliation/imports';
const RUNS = '/api/v1/reconciliation/runs';
const EXCEPTIONS = '/api/v1/reconciliation/exceptions';
const BULK = '/api/v1/reconciliation/exceptions/resolve';
const SIMULATE = '/api/v1/testing/simulate-provider-discrepancy';
const resolveOf = (id: string) => `${EXCEPTIONS}/${id}/resolve`;

const HEADER = 'provider_reference,booked_at,amount,currency,fee,direction,status';
const hour = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** A settlement file upload, as a browser or curl sends it. */
async function upload(
  client: { app: typeof app },
  fields: { provider?: string; csv?: string },
): Promise<Reply> {
  const form = new FormData();
  if (fields.provider !== undefined) form.append('provider', fields.provider);
  if (fields.csv !== undefined) {
    form.append('file', new Blob([fields.csv], { type: 'text/csv' }), 'settlement.csv');
  }
  const response = await fetch(`${engine.url}${IMPORTS}`, {
    method: 'POST',
    headers: {
      'api-key': client.app.credentials.test.apiKey,
      'secret-key': client.app.credentials.test.secretKey,
    },
    body: form,
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text ? JSON.parse(text) : undefined,
    headers: response.headers,
  };
}

/** Admin calls count per admin (10 a minute here): each test takes a fresh one. */
const newAdmin = () => createAdmin(engine.pool, `recon-${Math.random().toString(36).slice(2, 8)}`);

let lastAddress = 40;
function asAdmin(admin: CreatedAdmin): ApiClient {
  const client = clientFor(engine.url, null);
  const headers = {
    'api-key': admin.api_key,
    'secret-key': admin.secret_key,
    'x-forwarded-for': `192.0.2.${lastAddress++}`,
  };
  return {
    ...client,
    get: (path, extra) => client.get(path, { ...headers, ...extra }),
    post: (path, body, extra) => client.post(path, body, { ...headers, ...extra }),
  };
}

/** A completed card deposit of `amount` (major units) into a new wallet. */
async function cardDeposit(client: ApiClient, amount = 100) {
  const { walletId } = await createUserWithWallet(client);
  const res = await client.post('/api/v1/transactions/wallet/card-deposit', {
    wallet_id: walletId,
    amount,
    payment_method_id: 'pm_card_visa',
  });
  if (res.status !== 200 || res.body.status !== 'completed') {
    throw new Error(`card deposit: ${res.status} ${JSON.stringify(res.body)}`);
  }
  const reference = await engine.pool.oneFirst(sql.type(z.object({ r: z.string() }))`
    SELECT provider_reference AS r FROM transactions WHERE id = ${res.body.id as string}`);
  return { walletId, depositId: res.body.id as string, reference };
}

type Listed = { data: { id: string }[] };

type Side = { amount: bigint; currency: string; status: string };

/**
 * An open exception as a run records it (recon_exceptions), about `transactionId`; amounts in
 * minor units.
 */
async function openException(
  owner: { id: string },
  fields: {
    kind: string;
    transactionId: string | null;
    reference: string;
    ours: Side | null;
    theirs: Side | null;
  },
): Promise<string> {
  const id = randomUUID();
  const json = (s: Side | null, booked?: string) =>
    s && {
      amount: s.amount.toString(),
      currency: s.currency,
      status: s.status,
      ...(booked && { booked_at: booked }),
    };
  await engine.pool.query(sql.unsafe`
    INSERT INTO recon_exceptions (id, application_id, mode, provider, identity, kind,
      transaction_id, provider_reference, ours, theirs)
    VALUES (${id}, ${owner.id}, 'test', 'card', ${`${fields.kind}:${id}`}, ${fields.kind},
      ${fields.transactionId}, ${fields.reference},
      ${sql.jsonb(json(fields.ours))}, ${sql.jsonb(json(fields.theirs, iso(Date.now() - hour)))})`);
  return id;
}

const exceptionState = (id: string) =>
  engine.pool.one(sql.type(
    z.object({ status: z.string(), resolution: z.string().nullable(), adjustments: z.number() }),
  )`
    SELECT status, resolution,
      (SELECT count(*)::int FROM recon_adjustments a WHERE a.exception_id = e.id) AS adjustments
    FROM recon_exceptions e WHERE id = ${id}`);

const resolvedEvents = (id: string) =>
  engine.pool.any(sql.type(z.object({ data: z.any() }))`
    SELECT data FROM events
    WHERE type = 'reconciliation.exception.resolved' AND data->>'id' = ${id}`);

/** The id of the application's Test Mode credential: `resolved_by` names it. */
const testCredentialId = () =>
  engine.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM credentials WHERE application_id = ${app.id} AND mode = 'test'`);

const clearing = () => systemBalance(engine.pool, app.id, 'provider_clearing_card', 'USD');

afterEach(async () => {
  await assertLedgerInvariant(engine.pool);
});

describe('POST /api/v1/reconciliation/imports', () => {
  const good = [
    HEADER,
    'pi_recon_1,2026-01-30T10:00:00Z,10.00,USD,0.59,in,succeeded',
    'pi_recon_2,2026-01-30T11:00:00Z,2.50,USD,0.37,in,failed',
  ].join('\n');

  it('imports a good file (201), and answers the same file again with its first import (200)', async () => {
    const first = await upload({ app }, { provider: 'card', csv: `${good}\n` });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      id: expect.any(String),
      provider: 'card',
      rows: 2,
      rows_bad: 0,
      errors: [],
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      created_at: expect.any(String),
    });
    const again = await upload({ app }, { provider: 'card', csv: `${good}\n` });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const records = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM recon_import_records WHERE import_id = ${first.body.id as string}`);
    expect(records).toBe(2);
  });

  it('refuses a file with a bad row whole: 422 naming the row, nothing imported', async () => {
    const csv = `${HEADER}\npi_bad_1,2026-01-30T10:00:00Z,ten,USD,0.59,in,succeeded\npi_bad_2,2026-01-30T10:00:00Z,1.00,USD,0.00,sideways,succeeded\n`;
    const before = await importCount();
    const res = await upload({ app }, { provider: 'card', csv });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({
      detail: expect.any(String),
      id: null,
      provider: 'card',
      rows: 2,
      rows_bad: 2,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      created_at: null,
    });
    expect(res.body.errors).toEqual([
      expect.objectContaining({ row: 2, field: 'amount' }),
      expect.objectContaining({ row: 3, field: 'direction' }),
    ]);
    expect(await importCount()).toBe(before);
  });

  it('needs a provider and a file, as multipart/form-data', async () => {
    expectError(await upload({ app }, { csv: `${HEADER}\n` }), 422);
    expectError(await upload({ app }, { provider: 'bank', csv: `${HEADER}\n` }), 422);
    expectError(await upload({ app }, { provider: 'card' }), 422);
    expectError(await api.post(IMPORTS, { provider: 'card' }), 400);
  });

  const importCount = () =>
    engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM recon_imports WHERE application_id = ${app.id}`);
});

describe('runs', () => {
  const window = () => ({ from: iso(Date.now() - 24 * hour), to: iso(Date.now() - hour) });

  it('starts a run (202): the Run, its row and its workflow; a retry with the key answers it', async () => {
    const key = `run-${randomUUID()}`;
    const body = { provider: 'card', ...window() };
    const res = await api.post(RUNS, body, { 'Idempotency-Key': key });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      id: expect.any(String),
      provider: 'card',
      from: expect.any(String),
      to: expect.any(String),
      import_id: null,
      status: expect.stringMatching(/^(running|completed|failed)$/),
      counts: {
        matched: expect.any(Number),
        missing_internal: expect.any(Number),
        missing_external: expect.any(Number),
        amount_mismatch: expect.any(Number),
        status_mismatch: expect.any(Number),
        duplicate: expect.any(Number),
      },
      created_at: expect.any(String),
      completed_at: null,
    });
    expect(Date.parse(res.body.from)).toBe(Date.parse(body.from));
    const described = await engine.temporal.workflow
      .getHandle(workflowIds.reconRun(res.body.id as string))
      .describe();
    expect(described.taskQueue).toBe(engine.config.temporal.maintenanceTaskQueue);
    const replay = await api.post(RUNS, body, { 'Idempotency-Key': key });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.id).toBe(res.body.id);

    const got = await api.get(`${RUNS}/${res.body.id as string}`);
    expect(got.status).toBe(200);
    expect(got.body.id).toBe(res.body.id);
    const page = await api.get<Listed>(`${RUNS}?per_page=100`);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ page: 1, per_page: 100 });
    expect(page.body.data.map((r) => r.id)).toContain(res.body.id);
    expectError(await other.get(`${RUNS}/${res.body.id as string}`), 403);
    expectError(await api.get(`${RUNS}/${randomUUID()}`), 404);
    expect((await other.get(RUNS)).body.data).toEqual([]);
  });

  it('refuses a bad window with 422 naming the field, and writes no run', async () => {
    const now = Date.now();
    const runs = () =>
      engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM recon_runs WHERE application_id = ${app.id}`);
    const before = await runs();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ from: iso(now - hour), to: iso(now - 2 * hour) }, /^from: must be before to/],
      [{ from: iso(now - hour), to: iso(now - hour) }, /^from: must be before to/],
      [{ from: iso(now - 2 * hour), to: iso(now + hour) }, /to: must not be in the future/],
      [{ from: iso(now - 32 * 24 * hour), to: iso(now - hour) }, /^to: must be at most 31 days/],
      [{ from: 'yesterday', to: iso(now - hour) }, /^from: must be an RFC 3339 time/],
      [{ provider: 'bank', from: iso(now - 2 * hour), to: iso(now - hour) }, /^provider:/],
    ];
    for (const [body, detail] of cases) {
      const res = await api.post(RUNS, { provider: 'card', ...body });
      expect([body, res.status]).toEqual([body, 422]);
      expect(res.body.detail).toMatch(detail);
    }
    expect(await runs()).toBe(before);
  });

  it('reads an import of the same provider; another provider’s is 422, an unknown one 404', async () => {
    const csv = `${HEADER}\npi_run_import,${iso(Date.now() - 2 * hour)},1.00,USD,0.00,in,succeeded\n`;
    const imported = await upload({ app }, { provider: 'card', csv });
    expect(imported.status).toBe(201);
    const importId = imported.body.id as string;
    const res = await api.post(RUNS, { provider: 'card', ...window(), import_id: importId });
    expect(res.status).toBe(202);
    expect(res.body.import_id).toBe(importId);
    const wrong = await api.post(RUNS, {
      provider: 'mobile_money',
      ...window(),
      import_id: importId,
    });
    expect(expectError(wrong, 422)).toMatch(/^import_id: /);
    expect(
      expectError(
        await api.post(RUNS, { provider: 'card', ...window(), import_id: randomUUID() }),
        404,
      ),
    ).toBe('Import not found');
    // Another application's import names nothing of this one.
    expectError(
      await other.post(RUNS, { provider: 'card', ...window(), import_id: importId }),
      404,
    );
  });
});

describe('exceptions', () => {
  it('lists (filters status, kind, run_id, transaction_id) and gets them; 403 and 404', async () => {
    const { depositId, reference } = await cardDeposit(api);
    const id = await openException(app, {
      kind: 'amount_mismatch',
      transactionId: depositId,
      reference,
      ours: { amount: 100_00n, currency: 'USD', status: 'completed' },
      theirs: { amount: 100_01n, currency: 'USD', status: 'succeeded' },
    });
    const got = await api.get(`${EXCEPTIONS}/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      id,
      run_id: null,
      kind: 'amount_mismatch',
      transaction_id: depositId,
      provider_reference: reference,
      ours: { amount: 100, status: 'completed' },
      theirs: { amount: 100.01, status: 'succeeded', booked_at: expect.any(String) },
      status: 'open',
      resolution: null,
      note: null,
      resolved_by: null,
      created_at: expect.any(String),
      resolved_at: null,
    });
    const list = await api.get(`${EXCEPTIONS}?transaction_id=${depositId}`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      data: [got.body],
      page: 1,
      per_page: 20,
      total: 1,
      total_pages: 1,
    });
    for (const filter of ['status=open', 'kind=amount_mismatch']) {
      const ids = (await api.get<Listed>(`${EXCEPTIONS}?${filter}&per_page=100`)).body.data.map(
        (e) => e.id,
      );
      expect(ids).toContain(id);
    }
    for (const filter of ['status=resolved', 'kind=duplicate', `run_id=${randomUUID()}`]) {
      const ids = (await api.get<Listed>(`${EXCEPTIONS}?${filter}&per_page=100`)).body.data.map(
        (e) => e.id,
      );
      expect(ids).not.toContain(id);
    }
    expectError(await api.get(`${EXCEPTIONS}?kind=odd`), 422);
    expectError(await api.get(`${EXCEPTIONS}?run_id=nope`), 422);
    expectError(await other.get(`${EXCEPTIONS}/${id}`), 403);
    expectError(await live.get(`${EXCEPTIONS}/${id}`), 403);
    expectError(await api.get(`${EXCEPTIONS}/${randomUUID()}`), 404);
  });
});

describe('POST /api/v1/reconciliation/exceptions/{exception_id}/resolve', () => {
  it('accept: resolved with the note and who, one event, the timeline shows it; again 400', async () => {
    const { depositId, walletId, reference } = await cardDeposit(api);
    const id = await openException(app, {
      kind: 'status_mismatch',
      transactionId: depositId,
      reference,
      ours: { amount: 100_00n, currency: 'USD', status: 'completed' },
      theirs: { amount: 100_00n, currency: 'USD', status: 'failed' },
    });
    const balance = await balanceOf(engine.pool, walletId);
    const note = 'The provider marked it failed by mistake; their support confirmed (case 9)';
    const res = await api.post(resolveOf(id), { action: 'accept', note });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id,
      status: 'resolved',
      resolution: 'accept',
      note,
      resolved_by: `credential:${await testCredentialId()}`,
      resolved_at: expect.any(String),
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(balance);
    expect(await exceptionState(id)).toEqual({
      status: 'resolved',
      resolution: 'accept',
      adjustments: 0,
    });
    expect((await resolvedEvents(id)).map((e) => e.data)).toEqual([res.body]);

    const timeline = await api.get<{ steps: unknown[] }>(
      `/api/v1/transactions/${depositId}/timeline`,
    );
    expect(timeline.status).toBe(200);
    expect(timeline.body.steps.at(-1)).toEqual({
      name: 'status_mismatch',
      kind: 'reconciliation',
      status: 'completed',
      attempts: 1,
      started_at: expect.any(String),
      ended_at: expect.any(String),
      provider_reference: reference,
      failure: null,
      operator: `credential:${await testCredentialId()}`,
      reason: note,
      resolution: 'accept',
    });

    const again = await api.post(resolveOf(id), { action: 'accept', note: 'twice' });
    expect(expectError(again, 400)).toBe('The exception is already resolved');
    expect(await resolvedEvents(id)).toHaveLength(1);
  });

  it('refuses a bad body (422), another application (403), an unknown id (404)', async () => {
    const { depositId, reference } = await cardDeposit(api);
    const id = await openException(app, {
      kind: 'amount_mismatch',
      transactionId: depositId,
      reference,
      ours: { amount: 100_00n, currency: 'USD', status: 'completed' },
      theirs: { amount: 99_00n, currency: 'USD', status: 'succeeded' },
    });
    expectError(await api.post(resolveOf(id), { action: 'accept', note: '' }), 422);
    expectError(await api.post(resolveOf(id), { action: 'accept', note: 'x'.repeat(1001) }), 422);
    expectError(await api.post(resolveOf(id), { action: 'ignore', note: 'why' }), 422);
    expectError(await other.post(resolveOf(id), { action: 'accept', note: 'not mine' }), 403);
    expectError(await api.post(resolveOf(randomUUID()), { action: 'accept', note: 'none' }), 404);
    expect(await exceptionState(id)).toEqual({ status: 'open', resolution: null, adjustments: 0 });
  });

  it('adjust needs admin credentials: 403 with the application’s, nothing written', async () => {
    const { depositId, walletId, reference } = await cardDeposit(api);
    const id = await openException(app, {
      kind: 'amount_mismatch',
      transactionId: depositId,
      reference,
      ours: { amount: 100_00n, currency: 'USD', status: 'completed' },
      theirs: { amount: 100_01n, currency: 'USD', status: 'succeeded' },
    });
    const balance = await balanceOf(engine.pool, walletId);
    const res = await api.post(resolveOf(id), { action: 'adjust', note: 'one cent' });
    expect(expectError(res, 403)).toMatch(/admin credentials/);
    expect(await balanceOf(engine.pool, walletId)).toBe(balance);
    expect(await exceptionState(id)).toEqual({ status: 'open', resolution: null, adjustments: 0 });
  });

  it('adjust (admin): one balanced ledger transaction wallet ↔ clearing for the difference', async () => {
    const admin = await newAdmin();
    const { depositId, walletId, reference } = await cardDeposit(api);
    const id = await openException(app, {
      kind: 'amount_mismatch',
      transactionId: depositId,
      reference,
      ours: { amount: 100_00n, currency: 'USD', status: 'completed' },
      theirs: { amount: 100_25n, currency: 'USD', status: 'succeeded' },
    });
    const balance = await balanceOf(engine.pool, walletId);
    const clearingBefore = await clearing();
    const note = 'The provider collected 0.25 more; credited to the wallet';
    const res = await asAdmin(admin).post(resolveOf(id), { action: 'adjust', note });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id,
      status: 'resolved',
      resolution: 'adjust',
      note,
      resolved_by: `admin:${admin.admin.id}`,
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(balance + 25n);
    expect(await clearing()).toBe(clearingBefore - 25n);
    const legs = await engine.pool.any(sql.type(
      z.object({
        account_id: z.string(),
        amount: z.bigint(),
        kind: z.string(),
        transaction_id: z.string(),
      }),
    )`
      SELECT e.account_id, e.amount, lt.kind, lt.transaction_id
      FROM recon_adjustments a
        JOIN ledger_transactions lt ON lt.id = a.ledger_transaction_id
        JOIN ledger_entries e ON e.ledger_transaction_id = lt.id
      WHERE a.exception_id = ${id} ORDER BY e.amount`);
    expect(legs.map((l) => [l.amount, l.kind, l.transaction_id])).toEqual([
      [-25n, 'recon_adjustment', depositId],
      [25n, 'recon_adjustment', depositId],
    ]);
    expect(legs[1]!.account_id).toBe(walletId);
    const adjustment = await engine.pool.one(
      sql.type(
        z.object({ wallet_id: z.string(), amount: z.bigint(), currency: z.string() }),
      )`SELECT wallet_id, amount, currency FROM recon_adjustments WHERE exception_id = ${id}`,
    );
    expect(adjustment).toEqual({ wallet_id: walletId, amount: 25n, currency: 'USD' });
    expect((await resolvedEvents(id)).map((e) => e.data)).toEqual([res.body]);
    const handle = engine.temporal.workflow.getHandle(workflowIds.reconAdjust(id));
    expect((await handle.describe()).status.name).toBe('COMPLETED');

    const again = await asAdmin(admin).post(resolveOf(id), { action: 'adjust', note });
    expect(expectError(again, 400)).toBe('The exception is already resolved');
    expect(await balanceOf(engine.pool, walletId)).toBe(balance + 25n);
  });

  it('adjust that would take the wallet below zero: 400 Insufficient funds, nothing written', async () => {
    const admin = await newAdmin();
    const { depositId, walletId, reference } = await cardDeposit(api, 50);
    // The wallet spends most of the deposit; the provider then says it never collected it.
    const { walletId: elsewhere } = await createUserWithWallet(api);
    await transfer(api, walletId, elsewhere, 40);
    const id = await openException(app, {
      kind: 'missing_external',
      transactionId: depositId,
      reference,
      ours: { amount: 50_00n, currency: 'USD', status: 'completed' },
      theirs: null,
    });
    const balance = await balanceOf(engine.pool, walletId);
    const clearingBefore = await clearing();
    const res = await asAdmin(admin).post(resolveOf(id), { action: 'adjust', note: 'never paid' });
    expect(expectError(res, 400)).toBe('Insufficient funds');
    expect(await balanceOf(engine.pool, walletId)).toBe(balance);
    expect(await clearing()).toBe(clearingBefore);
    expect(await exceptionState(id)).toEqual({ status: 'open', resolution: null, adjustments: 0 });
    expect(await resolvedEvents(id)).toEqual([]);

    // Once the wallet holds enough, the same adjustment goes through: the whole amount back.
    await transfer(api, elsewhere, walletId, 40);
    const retried = await asAdmin(admin).post(resolveOf(id), {
      action: 'adjust',
      note: 'never paid',
    });
    expect(retried.status).toBe(200);
    expect(await balanceOf(engine.pool, walletId)).toBe(balance + 40_00n - 50_00n);
    expect(await clearing()).toBe(clearingBefore + 50_00n);
  });

  it('admin accept of any application’s exception; an exception naming no payment cannot be adjusted', async () => {
    const admin = await newAdmin();
    const id = await openException(otherApp, {
      kind: 'missing_internal',
      transactionId: null,
      reference: `pi_unknown_${randomUUID()}`,
      ours: null,
      theirs: { amount: 7_00n, currency: 'USD', status: 'succeeded' },
    });
    const adjust = await asAdmin(admin).post(resolveOf(id), {
      action: 'adjust',
      note: 'which wallet?',
    });
    expect(expectError(adjust, 400)).toMatch(/no payment of a wallet/);
    const accept = await asAdmin(admin).post(resolveOf(id), {
      action: 'accept',
      note: 'a test charge',
    });
    expect(accept.status).toBe(200);
    expect(accept.body).toMatchObject({
      status: 'resolved',
      resolved_by: `admin:${admin.admin.id}`,
    });
  });
});

describe('POST /api/v1/reconciliation/exceptions/resolve (bulk accept)', () => {
  const exceptionFor = async () => {
    const { depositId, reference } = await cardDeposit(api, 5);
    return openException(app, {
      kind: 'amount_mismatch',
      transactionId: depositId,
      reference,
      ours: { amount: 5_00n, currency: 'USD', status: 'completed' },
      theirs: { amount: 5_01n, currency: 'USD', status: 'succeeded' },
    });
  };

  it('accepts all in the order of ids, each with its event', async () => {
    const ids = [await exceptionFor(), await exceptionFor()];
    const res = await api.post<Listed>(BULK, {
      ids: [ids[1], ids[0], ids[1]],
      action: 'accept',
      note: 'batch',
    });
    expect(res.status).toBe(200);
    expect(res.body.data.map((e) => e.id)).toEqual([ids[1], ids[0]]);
    for (const id of ids) {
      expect(await exceptionState(id)).toEqual({
        status: 'resolved',
        resolution: 'accept',
        adjustments: 0,
      });
      expect(await resolvedEvents(id)).toHaveLength(1);
    }
  });

  it('all or none: a resolved, unknown or foreign id refuses the whole request, naming it', async () => {
    const open = await exceptionFor();
    const resolved = await exceptionFor();
    expect((await api.post(resolveOf(resolved), { action: 'accept', note: 'first' })).status).toBe(
      200,
    );
    const unknown = randomUUID();
    const foreign = await openException(otherApp, {
      kind: 'missing_internal',
      transactionId: null,
      reference: `pi_foreign_${randomUUID()}`,
      ours: null,
      theirs: { amount: 1_00n, currency: 'USD', status: 'succeeded' },
    });
    const tried: [string, number, string][] = [
      [resolved, 400, `The exception is already resolved: ${resolved}`],
      [unknown, 404, `Exception not found: ${unknown}`],
      [foreign, 403, `You do not have permission to access this exception: ${foreign}`],
    ];
    for (const [id, status, detail] of tried) {
      const res = await api.post(BULK, { ids: [open, id], action: 'accept', note: 'batch' });
      expect([id, expectError(res, status)]).toEqual([id, detail]);
    }
    expect(await exceptionState(open)).toEqual({
      status: 'open',
      resolution: null,
      adjustments: 0,
    });
    expect(await resolvedEvents(open)).toEqual([]);
    expectError(await api.post(BULK, { ids: [], action: 'accept', note: 'none' }), 422);
    expectError(await api.post(BULK, { ids: [open], action: 'adjust', note: 'no' }), 422);
    const tooMany = Array.from({ length: 1001 }, () => randomUUID());
    expectError(await api.post(BULK, { ids: tooMany, action: 'accept', note: 'many' }), 422);
  });
});

describe('POST /api/v1/testing/simulate-provider-discrepancy', () => {
  const sandboxPayment = (id: string) =>
    engine.pool.maybeOne(sql.type(z.object({ amount: z.bigint(), status: z.string() }))`
      SELECT amount, status FROM sandbox_card_payments WHERE id = ${id}`);

  it('changes the sandbox’s card payment: amount +1 minor unit, status flipped, then missing', async () => {
    const { depositId, reference } = await cardDeposit(api);
    const before = (await sandboxPayment(reference))!;
    const amount = await api.post(SIMULATE, { transaction_id: depositId, kind: 'amount' });
    expect(amount.status).toBe(200);
    expect(amount.body).toEqual({
      transaction_id: depositId,
      provider_reference: reference,
      kind: 'amount',
    });
    expect(await sandboxPayment(reference)).toEqual({
      amount: before.amount + 1n,
      status: 'succeeded',
    });
    expect((await api.post(SIMULATE, { transaction_id: depositId, kind: 'status' })).status).toBe(
      200,
    );
    expect((await sandboxPayment(reference))!.status).toBe('failed');
    expect((await api.post(SIMULATE, { transaction_id: depositId, kind: 'status' })).status).toBe(
      200,
    );
    expect((await sandboxPayment(reference))!.status).toBe('succeeded');
    expect((await api.post(SIMULATE, { transaction_id: depositId, kind: 'missing' })).status).toBe(
      200,
    );
    expect(await sandboxPayment(reference)).toBeNull();
    const gone = await api.post(SIMULATE, { transaction_id: depositId, kind: 'amount' });
    expect(expectError(gone, 400)).toBe('The sandbox has no record of this payment');
  });

  it('is Test Mode only (403 live), the caller’s payments only; 404 unknown, 422 bad kind', async () => {
    const { depositId, reference } = await cardDeposit(api);
    const before = await sandboxPayment(reference);
    expectError(await live.post(SIMULATE, { transaction_id: depositId, kind: 'amount' }), 403);
    expectError(await other.post(SIMULATE, { transaction_id: depositId, kind: 'amount' }), 403);
    expectError(await api.post(SIMULATE, { transaction_id: randomUUID(), kind: 'amount' }), 404);
    expectError(await api.post(SIMULATE, { transaction_id: depositId, kind: 'fee' }), 422);
    expect(await sandboxPayment(reference)).toEqual(before);
    // A transfer has no provider, so the sandbox keeps no record of it.
    const { walletId: to } = await createUserWithWallet(api);
    const { walletId: from } = await cardDeposit(api, 10);
    const moved = await transfer(api, from, to, 1);
    const res = await api.post(SIMULATE, { transaction_id: moved.id as string, kind: 'missing' });
    expect(expectError(res, 400)).toBe('The sandbox has no record of this payment');
  });
});

describe('the reconciliation rate limit', () => {
  it('counts every reconciliation endpoint against `reconciliation`, 10 a minute', async () => {
    const limited = await createTestApp(engine.pool, { currency: 'USD', rateLimits: null });
    const client = clientFor(engine.url, limited);
    const answers: number[] = [];
    for (let i = 0; i < 11; i++) answers.push((await client.get(EXCEPTIONS)).status);
    expect(answers.slice(0, 10)).toEqual(Array(10).fill(200));
    expect(answers[10]).toBe(429);
    // Another category is not spent by them.
    expect((await client.get('/api/v1/users/')).status).toBe(200);
  });
});

describe('end to end: a discrepancy found by a run and adjusted', () => {
  const { app: own, api: ownApi } = useTestApp(engine, { currency: 'USD' });

  it('card deposit → sandbox books one cent more → run → amount_mismatch → adjust → balance', async () => {
    const admin = await newAdmin();
    const from = iso(Date.now() - 60_000);
    const { walletId, depositId, reference } = await cardDeposit(ownApi, 100);
    const simulated = await ownApi.post(SIMULATE, { transaction_id: depositId, kind: 'amount' });
    expect(simulated.status).toBe(200);

    const started = await ownApi.post(RUNS, { provider: 'card', from, to: iso(Date.now()) });
    expect(started.status).toBe(202);
    const runId = started.body.id as string;
    const run = await pollUntil(
      async () => (await ownApi.get(`${RUNS}/${runId}`)).body as { status: string; counts: object },
      (r) => r.status !== 'running',
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(run).toMatchObject({
      status: 'completed',
      counts: { matched: 0, amount_mismatch: 1, missing_internal: 0, missing_external: 0 },
    });

    const listed = await ownApi.get<Listed & { data: Record<string, unknown>[] }>(
      `${EXCEPTIONS}?run_id=${runId}`,
    );
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(1);
    const exception = listed.body.data[0]!;
    const ours = exception.ours as { amount: number; status: string };
    expect(exception).toMatchObject({
      run_id: runId,
      kind: 'amount_mismatch',
      transaction_id: depositId,
      provider_reference: reference,
      status: 'open',
      ours: { status: 'completed' },
      theirs: { amount: Math.round(ours.amount * 100 + 1) / 100, status: 'succeeded' },
    });

    const balance = await balanceOf(engine.pool, walletId);
    const clearingBefore = await systemBalance(
      engine.pool,
      own.id,
      'provider_clearing_card',
      'USD',
    );
    const id = exception.id;
    const res = await asAdmin(admin).post(resolveOf(id), {
      action: 'adjust',
      note: 'The sandbox charged one cent more; credited to the wallet',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'resolved', resolution: 'adjust' });
    expect(await balanceOf(engine.pool, walletId)).toBe(balance + 1n);
    expect(await systemBalance(engine.pool, own.id, 'provider_clearing_card', 'USD')).toBe(
      clearingBefore - 1n,
    );
    // The resolution ended the exception's wait for `reconciliation.exception.stale`.
    const timer = engine.temporal.workflow.getHandle(workflowIds.reconException(id));
    const status = await pollUntil(
      async () => (await timer.describe()).status.name,
      (name) => name !== 'RUNNING',
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    expect(status).toBe('COMPLETED');
  });
});

describe('the test clock and an open exception', () => {
  const { api: clockApi } = useTestApp(engine, { currency: 'USD' });

  it('advance-time on the payment fires its open exception’s stale timer', async () => {
    const from = iso(Date.now() - 60_000);
    const { depositId } = await cardDeposit(clockApi, 25);
    expect(
      (await clockApi.post(SIMULATE, { transaction_id: depositId, kind: 'amount' })).status,
    ).toBe(200);
    const started = await clockApi.post(RUNS, { provider: 'card', from, to: iso(Date.now()) });
    expect(started.status).toBe(202);
    await pollUntil(
      async () =>
        (await clockApi.get(`${RUNS}/${started.body.id as string}`)).body as { status: string },
      (r) => r.status !== 'running',
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const listed = await clockApi.get<{ data: { id: string }[] }>(
      `${EXCEPTIONS}?transaction_id=${depositId}`,
    );
    const exceptionId = listed.body.data[0]!.id;
    const staleEvents = () =>
      engine.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
        SELECT id FROM events WHERE type = 'reconciliation.exception.stale'
          AND data->>'id' = ${exceptionId}`);
    expect(await staleEvents()).toHaveLength(0);
    // Its timer is started delayed until 72 hours after the exception opened: no task run yet.
    const opened = await clockApi.get<{ created_at: string }>(`${EXCEPTIONS}/${exceptionId}`);
    const timer = engine.temporal.workflow.getHandle(workflowIds.reconException(exceptionId));
    const delayed = await pollUntil(
      () => timer.describe().catch(() => null),
      (d) => d !== null,
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(delayed).toMatchObject({ status: { name: 'RUNNING' }, historyLength: 1 });
    // Its first task is due then (the server counts the delay from its own receipt of the start).
    const due = Date.parse(opened.body.created_at) + 72 * 3600 * 1000;
    expect(Math.abs(delayed!.executionTime!.getTime() - due)).toBeLessThan(1_000);
    // The run starts its exceptions' timers once it is completed: until the timer waits, the
    // advance is refused and changes nothing.
    const early = await pollUntil(
      () =>
        clockApi.post('/api/v1/testing/advance-time', {
          transaction_id: depositId,
          seconds: 71 * 3600,
        }),
      (res) => res.status !== 400,
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(early.status).toBe(200);
    expect(early.body).toEqual({ transaction_id: depositId, status: 'completed' });
    expect(await staleEvents()).toHaveLength(0);

    const late = await clockApi.post('/api/v1/testing/advance-time', {
      transaction_id: depositId,
      seconds: 3600,
    });
    expect(late.status).toBe(200);
    await pollUntil(
      async () => (await timer.describe()).status.name,
      (name) => name !== 'RUNNING',
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    expect(await staleEvents()).toHaveLength(1);
    const after = await clockApi.get(`${EXCEPTIONS}/${exceptionId}`);
    expect(after.body).toMatchObject({ id: exceptionId, status: 'open' });

    // Nothing waits any more: the payment and its exception's timer are both done.
    const again = await clockApi.post('/api/v1/testing/advance-time', {
      transaction_id: depositId,
      seconds: 60,
    });
    expect(again.status).toBe(400);
  });
});
