import { sql } from 'slonik';
import { z } from 'zod';
import { startApi, type RunningApi } from '../../src/api/server';
import { createAdmin, type CreatedAdmin } from '../../src/db/admins';
import { dashboardAnalytics } from '../../src/db/analytics';
import { admitAttempt, clear, lockedUntil, settleAttempt } from '../../src/db/auth-lockout';
import { createLogger } from '../../src/observability/logger';
import { assertLedgerInvariant, fundWallet } from '../support/database';
import { createTestApp } from '../support/engine';
import { clientFor, createUserWithWallet, type ApiClient } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { awaitRoomInWindow } from '../support/rate-limit';

/**
 * The analytics of docs/api.md after real money movements through the API: the application's
 * dashboard and the platform admins' figures, to the cent; admin credentials, the 403s both
 * ways, and the per-address lockout shared by two API processes through Postgres.
 */
jest.setTimeout(120_000);

const engine = useTestEngine({ env: { TRUST_PROXY: 'true' } });
const { app, api } = useTestApp(engine, {
  // 1.5% on mobile-money deposits; 2.5% + 0.10 on each escrow release.
  settings: { feeBps: { mobile_money: 150 }, escrowFeeBps: 250, escrowFeeFixed: 10n },
});
/** A second API process on the same database, trusting one proxy like the first. */
let second: RunningApi;
/** A third API process on the same database that trusts no proxy. */
let direct: RunningApi;

const DASHBOARD = '/api/v1/analytics/dashboard';
const ADMIN = '/api/v1/transactions/admin/analytics';

beforeAll(async () => {
  const quiet = createLogger('silent');
  second = await startApi(engine.config, quiet, engine.config.database.url!);
  direct = await startApi(
    { ...engine.config, api: { ...engine.config.api, trustProxy: 0 } },
    quiet,
    engine.config.database.url!,
  );
});
afterAll(async () => {
  await second?.close();
  await direct?.close();
});

/** The body of a 200 (any other status fails with the body shown). */
function ok(reply: { status: number; body: unknown }): any {
  expect({ status: reply.status, body: reply.status === 200 ? null : reply.body }).toEqual({
    status: 200,
    body: null,
  });
  return reply.body;
}

/** Admin calls are rate-limited at 5 a minute per admin: each test takes a fresh admin. */
async function newAdmin(): Promise<CreatedAdmin> {
  return createAdmin(engine.pool, `ops-${Math.random().toString(36).slice(2, 8)}`);
}

function adminHeaders(admin: CreatedAdmin, address?: string): Record<string, string> {
  return {
    'api-key': admin.api_key,
    'secret-key': admin.secret_key,
    ...(address ? { 'x-forwarded-for': address } : {}),
  };
}

const anonymous = (url = engine.url) => clientFor(url, null);

function utcDay(offsetDays: number, from = new Date()): string {
  return new Date(from.getTime() + offsetDays * 86_400_000).toISOString().slice(0, 10);
}

describe('GET /api/v1/analytics/dashboard', () => {
  it('is all zeros with 14 quiet days before any payment', async () => {
    const body = ok(await api.get(DASHBOARD));
    expect(body).toEqual({
      currency: 'SLE',
      total_volume: 0,
      net_revenue: 0,
      transaction_count: 0,
      total_users: 0,
      active_users: 0,
      wallets: { total: 0, active: 0 },
      total_balance: 0,
      volume_chart: Array.from({ length: 14 }, (_, i) => ({
        date: utcDay(i - 13),
        volume: 0,
        count: 0,
      })),
      recent_activity: [],
    });
  });

  it('counts completed deposits, transfers and escrow with its fees, to the cent', async () => {
    const a = await createUserWithWallet(api);
    const b = await createUserWithWallet(api);
    const c = await createUserWithWallet(api);

    // A mobile-money deposit of 100.00 SLE, paid: fee 1.50 (1.5%) collected.
    const deposit = ok(
      await api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
        wallet_id: a.walletId,
        amount: 10_000,
      }),
    );
    expect(deposit.transaction.application_fee).toBe(150);
    ok(
      await api.post('/api/v1/testing/simulate-mobile-money-webhook', {
        transaction_id: deposit.transaction_id,
      }),
    );
    // Another left pending: not completed, not counted.
    ok(
      await api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
        wallet_id: a.walletId,
        amount: 5_000,
      }),
    );
    // Money from outside any payment record: in the balance, not in the volume.
    await fundWallet(engine.pool, a.walletId, 5_000n);

    ok(
      await api.post('/api/v1/transactions/wallet/transfer', {
        from_wallet_id: a.walletId,
        to_wallet_id: b.walletId,
        amount: 25.5,
      }),
    );
    // A hold of 40.00 released in full: 2.5% + 0.10 = 1.10 fee, 38.90 to B; the hold ends
    // completed (counted, as every completed record is).
    const hold = ok(await api.post('/api/v1/escrow/hold', { wallet_id: a.walletId, amount: 40 }));
    const release = ok(
      await api.post(`/api/v1/escrow/${hold.id}/release`, { recipient_wallet_id: b.walletId }),
    );
    expect(release).toMatchObject({ amount: 38.9, application_fee: 1.1 });
    // A hold of 10.00 refunded: the hold ends reversed (not counted), the refund completed.
    const refunded = ok(
      await api.post('/api/v1/escrow/hold', { wallet_id: a.walletId, amount: 10 }),
    );
    ok(await api.post(`/api/v1/escrow/${refunded.id}/refund`));
    ok(await api.post(`/api/v1/users/${c.userId}/disable`));

    // Outside the scope: the same application's Live Mode, and another application.
    const live = clientFor(engine.url, app, 'live');
    const l1 = await createUserWithWallet(live);
    const l2 = await createUserWithWallet(live);
    await fundWallet(engine.pool, l1.walletId, 100n);
    ok(
      await live.post('/api/v1/transactions/wallet/transfer', {
        from_wallet_id: l1.walletId,
        to_wallet_id: l2.walletId,
        amount: 1,
      }),
    );
    const other = await createTestApp(engine.pool, { currency: 'USD' });
    const otherApi = clientFor(engine.url, other);
    const o1 = await createUserWithWallet(otherApi);
    const o2 = await createUserWithWallet(otherApi);
    await fundWallet(engine.pool, o1.walletId, 1_000n);
    ok(
      await otherApi.post('/api/v1/transactions/wallet/transfer', {
        from_wallet_id: o1.walletId,
        to_wallet_id: o2.walletId,
        amount: 7.77,
      }),
    );

    const body = ok(await api.get(DASHBOARD));
    // Completed: deposit 100.00 + transfer 25.50 + hold 40.00 + release 38.90 + refund 10.00.
    expect(body).toMatchObject({
      currency: 'SLE',
      total_volume: 214.4,
      net_revenue: 2.6,
      transaction_count: 5,
      total_users: 3,
      active_users: 2,
      wallets: { total: 3, active: 2 },
      // A: 100 + 50 - 25.50 - 40 = 84.50; B: 25.50 + 38.90 = 64.40; C: 0.
      total_balance: 148.9,
    });
    // 14 UTC days, oldest first, quiet ones at 0, today last with everything.
    expect(body.volume_chart).toEqual(
      Array.from({ length: 14 }, (_, i) =>
        i === 13
          ? { date: utcDay(0), volume: 214.4, count: 5 }
          : { date: utcDay(i - 13), volume: 0, count: 0 },
      ),
    );
    // The 10 newest records, exactly as the transactions API shows them.
    const listed = ok(await api.get('/api/v1/transactions/?per_page=10'));
    expect(listed.data).toHaveLength(7);
    expect(body.recent_activity).toEqual(listed.data);

    // The Live Mode and the other application see only their own.
    expect(ok(await live.get(DASHBOARD))).toMatchObject({
      currency: 'SLE',
      total_volume: 1,
      net_revenue: 0,
      transaction_count: 1,
      total_users: 2,
      total_balance: 1,
    });
    expect(ok(await otherApi.get(DASHBOARD))).toMatchObject({
      currency: 'USD',
      total_volume: 7.77,
      transaction_count: 1,
      total_balance: 10,
    });
    await assertLedgerInvariant(engine.pool);

    // What the trigger kept, payment by payment and status by status, is what a recount of
    // every record gives.
    const rollup = () =>
      engine.pool.anyFirst(sql.type(z.object({ row: z.string() }))`
        SELECT concat_ws(' ', application_id, mode, day, currency, transaction_type, total_count,
          completed_count, completed_volume, fees) AS row
        FROM analytics_daily WHERE total_count <> 0 ORDER BY 1`);
    const kept = await rollup();
    expect(kept).toHaveLength(7);
    await engine.pool.query(sql.unsafe`SELECT analytics_daily_rebuild()`);
    expect(await rollup()).toEqual(kept);

    // A record moved to another day (an update that changes its rollup row, not only its
    // status) leaves one day's row and joins the other's, and back.
    const moveHold = (shift: string) =>
      engine.pool.query(sql.unsafe`
        UPDATE transactions SET created_at = created_at + ${shift}::interval WHERE id = ${hold.id}`);
    await moveHold('-3 days');
    const moved = await rollup();
    expect(moved).not.toEqual(kept);
    await engine.pool.query(sql.unsafe`SELECT analytics_daily_rebuild()`);
    expect(await rollup()).toEqual(moved);
    await moveHold('3 days');
    expect(await rollup()).toEqual(kept);
  });

  it('the chart walks with the date: tomorrow, today’s payments are the day before last', async () => {
    const tomorrow = new Date(Date.now() + 86_400_000);
    const figures = await dashboardAnalytics(
      engine.pool,
      { applicationId: app.id, mode: 'test' },
      tomorrow,
    );
    expect(figures.volume_chart.map((d) => d.date)).toEqual(
      Array.from({ length: 14 }, (_, i) => utcDay(i - 13, tomorrow)),
    );
    expect(figures.volume_chart[12]).toEqual({ date: utcDay(0), volume: 21_440n, count: 5 });
    expect(figures.volume_chart[13]).toEqual({ date: utcDay(1), volume: 0n, count: 0 });
    expect(figures.total_volume).toBe(21_440n);
  });

  it('refuses admin credentials (403) and missing ones (401)', async () => {
    const admin = await newAdmin();
    const asAdmin = await anonymous().get(DASHBOARD, adminHeaders(admin));
    expect(asAdmin.status).toBe(403);
    expect(asAdmin.body.detail).toMatch(/Admin credentials cannot be used/);
    expect((await anonymous().get(DASHBOARD)).status).toBe(401);
  });
});

describe('GET /api/v1/transactions/admin/analytics', () => {
  it('answers across applications, and per application, mode and days', async () => {
    const admin = await newAdmin();
    const client = anonymous();
    const all = ok(await client.get(ADMIN, adminHeaders(admin, '192.0.2.10')));
    // 7 records of the application in Test Mode, 1 in Live Mode, 1 of the other application.
    expect(all).toEqual({
      success_rate: Math.round((7 / 9) * 10_000) / 10_000,
      average_amount: { SLE: 35.9, USD: 7.77 },
      total_count: 9,
      volume_by_type: {
        escrow_hold: { SLE: 40 },
        escrow_refund: { SLE: 10 },
        escrow_release: { SLE: 38.9 },
        mobile_money_deposit: { SLE: 100 },
        transfer: { SLE: 26.5, USD: 7.77 },
      },
      volume_by_currency: { SLE: 215.4, USD: 7.77 },
    });
    const scoped = ok(
      await client.get(
        `${ADMIN}?application_id=${app.id.toUpperCase()}&mode=test&from=${utcDay(-1)}&to=${utcDay(0)}`,
        adminHeaders(admin, '192.0.2.10'),
      ),
    );
    expect(scoped).toEqual({
      success_rate: 0.7143,
      average_amount: { SLE: 42.88 },
      total_count: 7,
      volume_by_type: {
        escrow_hold: { SLE: 40 },
        escrow_refund: { SLE: 10 },
        escrow_release: { SLE: 38.9 },
        mobile_money_deposit: { SLE: 100 },
        transfer: { SLE: 25.5 },
      },
      volume_by_currency: { SLE: 214.4 },
    });
    const live = ok(await client.get(`${ADMIN}?mode=live`, adminHeaders(admin, '192.0.2.10')));
    expect(live).toMatchObject({ total_count: 1, success_rate: 1, volume_by_currency: { SLE: 1 } });
    const none = ok(
      await client.get(`${ADMIN}?from=${utcDay(1)}`, adminHeaders(admin, '192.0.2.10')),
    );
    expect(none).toEqual({
      success_rate: 0,
      average_amount: {},
      total_count: 0,
      volume_by_type: {},
      volume_by_currency: {},
    });
    // Each call counted against the admin's own `admin` limit of 5 a minute.
    const counted = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT sum(count)::int AS n FROM admin_rate_limit_counters WHERE admin_id = ${admin.admin.id}
        AND category = 'admin'`);
    expect(counted).toBe(4);
  });

  it.each([
    ['application_id=nope', 'application_id'],
    ['mode=production', 'mode'],
    ['from=2026-02-30', 'from'],
    ['to=20260101', 'to'],
    ['from=2026-03-02&to=2026-03-01', 'from must not be after to'],
  ])('refuses %s with 422', async (query, mentioned) => {
    const admin = await newAdmin();
    const reply = await anonymous().get(`${ADMIN}?${query}`, adminHeaders(admin, '192.0.2.11'));
    expect(reply.status).toBe(422);
    expect(reply.body.detail).toContain(mentioned);
  });

  it('writes sums past 2^53 minor units exactly, as decimal numbers', async () => {
    const big = await createTestApp(engine.pool);
    // Two days of 2^53 + 1 minor units each: the platform's rollup, as the ledger's trigger keeps it.
    const huge = 2n ** 53n + 1n;
    for (const day of [utcDay(-1), utcDay(0)]) {
      await engine.pool.query(sql.unsafe`
        INSERT INTO analytics_daily (application_id, mode, day, currency, transaction_type,
          total_count, completed_count, completed_volume, fees)
        VALUES (${big.id}, 'test', ${day}::date, 'SLE', 'transfer', 1, 1, ${huge.toString()}::int8, 0)`);
    }
    const admin = await newAdmin();
    const reply = await fetch(`${engine.url}${ADMIN}?application_id=${big.id}`, {
      headers: adminHeaders(admin, '192.0.2.13'),
    });
    const text = await reply.text();
    expect({ status: reply.status, text }).toEqual({ status: 200, text: expect.any(String) });
    // 2 * (2^53 + 1) = 18014398509481986 minor units; their average 9007199254740993.
    expect(text).toBe(
      '{"success_rate":1,"average_amount":{"SLE":90071992547409.93},"total_count":2,' +
        '"volume_by_type":{"transfer":{"SLE":180143985094819.86}},' +
        '"volume_by_currency":{"SLE":180143985094819.86}}',
    );
  });

  it('refuses application credentials with 403, and limits an admin to 5 calls a minute', async () => {
    const asApp = await api.get(ADMIN, { 'x-forwarded-for': '192.0.2.12' });
    expect(asApp.status).toBe(403);
    expect(asApp.body).toEqual({ detail: 'This endpoint needs admin credentials' });
    const admin = await newAdmin();
    const statuses: number[] = [];
    let last: Awaited<ReturnType<ApiClient['get']>> | undefined;
    await awaitRoomInWindow(engine.pool);
    for (let i = 0; i < 6; i += 1) {
      last = await anonymous().get(ADMIN, adminHeaders(admin, '192.0.2.12'));
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    // A 403 and a rate limit are not failed authentications: the address is not locked.
    const locked = await engine.pool.maybeOne(
      sql.unsafe`SELECT 1 FROM auth_lockouts WHERE address = '192.0.2.12'`,
    );
    expect(locked).toBeNull();
  });

  it('locks an address out after 5 failed authentications, across API processes, valid credentials too', async () => {
    const admin = await newAdmin();
    const address = '198.51.100.50';
    const bad = { ...adminHeaders(admin, address), 'secret-key': 'sk_admin_wrong' };
    // Four failures on the first process, the fifth on the second: one count in Postgres.
    for (let i = 0; i < 4; i += 1) {
      const reply = await anonymous().get(ADMIN, i % 2 ? { 'x-forwarded-for': address } : bad);
      expect(reply.status).toBe(401);
    }
    const fifth = await anonymous(second.url).get(ADMIN, bad);
    expect(fifth.status).toBe(429);
    expect(Number(fifth.headers.get('retry-after'))).toBe(900);

    for (const url of [engine.url, second.url]) {
      const valid = await anonymous(url).get(ADMIN, adminHeaders(admin, address));
      expect(valid.status).toBe(429);
      expect(valid.body.detail).toMatch(/^Too many failed authentications from this address/);
      const retryAfter = Number(valid.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(850);
      expect(retryAfter).toBeLessThanOrEqual(900);
    }
    // Another address is not locked; application endpoints are not concerned.
    expect((await anonymous().get(ADMIN, adminHeaders(admin, '198.51.100.51'))).status).toBe(200);
    expect((await api.get(DASHBOARD, { 'x-forwarded-for': address })).status).toBe(200);
    const row = await engine.pool.one(sql.type(
      z.object({ failures: z.number(), locked: z.boolean() }),
    )`
      SELECT (SELECT count(*)::int FROM auth_failures WHERE scope = 'admin_api' AND address = ${address}) AS failures,
        EXISTS (SELECT 1 FROM auth_lockouts WHERE scope = 'admin_api' AND address = ${address}
                AND locked_until > now() + interval '14 minutes') AS locked`);
    expect(row).toEqual({ failures: 5, locked: true });

    // Lifted (an operator's clear), the address may authenticate again.
    await clear(engine.pool, 'admin_api', address);
    expect((await anonymous().get(ADMIN, adminHeaders(admin, address))).status).toBe(200);
  });

  it('forgets failures older than 15 minutes', async () => {
    const address = '198.51.100.70';
    /** One failed attempt: the lockout it started, in seconds, or null. */
    const recordFailure = async (pool: typeof engine.pool, scope: string, at: string) => {
      const admitted = await admitAttempt(pool, scope, at);
      if ('retryAfter' in admitted) throw new Error(`refused for ${admitted.retryAfter} seconds`);
      return settleAttempt(pool, scope, at, admitted.attempt, true);
    };
    for (let i = 0; i < 4; i += 1) {
      expect(await recordFailure(engine.pool, 'test_scope', address)).toBeNull();
    }
    await engine.pool.query(sql.unsafe`
      UPDATE auth_failures SET failed_at = now() - interval '16 minutes'
      WHERE scope = 'test_scope' AND address = ${address}`);
    expect(await recordFailure(engine.pool, 'test_scope', address)).toBeNull();
    expect(await lockedUntil(engine.pool, 'test_scope', address)).toBeNull();
    for (let i = 0; i < 3; i += 1) await recordFailure(engine.pool, 'test_scope', address);
    expect(await recordFailure(engine.pool, 'test_scope', address)).toBe(900);
    expect(await lockedUntil(engine.pool, 'test_scope', address)).toBeGreaterThan(890);
    // Scopes are apart: the admin endpoints do not see this one's lockout.
    expect(await lockedUntil(engine.pool, 'admin_api', address)).toBeNull();
  });

  it('believes X-Forwarded-For only as far as TRUST_PROXY says', async () => {
    const admin = await newAdmin();
    // Trusting one proxy: the address it saw is the rightmost; what the client wrote before it
    // is not believed.
    const spoofed = (n: number) => ({
      ...adminHeaders(admin, `203.0.113.${n}, 198.51.100.60`),
      'secret-key': 'sk_admin_wrong',
    });
    for (let i = 0; i < 5; i += 1) await anonymous().get(ADMIN, spoofed(i));
    expect((await anonymous().get(ADMIN, adminHeaders(admin, '198.51.100.60'))).status).toBe(429);
    expect((await anonymous().get(ADMIN, adminHeaders(admin, '203.0.113.1'))).status).toBe(200);

    // Trusting none: the header is ignored, the peer (the loopback) is the client, whatever
    // the header says; the locked address above is no one's here.
    const other = await newAdmin();
    expect(
      (await anonymous(direct.url).get(ADMIN, adminHeaders(other, '198.51.100.60'))).status,
    ).toBe(200);
    for (let i = 0; i < 5; i += 1) {
      await anonymous(direct.url).get(ADMIN, {
        ...adminHeaders(other, `192.0.2.${100 + i}`),
        'secret-key': 'sk_admin_wrong',
      });
    }
    const lockedPeer = await anonymous(direct.url).get(ADMIN, adminHeaders(other, '192.0.2.200'));
    expect(lockedPeer.status).toBe(429);
    const addresses = await engine.pool.anyFirst(sql.type(z.object({ address: z.string() }))`
      SELECT address FROM auth_lockouts WHERE scope = 'admin_api' AND locked_until > now()
        ORDER BY address`);
    expect(addresses).toEqual(['127.0.0.1', '198.51.100.60']);
    await clear(engine.pool, 'admin_api', '127.0.0.1');
    expect(
      (await anonymous(direct.url).get(ADMIN, adminHeaders(other, '192.0.2.200'))).status,
    ).toBe(200);
  });

  it('refuses a revoked admin with 401', async () => {
    const admin = await newAdmin();
    await engine.pool.query(
      sql.unsafe`UPDATE admins SET revoked_at = now() WHERE id = ${admin.admin.id}`,
    );
    const reply = await anonymous().get(ADMIN, adminHeaders(admin, '192.0.2.30'));
    expect(reply).toMatchObject({
      status: 401,
      body: { detail: 'Invalid admin credentials: this credential has been revoked' },
    });
  });
});
