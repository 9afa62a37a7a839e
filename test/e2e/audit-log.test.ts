import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import path from 'node:path';
import { sql } from 'slonik';
import { z } from 'zod';
import { formatPayloadKeys, temporalAddress } from '../../src/config';
import { createAdmin, type CreatedAdmin } from '../../src/db/admins';
import { apiKeyHint } from '../../src/db/credentials';
import { createDashboardAccount } from '../../src/db/dashboard-accounts';
import { payloadKeys } from '../../src/temporal/data-converter';
import { assertLedgerInvariant, balanceOf } from '../support/database';
import { clientFor, createFundedWallet, createUserWithWallet, transfer } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { startReceiver, type Receiver } from '../support/webhook-receiver';
import { pollUntil } from '../support/wait';

/**
 * The audit log end to end (docs/api.md, Audit log; docs/security.md, Audit log): every change of
 * the command line, an admin, the dashboard and an application's credentials leaves its entry,
 * each application sees its own, admins see all, and no entry holds a secret.
 */
jest.setTimeout(240_000);

const engine = useTestEngine({
  env: {
    TRUST_PROXY: 'true',
    RATE_LIMIT_DASHBOARD_ACCOUNT: '1000',
    WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32',
  },
});
const { app, api } = useTestApp(engine);
const { app: other, api: otherApi } = useTestApp(engine);
const { app: usdApp, api: usd } = useTestApp(engine, { currency: 'USD' });
const { api: hooked } = useTestApp(engine);

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => receiver?.close());

const LOG = '/api/v1/audit-log';
const SUBSCRIPTIONS = '/api/v1/webhooks/subscriptions';
// Never called: the subscriptions are only made and changed.
const HOOK = 'http://127.0.0.1:9/audit';
const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const PASSWORD = 'correct horse battery staple';
const CLI_ACTOR = {
  type: 'cli',
  id: userInfo().username,
  name: `${userInfo().username}@${hostname()}`,
};

type Entry = {
  id: string;
  at: string;
  actor: { type: string; id: string; name: string };
  action: string;
  target: { type: string; id: string | null };
  ip: string | null;
  details: Record<string, unknown>;
};
type Page = { data: Entry[]; per_page: number; has_more: boolean };

/** Admin calls are limited per admin and minute: each test takes fresh ones. */
const newAdmin = () => createAdmin(engine.pool, `audit-${Math.random().toString(36).slice(2, 8)}`);

let lastAddress = 10;
/** An admin's client from an address of its own (the admin lockout counts per address). */
function asAdmin(admin: CreatedAdmin) {
  const address = `198.51.100.${lastAddress++}`;
  const client = clientFor(engine.url, null);
  const headers = {
    'api-key': admin.api_key,
    'secret-key': admin.secret_key,
    'x-forwarded-for': address,
  };
  return {
    address,
    get: (p: string) => client.get<Page>(p, headers),
    post: (p: string, body: unknown) => client.post(p, body, headers),
  };
}

/** `npm run --silent cli -- ...` against the engine's database and Temporal; `input` on stdin. */
function cli(
  args: string[],
  input = '',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'cli', '--', ...args], {
      cwd: path.resolve(__dirname, '..', '..'),
      env: {
        ...process.env,
        DATABASE_URL: engine.config.database.url!,
        TEMPORAL_ADDRESS: temporalAddress(engine.config),
        TEMPORAL_NAMESPACE: engine.config.temporal.namespace,
        TEMPORAL_PAYLOAD_KEYS: formatPayloadKeys(payloadKeys(engine.config)),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

async function cliJson(args: string[], input = ''): Promise<any> {
  const { code, stdout, stderr } = await cli(args, input);
  // The error it printed, should it fail.
  expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(stdout);
}

const entriesIn = (applicationId: string | null) =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM audit_log
    WHERE application_id IS NOT DISTINCT FROM ${applicationId}`);

/** Every entry of a query, newest first, walking its cursor pages. */
async function allEntries(get: (p: string) => Promise<{ status: number; body: any }>, query = '') {
  const entries: Entry[] = [];
  let after = '';
  for (;;) {
    const res = await get(`${LOG}?per_page=100${query}${after}`);
    expect(res.status).toBe(200);
    entries.push(...(res.body as Page).data);
    if (!res.body.has_more) return entries;
    after = `&starting_after=${entries.at(-1)!.id}`;
  }
}

/** A dashboard account of `applicationId`, signed in from `address`: its id and headers. */
async function dashboardSession(applicationId: string, email: string, address: string) {
  const account = await createDashboardAccount(engine.pool, {
    applicationId,
    email,
    password: PASSWORD,
  });
  const signedIn = await clientFor(engine.url, null).post(
    '/dashboard/api/session',
    { email, password: PASSWORD },
    { 'x-forwarded-for': address },
  );
  expect(signedIn.status).toBe(200);
  const headers = {
    cookie: (signedIn.headers.get('set-cookie') ?? '').split(';')[0]!,
    'x-csrf-token': signedIn.body.csrf_token as string,
    'x-forwarded-for': address,
  };
  return { id: account!.id, headers };
}

describe('the command line', () => {
  it('records each change with the command line as its actor, and no secret', async () => {
    const created = await cliJson(['apps', 'create', '--name', 'Audited Ltd', '--currency', 'SLE']);
    const appId = created.application.id as string;
    await cliJson([
      'apps',
      'update',
      '--app',
      appId,
      '--fee',
      'card=150',
      '--escrow-fee-bps',
      '25',
    ]);
    const credential = await cliJson(['credentials', 'create', '--app', appId, '--mode', 'live']);
    await cliJson(['credentials', 'revoke', '--api-key', credential.api_key]);
    const account = await cliJson(
      [
        'dashboard-users',
        'create',
        '--app',
        appId,
        '--email',
        'cli@audited.test',
        '--password-stdin',
      ],
      `${PASSWORD}\n`,
    );
    expect(
      await cliJson(['dashboard-users', 'revoke-sessions', '--email', 'cli@audited.test']),
    ).toEqual({ email: 'cli@audited.test', revoked_sessions: 0 });
    const madeAdmin = await cliJson(['admins', 'create', '--name', 'Audited Admin']);
    await cliJson(['admins', 'revoke', '--admin', madeAdmin.admin.id]);
    // A refusal changes nothing and records nothing.
    const before = await entriesIn(appId);
    expect((await cli(['credentials', 'revoke', '--api-key', 'pk_live_nope'])).code).toBe(2);
    expect(await entriesIn(appId)).toBe(before);

    const admin = asAdmin(await newAdmin());
    const ofApp = await allEntries(admin.get, `&application_id=${appId}`);
    expect(ofApp.map((e) => [e.action, e.target.type]).reverse()).toEqual([
      ['application.created', 'application'],
      ['credential.created', 'credential'],
      ['credential.created', 'credential'],
      ['application.updated', 'application'],
      ['credential.created', 'credential'],
      ['credential.revoked', 'credential'],
      ['dashboard_account.created', 'dashboard_account'],
      ['dashboard_account.sessions_revoked', 'dashboard_account'],
    ]);
    for (const entry of ofApp) {
      expect(entry.actor).toEqual(CLI_ACTOR);
      expect(entry.ip).toBeNull();
    }
    const byAction = (action: string) => ofApp.filter((e) => e.action === action);
    expect(byAction('application.created')[0]!.target.id).toBe(appId);
    expect(byAction('application.updated')[0]!.details).toEqual({
      changes: { escrow_fee_bps: 25, fees: { card: 150 } },
    });
    const [revoked] = byAction('credential.revoked');
    expect(byAction('credential.created').map((e) => e.target.id)).toContain(revoked!.target.id);
    expect(byAction('dashboard_account.created')[0]).toMatchObject({
      target: { id: account.dashboard_user.id },
      details: { email: 'cli@audited.test' },
    });

    // The admins are the platform's: in no application, seen by admins.
    const admins = await allEntries(admin.get, '&action=admin.created');
    expect(admins.find((e) => e.target.id === madeAdmin.admin.id)).toMatchObject({
      actor: CLI_ACTOR,
      details: { name: 'Audited Admin' },
    });
    const adminRevoked = await allEntries(admin.get, '&action=admin.revoked');
    expect(adminRevoked.map((e) => e.target.id)).toContain(madeAdmin.admin.id);

    // What the command line printed once stays out of the log.
    const text = JSON.stringify([...ofApp, ...admins, ...adminRevoked]);
    for (const secret of [
      created.credentials.test.secret_key,
      created.credentials.test.api_key,
      created.credentials.live.secret_key,
      credential.secret_key,
      credential.api_key,
      madeAdmin.secret_key,
      madeAdmin.api_key,
      PASSWORD,
    ]) {
      expect(text).not.toContain(secret);
    }
  });
});

describe('operators resolving a stuck payment', () => {
  async function pendingDeposit(): Promise<{ walletId: string; id: string }> {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, { wallet_id: walletId, amount: 10_000 });
    expect(res.status).toBe(200);
    return { walletId, id: res.body.transaction_id as string };
  }
  const resolution = { outcome: 'failed', reason: 'The provider has no record', operator: 'Ada' };

  it('records the admin’s resolution with the admin, its address and the outcome; a refused one records nothing', async () => {
    const made = await newAdmin();
    const admin = asAdmin(made);
    const { walletId, id } = await pendingDeposit();
    const resolved = await admin.post(`/api/v1/admin/payments/${id}/resolve`, resolution);
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ id, status: 'failed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);

    const again = await admin.post(`/api/v1/admin/payments/${id}/resolve`, resolution);
    expect(again.status).toBe(400);

    const entries = (
      await api.get<Page>(`${LOG}?action=payment.resolved&actor_id=${made.admin.id}`)
    ).body.data;
    expect(entries).toEqual([
      {
        id: expect.any(String),
        at: expect.any(String),
        actor: { type: 'admin', id: made.admin.id, name: made.admin.name },
        action: 'payment.resolved',
        target: { type: 'transaction', id },
        ip: admin.address,
        details: { ...resolution, force: false, transaction_type: 'mobile_money_deposit' },
      },
    ]);
    // Written with the settlement: the payment failed in the same transaction.
    const written = await engine.pool.maybeOne(sql.type(z.object({ status: z.string() }))`
      SELECT t.status FROM audit_log a JOIN transactions t ON t.id::text = a.target_id
      WHERE a.id = ${entries[0]!.id} AND a.xmin = t.xmin`);
    expect(written?.status).toBe('failed');
    await assertLedgerInvariant(engine.pool);
  });

  it('records the command line’s resolution with the command line as its actor', async () => {
    const { id } = await pendingDeposit();
    const printed = await cliJson([
      'payments',
      'resolve',
      '--id',
      id,
      '--outcome',
      'failed',
      '--reason',
      resolution.reason,
      '--operator',
      'Grace',
    ]);
    expect(printed).toMatchObject({ id, status: 'failed' });
    const entries = (await api.get<Page>(`${LOG}?action=payment.resolved`)).body.data;
    expect(entries.find((e) => e.target.id === id)).toMatchObject({
      actor: CLI_ACTOR,
      ip: null,
      details: { outcome: 'failed', operator: 'Grace', force: false },
    });
  });
});

describe('GET /api/v1/audit-log', () => {
  it('shows application credentials their application’s entries only, and admins every one', async () => {
    const mine = await api.post(SUBSCRIPTIONS, {
      url: `${HOOK}/mine`,
      events: ['deposit.completed'],
    });
    const theirs = await otherApi.post(SUBSCRIPTIONS, {
      url: `${HOOK}/theirs`,
      events: ['deposit.completed'],
    });
    expect([mine.status, theirs.status]).toEqual([201, 201]);

    const seenByMe = await allEntries(api.get);
    const seenByThem = await allEntries(otherApi.get);
    const ids = (entries: Entry[]) => entries.map((e) => e.target.id);
    expect(ids(seenByMe)).toContain(mine.body.id);
    expect(ids(seenByMe)).not.toContain(theirs.body.id);
    expect(ids(seenByThem)).toEqual([theirs.body.id]);
    expect(seenByThem[0]).toMatchObject({
      actor: { type: 'application', name: apiKeyHint(other.credentials.test.apiKey) },
      action: 'webhook_subscription.created',
      details: { url: `${HOOK}/theirs`, events: ['deposit.completed'], is_active: true },
    });
    // The signing secret, shown once in the answer, is not in the entry.
    expect(JSON.stringify(seenByThem)).not.toContain(theirs.body.secret as string);

    const admin = asAdmin(await newAdmin());
    const everything = await allEntries(admin.get);
    expect(ids(everything)).toEqual(expect.arrayContaining([mine.body.id, theirs.body.id]));
    expect(ids(await allEntries(admin.get, `&application_id=${other.id}`))).toEqual([
      theirs.body.id,
    ]);

    // application_id names only the credentials' own application.
    expect((await api.get(`${LOG}?application_id=${app.id}`)).status).toBe(200);
    const foreign = await api.get(`${LOG}?application_id=${other.id}`);
    expect(foreign.status).toBe(403);
    expect(Object.keys(foreign.body)).toEqual(['detail']);
    const notMine = await api.get(`${LOG}?starting_after=${seenByThem[0]!.id}`);
    expect(notMine.status).toBe(404);
    expect((await clientFor(engine.url, null).get(LOG)).status).toBe(401);
  });

  it('filters by action, actor and time, and walks cursor pages newest first', async () => {
    const made = await otherApi.post(SUBSCRIPTIONS, { url: HOOK, events: ['deposit.completed'] });
    const id = made.body.id as string;
    for (let i = 1; i <= 5; i += 1) {
      const res = await otherApi.request('PATCH', `${SUBSCRIPTIONS}/${id}`, {
        body: { url: `${HOOK}/${i}` },
      });
      expect(res.status).toBe(200);
    }
    const updates = `&action=webhook_subscription.updated`;
    const first = await otherApi.get<Page>(`${LOG}?per_page=2${updates}`);
    expect(first.status).toBe(200);
    expect(first.body.per_page).toBe(2);
    expect(first.body.has_more).toBe(true);
    const urls = (page: Page) => page.data.map((e) => (e.details.changes as { url: string }).url);
    expect(urls(first.body)).toEqual([`${HOOK}/5`, `${HOOK}/4`]);
    const second = await otherApi.get<Page>(
      `${LOG}?per_page=2${updates}&starting_after=${first.body.data[1]!.id}`,
    );
    expect(urls(second.body)).toEqual([`${HOOK}/3`, `${HOOK}/2`]);
    const third = await otherApi.get<Page>(
      `${LOG}?per_page=2${updates}&starting_after=${second.body.data[1]!.id}`,
    );
    expect(urls(third.body)).toEqual([`${HOOK}/1`]);
    expect(third.body.has_more).toBe(false);

    const all = await allEntries(otherApi.get, updates);
    expect(all).toHaveLength(5);
    const actorId = all[0]!.actor.id;
    expect((await allEntries(otherApi.get, `&actor_id=${actorId}`)).length).toBeGreaterThan(5);
    expect(await allEntries(otherApi.get, '&actor_id=someone-else')).toEqual([]);
    const third0 = all[2]!;
    const since = await allEntries(otherApi.get, `${updates}&created[gte]=${third0.at}`);
    expect(since.map((e) => e.id)).toEqual(all.slice(0, 3).map((e) => e.id));
    const until = await allEntries(otherApi.get, `${updates}&created[lt]=${third0.at}`);
    expect(until.map((e) => e.id)).toEqual(all.slice(3).map((e) => e.id));
    expect(await allEntries(otherApi.get, `${updates}&created[gte]=2999-01-01`)).toEqual([]);

    for (const bad of [
      'action=Created',
      'per_page=101',
      'created[gte]=yesterday',
      'starting_after=x',
    ]) {
      const res = await otherApi.get(`${LOG}?${bad}`);
      expect(res.status).toBe(422);
      expect(Object.keys(res.body)).toEqual(['detail']);
    }
  });
});

describe('the dashboard', () => {
  it('records a dashboard account’s changes with its email and address, and shows the log', async () => {
    const address = '203.0.113.77';
    const { id: accountId, headers } = await dashboardSession(
      app.id,
      'auditor@merchant.test',
      address,
    );
    const anonymous = clientFor(engine.url, null);
    const made = await anonymous.post('/dashboard/api/test/credentials', {}, headers);
    expect(made.status).toBe(201);
    const revoked = await anonymous.post(
      `/dashboard/api/test/credentials/${made.body.id}/revoke`,
      undefined,
      headers,
    );
    expect(revoked.status).toBe(200);
    const hook = await anonymous.post(
      '/dashboard/api/test/v1/webhooks/subscriptions',
      { url: `${HOOK}/dashboard`, events: ['deposit.completed'] },
      headers,
    );
    expect(hook.status).toBe(201);

    const shown = await anonymous.get<Page>(
      `/dashboard/api/test/v1/audit-log?actor_id=${accountId}`,
      headers,
    );
    expect(shown.status).toBe(200);
    const actor = { type: 'dashboard_account', id: accountId, name: 'auditor@merchant.test' };
    expect(shown.body.data.map((e) => [e.action, e.target.id, e.actor, e.ip])).toEqual([
      ['webhook_subscription.created', hook.body.id, actor, address],
      ['credential.revoked', made.body.id, actor, address],
      ['credential.created', made.body.id, actor, address],
    ]);
    const text = JSON.stringify(shown.body);
    for (const secret of [made.body.secret_key, made.body.api_key, hook.body.secret]) {
      expect(text).not.toContain(secret as string);
    }
  });
});

describe('changes made inside a workflow', () => {
  it('records a refund by key and dispute evidence from the dashboard, each with its change', async () => {
    const { walletId } = await createUserWithWallet(usd);
    const deposit = await usd.post('/api/v1/transactions/wallet/card-deposit', {
      wallet_id: walletId,
      amount: 50,
      payment_method_id: 'pm_card_visa',
    });
    expect(deposit.body.status).toBe('completed');
    const refund = await usd.post(`/api/v1/transactions/${deposit.body.id}/refund`, {
      amount: 20,
      reason: 'duplicate',
    });
    expect(refund.status).toBe(200);
    expect(await balanceOf(engine.pool, walletId)).toBe(3_000n);

    const dispute = await usd.post('/api/v1/testing/simulate-dispute', {
      transaction_id: deposit.body.id,
    });
    expect(dispute.status).toBe(200);
    // From the dashboard: the same route, its session's account the actor.
    const session = await dashboardSession(usdApp.id, 'disputes@merchant.test', '203.0.113.88');
    const evidence = await clientFor(engine.url, null).post(
      `/dashboard/api/test/v1/disputes/${dispute.body.id}/evidence`,
      { text: 'Signed delivery receipt' },
      session.headers,
    );
    expect(evidence.status).toBe(200);
    expect(evidence.body.status).toBe('under_review');

    const entries = await allEntries(usd.get);
    const actor = { type: 'application', name: apiKeyHint(usdApp.credentials.test.apiKey) };
    expect(entries.find((e) => e.action === 'refund.created')).toMatchObject({
      actor,
      target: { type: 'refund', id: refund.body.id },
      details: { deposit_id: deposit.body.id, amount: '2000', reason: 'duplicate' },
    });
    expect(entries.find((e) => e.action === 'dispute.evidence_submitted')).toMatchObject({
      actor: { type: 'dashboard_account', id: session.id, name: 'disputes@merchant.test' },
      ip: '203.0.113.88',
      target: { type: 'dispute', id: dispute.body.id },
      details: { transaction_id: deposit.body.id, characters: 23 },
    });
    await assertLedgerInvariant(engine.pool);
  });
});

describe('reconciliation', () => {
  /** An open amount mismatch of a new card deposit, as a run records it (minor units). */
  async function openException(theirs: bigint): Promise<{ id: string; walletId: string }> {
    const { walletId } = await createUserWithWallet(usd);
    const deposit = await usd.post('/api/v1/transactions/wallet/card-deposit', {
      wallet_id: walletId,
      amount: 100,
      payment_method_id: 'pm_card_visa',
    });
    expect(deposit.body.status).toBe('completed');
    const id = randomUUID();
    const side = (amount: bigint, status: string) => ({
      amount: amount.toString(),
      currency: 'USD',
      status,
    });
    await engine.pool.query(sql.unsafe`
      INSERT INTO recon_exceptions (id, application_id, mode, provider, identity, kind,
        transaction_id, provider_reference, ours, theirs)
      VALUES (${id}, ${usdApp.id}, 'test', 'card', ${`amount_mismatch:${id}`}, 'amount_mismatch',
        ${deposit.body.id as string}, ${`ref-${id}`},
        ${sql.jsonb(side(100_00n, 'completed'))},
        ${sql.jsonb({ ...side(theirs, 'succeeded'), booked_at: new Date().toISOString() })})`);
    return { id, walletId };
  }

  it('records an admin’s adjustment with the money it moved, and acceptances by admins and keys', async () => {
    const made = await newAdmin();
    const admin = asAdmin(made);
    const adjusted = await openException(100_25n);
    const note = 'The provider collected 0.25 more';
    const res = await admin.post(`/api/v1/reconciliation/exceptions/${adjusted.id}/resolve`, {
      action: 'adjust',
      note,
    });
    expect(res.status).toBe(200);
    expect(await balanceOf(engine.pool, adjusted.walletId)).toBe(100_25n);

    const one = await openException(100_10n);
    const accepted = await usd.post(`/api/v1/reconciliation/exceptions/${one.id}/resolve`, {
      action: 'accept',
      note: 'Known rounding',
    });
    expect(accepted.status).toBe(200);
    const [a, b] = [await openException(100_01n), await openException(100_02n)];
    const bulk = await admin.post('/api/v1/reconciliation/exceptions/resolve', {
      ids: [a.id, b.id],
      action: 'accept',
      note: 'Both explained',
    });
    expect(bulk.status).toBe(200);

    const entries = await allEntries(usd.get);
    const of = (id: string) => entries.filter((e) => e.target.id === id);
    const adminActor = { type: 'admin', id: made.admin.id, name: made.admin.name };
    expect(of(adjusted.id)).toEqual([
      expect.objectContaining({
        actor: adminActor,
        action: 'reconciliation_exception.adjusted',
        target: { type: 'reconciliation_exception', id: adjusted.id },
        ip: admin.address,
        details: expect.objectContaining({ note, amount: '25', currency: 'USD' }),
      }),
    ]);
    expect(of(one.id)).toEqual([
      expect.objectContaining({
        actor: {
          type: 'application',
          id: expect.any(String),
          name: apiKeyHint(usdApp.credentials.test.apiKey),
        },
        action: 'reconciliation_exception.accepted',
        details: { note: 'Known rounding' },
      }),
    ]);
    for (const id of [a.id, b.id]) {
      expect(of(id)).toEqual([
        expect.objectContaining({
          actor: adminActor,
          action: 'reconciliation_exception.accepted',
          details: { note: 'Both explained' },
        }),
      ]);
    }
    // A refused resolution records nothing.
    const again = await admin.post(`/api/v1/reconciliation/exceptions/${a.id}/resolve`, {
      action: 'accept',
      note: 'Again',
    });
    expect(again.status).toBe(400);
    expect(of(a.id)).toHaveLength(1);
    expect((await allEntries(usd.get)).filter((e) => e.target.id === a.id)).toHaveLength(1);
    await assertLedgerInvariant(engine.pool);
  });

  it('records an uploaded settlement file and a run started', async () => {
    const form = new FormData();
    form.append('provider', 'card');
    const csv =
      'provider_reference,booked_at,amount,currency,fee,direction,status\n' +
      `ref-audit,${new Date(Date.now() - 3_600_000).toISOString()},1.00,USD,0.00,in,succeeded\n`;
    form.append('file', new Blob([csv], { type: 'text/csv' }), 'settlement.csv');
    const response = await fetch(`${engine.url}/api/v1/reconciliation/imports`, {
      method: 'POST',
      headers: {
        'api-key': usdApp.credentials.test.apiKey,
        'secret-key': usdApp.credentials.test.secretKey,
      },
      body: form,
    });
    expect(response.status).toBe(201);
    const imported = (await response.json()) as { id: string };
    const run = await usd.post('/api/v1/reconciliation/runs', {
      provider: 'card',
      from: new Date(Date.now() - 2 * 3_600_000).toISOString(),
      to: new Date(Date.now() - 60_000).toISOString(),
      import_id: imported.id,
    });
    expect(run.status).toBe(202);

    const entries = await allEntries(usd.get);
    expect(entries.find((e) => e.target.id === imported.id)).toMatchObject({
      action: 'reconciliation_import.created',
      target: { type: 'reconciliation_import' },
      details: { provider: 'card', rows: 1 },
    });
    expect(entries.find((e) => e.target.id === run.body.id)).toMatchObject({
      action: 'reconciliation_run.started',
      target: { type: 'reconciliation_run' },
      details: { provider: 'card', import_id: imported.id },
    });
  });
});

describe('webhook redeliveries', () => {
  it('records an event sent again, with the subscriptions it went to', async () => {
    const sub = await hooked.post(SUBSCRIPTIONS, {
      url: receiver.url('/again'),
      events: ['transfer.completed'],
    });
    expect(sub.status).toBe(201);
    const from = (await createFundedWallet(hooked, engine.pool, 10_000n)).walletId;
    const to = (await createUserWithWallet(hooked)).walletId;
    const sent = (await transfer(hooked, from, to, 1.25)).id as string;
    const eventId = await engine.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM events WHERE transaction_id = ${sent} AND type = 'transfer.completed'`);
    const res = await hooked.post(`/api/v1/events/${eventId}/redeliver`, {
      subscription_id: sub.body.id,
    });
    expect(res.status).toBe(202);
    expect(res.body.deliveries).toHaveLength(2);
    // Both deliveries arrive: nothing is left running when the engine stops.
    const arrived = await pollUntil(
      () => receiver.received.filter((r) => r.payload?.id === eventId).length,
      (n) => n === 2,
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    expect(arrived).toBe(2);

    const [entry, ...rest] = await allEntries(hooked.get, '&action=event.redelivered');
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({
      actor: { type: 'application' },
      target: { type: 'event', id: eventId },
      details: { subscription_ids: [sub.body.id] },
    });
  });
});
