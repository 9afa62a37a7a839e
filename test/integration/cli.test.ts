import { spawn } from 'node:child_process';
import path from 'node:path';
import { sql } from 'slonik';
import { z } from 'zod';
import { authenticateAdmin } from '../../src/db/admins';
import { authenticate, createCredential } from '../../src/db/credentials';
import type { DatabasePool } from '../../src/db/pool';
import { createTestDatabase, insertFundedWallet } from '../support/database';

/**
 * The command line of docs/cli.md, run exactly as documented (`npm run --silent cli -- ...`)
 * as a child process against a fresh database of its own. The tests of this file build on each
 * other in order: the application created first is updated, given credentials, listed, revoked.
 */
jest.setTimeout(180_000);

const root = path.resolve(__dirname, '..', '..');
let database: { url: string; pool: DatabasePool };

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => database?.pool.end());

type Run = { code: number | null; stdout: string; stderr: string };

function cli(...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'cli', '--', ...args], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A successful run: exit status 0 and exactly one JSON document on standard output. */
function succeeded(run: Run): any {
  expect({ code: run.code, stderr: run.code === 0 ? '' : run.stderr }).toEqual({
    code: 0,
    stderr: '',
  });
  const document: unknown = JSON.parse(run.stdout);
  expect(typeof document).toBe('object');
  expect(document).not.toBeNull();
  return document;
}

/** Everything the command line may write: applications and credentials, as text. */
async function snapshot(): Promise<string> {
  return database.pool.oneFirst(sql.type(z.object({ rows: z.string() }))`
    SELECT concat(
      (SELECT coalesce(json_agg(a ORDER BY a.id), '[]') FROM applications a)::text, E'\n',
      (SELECT coalesce(json_agg(c ORDER BY c.id), '[]') FROM credentials c)::text
    ) AS rows`);
}

/** A listed api_key shows the key itself or a recognisable part of it (its start and end). */
function identifies(listed: string, apiKey: string): boolean {
  if (listed === apiKey) return true;
  const [start, end] = listed.split('…');
  return (
    start !== undefined &&
    end !== undefined &&
    start.length >= 8 &&
    apiKey.startsWith(start) &&
    apiKey.endsWith(end)
  );
}

let appId: string;
let created: { test: Pair; live: Pair };
let extra: { api_key: string; secret_key: string; mode: string; expires_at: string | null };
type Pair = { api_key: string; secret_key: string };
type Listed = { api_key: string; mode: string; status: string; [field: string]: unknown };

describe('npm run --silent cli --', () => {
  it('apps create prints the application and a test and a live credential that authenticate', async () => {
    const out = succeeded(
      await cli('apps', 'create', '--name', 'Acme Payments', '--currency', 'USD'),
    );
    expect(out).toEqual({
      application: { id: expect.any(String), name: 'Acme Payments', base_currency: 'USD' },
      credentials: {
        test: { api_key: expect.any(String), secret_key: expect.any(String) },
        live: { api_key: expect.any(String), secret_key: expect.any(String) },
      },
    });
    appId = out.application.id;
    created = out.credentials;
    const strings = [
      created.test.api_key,
      created.test.secret_key,
      created.live.api_key,
      created.live.secret_key,
    ];
    expect(new Set(strings).size).toBe(4);
    for (const s of strings) expect(s.length).toBeGreaterThanOrEqual(24);

    const row = await database.pool.one(
      sql.type(
        z.object({ name: z.string(), base_currency: z.string() }),
      )`SELECT name, base_currency FROM applications WHERE id = ${appId}`,
    );
    expect(row).toEqual({ name: 'Acme Payments', base_currency: 'USD' });

    expect(
      await authenticate(database.pool, created.test.api_key, created.test.secret_key),
    ).toMatchObject({ ok: true, applicationId: appId, mode: 'test' });
    expect(
      await authenticate(database.pool, created.live.api_key, created.live.secret_key),
    ).toMatchObject({ ok: true, applicationId: appId, mode: 'live' });
    expect(
      await authenticate(database.pool, created.test.api_key, created.live.secret_key),
    ).toEqual({ ok: false, reason: 'invalid' });

    // Shown once, stored only as hashes.
    const stored = await snapshot();
    for (const s of strings) expect(stored.includes(s)).toBe(false);
  });

  it('apps update sets fees, rate limits and the escrow fee and prints the application with its settings', async () => {
    const out = succeeded(
      await cli(
        'apps',
        'update',
        '--app',
        appId,
        '--fee',
        'mobile_money=150',
        '--rate-limit',
        'transfers=100',
        '--escrow-fee-bps',
        '250',
        '--escrow-fee-fixed',
        '0.50',
      ),
    );
    expect(out.application).toMatchObject({
      id: appId,
      name: 'Acme Payments',
      base_currency: 'USD',
      escrow_fee_bps: 250,
      fees: { mobile_money: 150 },
      rate_limits: expect.objectContaining({ transfers: 100, default: 10 }),
    });
    expect(Number(out.application.escrow_fee_fixed)).toBe(0.5);

    const row = await database.pool.one(
      sql.type(
        z.object({
          escrow_fee_bps: z.number(),
          escrow_fee_fixed: z.bigint(),
          fee_bps: z.record(z.string(), z.number()),
          rate_limits: z.record(z.string(), z.number()),
        }),
      )`SELECT escrow_fee_bps, escrow_fee_fixed, fee_bps, rate_limits FROM applications WHERE id = ${appId}`,
    );
    expect(row).toEqual({
      escrow_fee_bps: 250,
      escrow_fee_fixed: 50n,
      fee_bps: { mobile_money: 150 },
      rate_limits: { transfers: 100 },
    });
  });

  it('apps update sets the money-out fees, card_payout and mobile_money_cashout', async () => {
    const out = succeeded(
      await cli(
        'apps',
        'update',
        '--app',
        appId,
        '--fee',
        'card_payout=75',
        '--fee',
        'mobile_money_cashout=200',
      ),
    );
    expect(out.application.fees).toMatchObject({ card_payout: 75, mobile_money_cashout: 200 });
    const fees = await database.pool.oneFirst(
      sql.type(z.object({ fee_bps: z.record(z.string(), z.number()) }))`
        SELECT fee_bps FROM applications WHERE id = ${appId}`,
    );
    expect(fees).toMatchObject({ card_payout: 75, mobile_money_cashout: 200 });
  });

  it('credentials create prints a new credential with its mode and expiry', async () => {
    const out = succeeded(
      await cli(
        'credentials',
        'create',
        '--app',
        appId,
        '--mode',
        'live',
        '--expires-at',
        '2030-01-01T00:00:00Z',
      ),
    );
    expect(out).toEqual({
      api_key: expect.any(String),
      secret_key: expect.any(String),
      mode: 'live',
      expires_at: '2030-01-01T00:00:00.000Z',
    });
    extra = out;
    expect(await authenticate(database.pool, extra.api_key, extra.secret_key)).toMatchObject({
      ok: true,
      applicationId: appId,
      mode: 'live',
    });
    const expiresAt = await database.pool.oneFirst(sql.type(
      z.object({ expires_at: z.string().nullable() }),
    )`SELECT expires_at FROM credentials WHERE application_id = ${appId} AND mode = 'live'
      AND expires_at IS NOT NULL`);
    expect(expiresAt).toBe('2030-01-01T00:00:00.000Z');
  });

  it('credentials create refuses a credential over MAX_CREDENTIALS_PER_MODE with status 2, writing nothing', async () => {
    const app = succeeded(await cli('apps', 'create', '--name', 'Capped', '--currency', 'SLE'));
    const before = await snapshot();
    process.env.MAX_CREDENTIALS_PER_MODE = '1';
    try {
      const run = await cli('credentials', 'create', '--app', app.application.id, '--mode', 'test');
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(
        'error: This application already has 1 active credentials in test mode, the most allowed: revoke one first',
      );
    } finally {
      delete process.env.MAX_CREDENTIALS_PER_MODE;
    }
    expect(await snapshot()).toBe(before);
  });

  it('credentials list shows api key, mode, status, last use and expiry of each, and no secret', async () => {
    // An expired credential, and a recorded use of the test credential.
    const expired = await createCredential(database.pool, {
      applicationId: appId,
      mode: 'test',
      expiresAt: '2020-01-01T00:00:00Z',
    });
    expect(
      await authenticate(database.pool, created.test.api_key, created.test.secret_key),
    ).toMatchObject({ ok: true });

    const run = await cli('credentials', 'list', '--app', appId);
    const out = succeeded(run);
    for (const secret of [
      created.test.secret_key,
      created.live.secret_key,
      extra.secret_key,
      expired.secret_key,
    ]) {
      expect(run.stdout.includes(secret)).toBe(false);
    }
    expect(run.stdout).not.toMatch(/secret/i);
    expect(Array.isArray(out.credentials)).toBe(true);
    const credentials = out.credentials as Listed[];
    expect(credentials).toHaveLength(4);
    for (const listed of credentials) {
      expect(listed).toEqual(
        expect.objectContaining({
          api_key: expect.any(String),
          mode: expect.stringMatching(/^(test|live)$/),
          status: expect.stringMatching(/^(active|revoked|expired)$/),
        }),
      );
      expect(Object.keys(listed)).toEqual(
        expect.arrayContaining(['api_key', 'mode', 'status', 'last_used', 'expires_at']),
      );
    }
    const find = (apiKey: string) => {
      const matches = credentials.filter((c) => identifies(c.api_key, apiKey));
      expect(matches).toHaveLength(1);
      return matches[0];
    };
    expect(find(created.test.api_key)).toMatchObject({
      mode: 'test',
      status: 'active',
      last_used: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      expires_at: null,
    });
    expect(find(created.live.api_key)).toMatchObject({
      mode: 'live',
      status: 'active',
      expires_at: null,
    });
    expect(find(extra.api_key)).toMatchObject({
      mode: 'live',
      status: 'active',
      expires_at: '2030-01-01T00:00:00.000Z',
    });
    expect(find(expired.api_key)).toMatchObject({
      mode: 'test',
      status: 'expired',
      last_used: null,
      expires_at: '2020-01-01T00:00:00.000Z',
    });
  });

  it('credentials revoke revokes by api key: the list shows it revoked and it no longer authenticates', async () => {
    const revoked = succeeded(
      await cli('credentials', 'revoke', '--api-key', created.live.api_key),
    );
    expect(revoked).toMatchObject({ mode: 'live', status: 'revoked' });
    expect(
      await authenticate(database.pool, created.live.api_key, created.live.secret_key),
    ).toEqual({ ok: false, reason: 'revoked' });

    const out = succeeded(await cli('credentials', 'list', '--app', appId));
    const statuses = (out.credentials as Listed[]).map((c) => ({
      live: identifies(c.api_key, created.live.api_key),
      status: c.status,
    }));
    expect(statuses.filter((s) => s.live)).toEqual([{ live: true, status: 'revoked' }]);
    expect(statuses.filter((s) => s.status === 'revoked')).toHaveLength(1);
  });

  it('rejects bad arguments with exit status 2, a message on stderr, no stdout and no change', async () => {
    const before = await snapshot();
    const cases: string[][] = [
      ['apps', 'frobnicate'],
      ['apps', 'create', '--currency', 'USD'],
      ['apps', 'create', '--name', 'Euro Shop', '--currency', 'EUR'],
      ['apps', 'create', '--name', 'Odd', '--currency', 'USD', '--colour', 'red'],
      ['credentials', 'create', '--app', appId, '--mode', 'x'],
      ['apps', 'update', '--app', appId, '--fee', 'mobile_money'],
      ['apps', 'update', '--app', appId, '--escrow-fee-bps', '1', '--fee', 'crypto=100'],
      ['credentials', 'revoke', '--api-key', 'pk_test_no_such_key'],
    ];
    const runs = await Promise.all(cases.map((args) => cli(...args)));
    const outcomes = runs.map((run, i) => ({
      args: cases[i]!.join(' '),
      code: run.code,
      stdout: run.stdout,
      stderrEmpty: run.stderr.trim() === '',
    }));
    expect(outcomes).toEqual(
      cases.map((args) => ({ args: args.join(' '), code: 2, stdout: '', stderrEmpty: false })),
    );
    expect(runs[1]!.stderr).toMatch(/--name/);
    expect(runs[2]!.stderr).toMatch(/--currency/);
    expect(runs[4]!.stderr).toMatch(/--mode/);
    expect(runs[5]!.stderr).toMatch(/--fee/);
    expect(await snapshot()).toBe(before);
  });
});

describe('npm run --silent cli -- admins', () => {
  const adminRows = () =>
    database.pool.oneFirst(sql.type(z.object({ rows: z.string() }))`
      SELECT coalesce(json_agg(a ORDER BY a.id), '[]')::text AS rows FROM admins a`);
  let first: { admin: { id: string; name: string }; api_key: string; secret_key: string };

  it('admins create prints the admin and its credential, which authenticates, stored only hashed', async () => {
    first = succeeded(await cli('admins', 'create', '--name', 'Platform Ops'));
    expect(first).toEqual({
      admin: { id: expect.any(String), name: 'Platform Ops' },
      api_key: expect.stringMatching(/^pk_admin_/),
      secret_key: expect.stringMatching(/^sk_admin_/),
    });
    expect(await authenticateAdmin(database.pool, first.api_key, first.secret_key)).toEqual({
      ok: true,
      adminId: first.admin.id,
    });
    // Not an application credential.
    expect(await authenticate(database.pool, first.api_key, first.secret_key)).toEqual({
      ok: false,
      reason: 'invalid',
    });
    const stored = await adminRows();
    expect(stored).toContain('Platform Ops');
    expect(stored.includes(first.api_key) || stored.includes(first.secret_key)).toBe(false);
  });

  it('admins list shows each admin with its key hint and status, never a secret; revoke ends it', async () => {
    const second = succeeded(await cli('admins', 'create', '--name', 'Night Shift'));
    const revoked = succeeded(await cli('admins', 'revoke', '--admin', first.admin.id));
    expect(revoked).toEqual({
      admin: { id: first.admin.id, name: 'Platform Ops', status: 'revoked' },
    });
    expect(await authenticateAdmin(database.pool, first.api_key, first.secret_key)).toEqual({
      ok: false,
      reason: 'revoked',
    });
    const byKey = succeeded(await cli('admins', 'revoke', '--api-key', second.api_key));
    expect(byKey.admin).toMatchObject({ id: second.admin.id, status: 'revoked' });

    const out = succeeded(await cli('admins', 'list'));
    expect(out.admins).toEqual([
      expect.objectContaining({ id: first.admin.id, name: 'Platform Ops', status: 'revoked' }),
      expect.objectContaining({ id: second.admin.id, name: 'Night Shift', status: 'revoked' }),
    ]);
    const listed = out.admins as { api_key: string }[];
    expect(identifies(listed[0]!.api_key, first.api_key)).toBe(true);
    const text = JSON.stringify(out);
    for (const secret of [first.secret_key, second.secret_key, first.api_key, second.api_key]) {
      expect(text.includes(secret)).toBe(false);
    }
  });

  it('rejects bad admins arguments with exit status 2 and no change', async () => {
    const before = await adminRows();
    const cases: string[][] = [
      ['admins', 'create'],
      ['admins', 'create', '--name', ' '],
      ['admins', 'revoke'],
      ['admins', 'revoke', '--admin', 'not-a-uuid'],
      ['admins', 'revoke', '--admin', '00000000-0000-4000-8000-000000000000'],
      ['admins', 'revoke', '--api-key', 'pk_admin_no_such_key'],
    ];
    const runs = await Promise.all(cases.map((args) => cli(...args)));
    expect(runs.map((run) => ({ code: run.code, stdout: run.stdout }))).toEqual(
      cases.map(() => ({ code: 2, stdout: '' })),
    );
    expect(runs[0]!.stderr).toMatch(/--name/);
    expect(runs[2]!.stderr).toMatch(/--admin ADMIN_ID or --api-key/);
    expect(await adminRows()).toBe(before);
  });
});

describe('npm run --silent cli -- apps update --currency', () => {
  const caller = (applicationId: string, mode: 'test' | 'live') => ({
    applicationId,
    mode,
    credentialId: '00000000-0000-4000-8000-000000000000',
  });

  /** The application's base currency and its wallets' currencies, as text. */
  async function currencies(applicationId: string): Promise<string> {
    return database.pool.oneFirst(sql.type(z.object({ rows: z.string() }))`
      SELECT concat(
        (SELECT base_currency FROM applications WHERE id = ${applicationId}), ' ',
        (SELECT string_agg(currency || ':' || balance, ',' ORDER BY id) FROM ledger_accounts
          WHERE application_id = ${applicationId} AND kind = 'user_wallet')
      ) AS rows`);
  }

  it('switches the application and every wallet of both modes while none holds money', async () => {
    const out = succeeded(await cli('apps', 'create', '--name', 'Switcher', '--currency', 'SLE'));
    const id = out.application.id as string;
    await insertFundedWallet(database.pool, caller(id, 'test'), 'SLE', 0n);
    await insertFundedWallet(database.pool, caller(id, 'live'), 'SLE', 0n);
    const switched = succeeded(await cli('apps', 'update', '--app', id, '--currency', 'USD'));
    expect(switched.application.base_currency).toBe('USD');
    expect(await currencies(id)).toBe('USD USD:0,USD:0');
  });

  it('changes nothing while a wallet holds money or a payment is open: exit status 2 and why', async () => {
    const out = succeeded(await cli('apps', 'create', '--name', 'Holder', '--currency', 'SLE'));
    const id = out.application.id as string;
    await insertFundedWallet(database.pool, caller(id, 'test'), 'SLE', 0n);
    await insertFundedWallet(database.pool, caller(id, 'live'), 'SLE', 500n);
    const before = await currencies(id);
    const held = await cli('apps', 'update', '--app', id, '--currency', 'USD', '--fee', 'card=50');
    expect({ code: held.code, stdout: held.stdout }).toEqual({ code: 2, stdout: '' });
    expect(held.stderr).toMatch(/wallet of the application holds money/);
    expect(await currencies(id)).toBe(before);
    const fees = await database.pool.oneFirst(sql.type(z.object({ fee_bps: z.unknown() }))`
      SELECT fee_bps FROM applications WHERE id = ${id}`);
    expect(fees).not.toHaveProperty('card', 50);

    const other = succeeded(await cli('apps', 'create', '--name', 'Open', '--currency', 'SLE'));
    const otherId = other.application.id as string;
    const wallet = await insertFundedWallet(database.pool, caller(otherId, 'test'), 'SLE', 0n);
    await database.pool.query(sql.unsafe`
      INSERT INTO transactions (id, application_id, mode, transaction_type, status, wallet_id,
        currency, amount)
      VALUES (gen_random_uuid(), ${otherId}, 'test', 'mobile_money_deposit', 'pending', ${wallet},
        'SLE', 100)`);
    const open = await cli('apps', 'update', '--app', otherId, '--currency', 'USD');
    expect({ code: open.code, stdout: open.stdout }).toEqual({ code: 2, stdout: '' });
    expect(open.stderr).toMatch(/payment of the application is still open/);
    expect(await currencies(otherId)).toBe('SLE SLE:0');
  });
});
