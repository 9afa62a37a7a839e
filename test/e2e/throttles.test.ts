import { sql } from 'slonik';
import { z } from 'zod';
import { createAdmin, type CreatedAdmin } from '../../src/db/admins';
import { updateApplication } from '../../src/db/applications';
import { createDashboardAccount } from '../../src/db/dashboard-accounts';
import { RATE_LIMIT_CATEGORIES } from '../../src/domain/types';
import { TOTAL_COUNTED_AHEAD } from '../../src/db/pages';
import { awaitRoomInWindow } from '../support/rate-limit';
import { createTestApp } from '../support/engine';
import { clientFor, createUserWithWallet, expectRateLimited } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

/**
 * The throttles, lockouts and caps the per-credential rate limits do not reach (docs/security.md
 * "Throttles and lockouts"): the 3-D Secure page, the dashboard, admin and sign-in, caps per
 * application and mode, bounded list totals. Low limits here: the defaults are the same rules.
 */
const LIMITS = {
  RATE_LIMIT_CARD_AUTHENTICATION_PAGE: '5',
  RATE_LIMIT_DASHBOARD_SIGNED_OUT: '10',
  RATE_LIMIT_DASHBOARD_ACCOUNT: '10',
  MAX_CREDENTIALS_PER_MODE: '3',
  MAX_WEBHOOK_SUBSCRIPTIONS_PER_MODE: '2',
};
const PASSWORD = 'correct horse battery staple';
const SESSION = '/dashboard/api/session';
const ADMIN = '/api/v1/transactions/admin/analytics';
const HOOKS = '/api/v1/webhooks/subscriptions';
/** Loopback only: the allowlist lets 127.0.0.1 through the SSRF guard; nothing is sent to it. */
const HOOK = 'http://127.0.0.1:9/hooks/wallet';

const engine = useTestEngine({
  env: { TRUST_PROXY: 'true', WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32', ...LIMITS },
});
const { app, api } = useTestApp(engine);

const anonymous = () => clientFor(engine.url, null);
const from = (address: string) => ({ 'x-forwarded-for': address });

const count = (query: ReturnType<typeof sql.unsafe>) =>
  engine.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM (${query}) AS q`,
  );

let accounts = 0;
/** A dashboard account of the application, its own so that its per-account count is its own. */
async function dashboardAccount(): Promise<string> {
  accounts += 1;
  const email = `ops${accounts}@throttle.test`;
  const account = await createDashboardAccount(engine.pool, {
    applicationId: app.id,
    email,
    password: PASSWORD,
  });
  if (!account) throw new Error('dashboard account not created');
  return email;
}

function signIn(email: string, address: string, password = PASSWORD) {
  return anonymous().post(SESSION, { email, password }, from(address));
}

/** Signed in: the headers that carry the session and its CSRF token. */
async function session(email: string, address: string): Promise<Record<string, string>> {
  const res = await signIn(email, address);
  expect(res.status).toBe(200);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
  return { cookie, 'x-csrf-token': res.body.csrf_token as string, ...from(address) };
}

describe('the sandbox 3-D Secure page', () => {
  const PAGE = '/api/v1/testing/card-authentication';

  it('limits each client address (an IPv6 client by its /64), both methods, with 429', async () => {
    await awaitRoomInWindow(engine.pool);
    for (let i = 0; i < 5; i += 1) {
      expect((await anonymous().get(`${PAGE}/pi_nope`, from('203.0.113.5'))).status).toBe(404);
    }
    expectRateLimited(await anonymous().get(`${PAGE}/pi_nope`, from('203.0.113.5')));
    expectRateLimited(
      await anonymous().request('POST', `${PAGE}/pi_nope?status=successful`, {
        headers: from('203.0.113.5'),
      }),
    );
    // Another address is counted apart.
    expect((await anonymous().get(`${PAGE}/pi_nope`, from('203.0.113.6'))).status).toBe(404);

    for (let i = 1; i <= 5; i += 1) {
      const reply = await anonymous().get(`${PAGE}/pi_nope`, from(`2001:db8:5:6::${i}`));
      expect(reply.status).toBe(404);
    }
    expectRateLimited(await anonymous().get(`${PAGE}/pi_nope`, from('2001:db8:5:6:ffff::1')));
    expect((await anonymous().get(`${PAGE}/pi_nope`, from('2001:db8:5:7::1'))).status).toBe(404);
    expect(
      await count(sql.unsafe`
        SELECT 1 FROM throttle_counters
        WHERE subject = '2001:db8:5:6::/64' AND category = 'card_authentication_page'`),
    ).toBe(1);
  });

  it('may not be framed: frame-ancestors none and X-Frame-Options DENY, on the page and its answer', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post('/api/v1/transactions/wallet/card-deposit', {
      wallet_id: walletId,
      amount: 12.5,
      payment_method_id: 'pm_card_authenticationRequired',
    });
    expect(res.body.status).toBe('pending');
    const url = res.body.next_action.url as string;
    const page = await fetch(url, { headers: from('203.0.113.7') });
    const posted = await fetch(`${url}?status=failed`, {
      method: 'POST',
      headers: { ...from('203.0.113.7'), 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    for (const reply of [page, posted]) {
      expect(reply.status).toBe(200);
      expect(reply.headers.get('content-security-policy')).toBe(
        "default-src 'none'; form-action 'self'; frame-ancestors 'none'",
      );
      expect(reply.headers.get('x-frame-options')).toBe('DENY');
    }
  });
});

describe('the dashboard', () => {
  it('limits a signed-in account, across its sessions, with 429', async () => {
    const email = await dashboardAccount();
    await awaitRoomInWindow(engine.pool);
    const first = await session(email, '198.51.100.1');
    const second = await session(email, '198.51.100.2');
    for (let i = 0; i < 10; i += 1) {
      const reply = await anonymous().get(
        '/dashboard/api/test/credentials',
        i % 2 ? first : second,
      );
      expect(reply.status).toBe(200);
    }
    expectRateLimited(await anonymous().get(SESSION, first));
    expectRateLimited(await anonymous().get('/dashboard/api/test/v1/users/', second));
    // Another account of the same application is counted apart.
    const other = await session(await dashboardAccount(), '198.51.100.1');
    expect((await anonymous().get(SESSION, other)).status).toBe(200);
  });

  it('counts an action against its API route’s category: a sixth refund in a minute is 429', async () => {
    // The fixture raises the application's limits: back to the API's own for refunds.
    await updateApplication(engine.pool, app.id, {
      rateLimits: { refunds: RATE_LIMIT_CATEGORIES.refunds },
    });
    const headers = await session(await dashboardAccount(), '198.51.100.5');
    await awaitRoomInWindow(engine.pool);
    const refund = (id: string) =>
      anonymous().request('POST', `/dashboard/api/test/v1/transactions/${id}/refund`, {
        body: {},
        headers,
      });
    const missing = '00000000-0000-4000-8000-00000000000';
    for (let i = 0; i < RATE_LIMIT_CATEGORIES.refunds; i += 1) {
      expect((await refund(`${missing}${i}`)).status).toBe(404);
    }
    expectRateLimited(await refund(`${missing}5`));
    expect(
      await count(sql.unsafe`
        SELECT 1 FROM throttle_counters
        WHERE subject = ${`session:${app.id}:test`} AND category = 'refunds'
          AND window_start = date_trunc('minute', now()) AND count = 6`),
    ).toBe(1);
    // Reads and the other mode are not refunds: still answered.
    expect((await anonymous().get('/dashboard/api/test/v1/users/', headers)).status).toBe(200);
    const live = await anonymous().request(
      'POST',
      `/dashboard/api/live/v1/transactions/${missing}7/refund`,
      { body: {}, headers },
    );
    expect(live.status).toBe(404);
  });

  it('limits requests without a session per address, signing in included, and opens no session then', async () => {
    const email = await dashboardAccount();
    await awaitRoomInWindow(engine.pool);
    for (let i = 0; i < 10; i += 1) {
      expect((await anonymous().get(SESSION, from('198.51.100.3'))).status).toBe(401);
    }
    const refused = await signIn(email, '198.51.100.3');
    expectRateLimited(refused);
    expect(refused.headers.get('set-cookie')).toBeNull();
    expect(
      await count(sql.unsafe`
        SELECT 1 FROM dashboard_sessions s JOIN dashboard_users u ON u.id = s.dashboard_user_id
        WHERE u.email = ${email}`),
    ).toBe(0);
    expect((await signIn(email, '198.51.100.4')).status).toBe(200);
  });
});

const failures = (scope: string, address: string) =>
  count(sql.unsafe`SELECT 1 FROM auth_failures WHERE scope = ${scope} AND address = ${address}`);

describe('the sign-in lockout', () => {
  it('keeps the failures of an address through a successful sign-in', async () => {
    const email = await dashboardAccount();
    const address = '198.51.100.10';
    for (let i = 0; i < 4; i += 1) {
      expect((await signIn(email, address, 'wrong')).status).toBe(401);
    }
    // One valid account does not reset the count between guesses.
    expect((await signIn(email, address)).status).toBe(200);
    const fifth = await signIn(email, address, 'wrong');
    expect(fifth.status).toBe(429);
    expect(fifth.body).toEqual({
      detail: 'Too many failed authentications from this address, retry in 900 seconds',
    });
    expect(Number(fifth.headers.get('retry-after'))).toBe(900);
    expect((await signIn(email, address)).status).toBe(429);
    expect(await failures('dashboard_sign_in', address)).toBe(5);
  });

  it('checks no more than five guesses of an address, concurrent ones included', async () => {
    const email = await dashboardAccount();
    const address = '198.51.100.11';
    for (let i = 0; i < 3; i += 1) {
      expect((await signIn(email, address, 'wrong')).status).toBe(401);
    }
    const replies = await Promise.all(
      Array.from({ length: 5 }, () => signIn(email, address, 'wrong')),
    );
    // Two guesses were left: at most those two checked, the rest refused unchecked.
    const statuses = replies.map((reply) => reply.status);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(4);
    for (const reply of replies.filter((r) => r.status === 429)) {
      expect(reply.body.detail).toMatch(/^Too many failed authentications from this address/);
    }
    expect(await failures('dashboard_sign_in', address)).toBe(5);
  });
});

describe('the admin lockout', () => {
  let admin: CreatedAdmin;
  beforeAll(async () => {
    admin = await createAdmin(engine.pool, 'throttle-admin');
  });
  const headers = (address: string, secret = admin.secret_key) => ({
    'api-key': admin.api_key,
    'secret-key': secret,
    ...from(address),
  });

  it('keys an IPv6 client by its /64', async () => {
    for (let i = 1; i <= 4; i += 1) {
      const reply = await anonymous().get(ADMIN, headers(`2001:db8:a:b::${i}`, 'sk_admin_wrong'));
      expect(reply.status).toBe(401);
    }
    const fifth = await anonymous().get(ADMIN, headers('2001:db8:a:b:1:2:3:4', 'sk_admin_wrong'));
    expect(fifth.status).toBe(429);
    expect((await anonymous().get(ADMIN, headers('2001:db8:a:b:ffff::9'))).status).toBe(429);
    expect((await anonymous().get(ADMIN, headers('2001:db8:a:c::1'))).status).toBe(200);
    expect(
      await count(sql.unsafe`
        SELECT 1 FROM auth_lockouts
        WHERE scope = 'admin_api' AND address = '2001:db8:a:b::/64' AND locked_until > now()`),
    ).toBe(1);
  });

  it('checks no more than five guesses of an address, concurrent ones included', async () => {
    const address = '198.51.100.20';
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => anonymous().get(ADMIN, headers(address, 'sk_admin_wrong'))),
    );
    const statuses = replies.map((reply) => reply.status).sort();
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(4);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(4);
    expect(await failures('admin_api', address)).toBe(5);
  });

  it('counts an admin credential used on an application endpoint (403) toward the lockout', async () => {
    const address = '198.51.100.22';
    for (let i = 0; i < 4; i += 1) {
      const reply = await anonymous().get('/api/v1/users/', headers(address));
      expect(reply.status).toBe(403);
      expect(reply.body.detail).toMatch(/^Admin credentials cannot be used on application/);
    }
    expect(await failures('admin_api', address)).toBe(4);
    expect((await anonymous().get('/api/v1/wallets/', headers(address))).status).toBe(429);
    expect(await failures('admin_api', address)).toBe(5);
    // Locked out of the admin endpoints too, valid credentials included; other addresses not.
    expect((await anonymous().get(ADMIN, headers(address))).status).toBe(429);
    expect((await anonymous().get(ADMIN, headers('198.51.100.23'))).status).toBe(200);
  });

  it('does not count a valid admin’s requests, and keeps the address’s failures', async () => {
    const address = '198.51.100.21';
    for (let i = 0; i < 4; i += 1) {
      expect((await anonymous().get(ADMIN, headers(address, 'sk_admin_wrong'))).status).toBe(401);
    }
    expect((await anonymous().get(ADMIN, headers(address))).status).toBe(200);
    expect(await failures('admin_api', address)).toBe(4);
    expect((await anonymous().get(ADMIN, headers(address, 'sk_admin_wrong'))).status).toBe(429);
  });
});

describe('caps per application and mode', () => {
  const activeTestCredentials = () =>
    count(sql.unsafe`
      SELECT 1 FROM credentials WHERE application_id = ${app.id} AND mode = 'test'
        AND revoked_at IS NULL`);

  it('refuses a webhook subscription over the cap with 400, two at once included, writing nothing', async () => {
    const replies = await Promise.all(
      Array.from({ length: 3 }, () =>
        api.post(HOOKS, { url: HOOK, events: ['transfer.completed'] }),
      ),
    );
    expect(replies.map((reply) => reply.status).sort()).toEqual([201, 201, 400]);
    const refused = replies.find((reply) => reply.status === 400)!;
    expect(refused.body).toEqual({
      detail:
        'This application already has 2 webhook subscriptions in test mode, the most allowed: delete one first',
    });
    const held = () =>
      count(sql.unsafe`
        SELECT 1 FROM webhook_subscriptions WHERE application_id = ${app.id} AND mode = 'test'`);
    expect(await held()).toBe(2);
    // Live Mode has a cap of its own; deleting one makes room.
    const live = clientFor(engine.url, app, 'live');
    expect((await live.get(HOOKS)).body.total).toBe(0);
    const first = replies.find((reply) => reply.status === 201)!;
    expect((await api.del(`${HOOKS}/${first.body.id}`)).status).toBe(200);
    expect((await api.post(HOOKS, { url: HOOK, events: ['transfer.completed'] })).status).toBe(201);
    expect(await held()).toBe(2);
  });

  it('refuses a dashboard credential over the cap with 400, several at once included; revoking makes room', async () => {
    const signedIn = await session(await dashboardAccount(), '198.51.100.30');
    const create = () =>
      anonymous().request('POST', '/dashboard/api/test/credentials', {
        body: {},
        headers: signedIn,
      });
    expect(await activeTestCredentials()).toBe(1);
    const replies = await Promise.all([create(), create(), create(), create()]);
    expect(replies.map((reply) => reply.status).sort()).toEqual([201, 201, 400, 400]);
    expect(replies.find((reply) => reply.status === 400)!.body).toEqual({
      detail:
        'This application already has 3 active credentials in test mode, the most allowed: revoke one first',
    });
    expect(await activeTestCredentials()).toBe(3);
    const made = replies.find((reply) => reply.status === 201)!;
    const revoked = await anonymous().request(
      'POST',
      `/dashboard/api/test/credentials/${made.body.id}/revoke`,
      { headers: signedIn },
    );
    expect(revoked.status).toBe(200);
    expect((await create()).status).toBe(201);
    expect(await activeTestCredentials()).toBe(3);
  });
});

describe('list totals', () => {
  it(`count at most ${TOTAL_COUNTED_AHEAD} rows past the end of the page`, async () => {
    const big = await createTestApp(engine.pool);
    const rows = TOTAL_COUNTED_AHEAD + 150;
    await engine.pool.query(sql.unsafe`
      INSERT INTO users (id, application_id, mode, app_user_id, name, phone_number)
      SELECT gen_random_uuid(), ${big.id}, 'test', 'u' || g, 'User ' || g, '+23276000000'
      FROM generate_series(1, ${rows}) AS g`);
    const client = clientFor(engine.url, big);
    const first = await client.get('/api/v1/users/?per_page=100');
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(100);
    expect(first.body).toMatchObject({
      page: 1,
      per_page: 100,
      total: 100 + TOTAL_COUNTED_AHEAD,
      total_pages: 1 + TOTAL_COUNTED_AHEAD / 100,
    });
    // Nearer the end the count is exact.
    const second = await client.get('/api/v1/users/?per_page=100&page=2');
    expect(second.body).toMatchObject({ total: rows, total_pages: Math.ceil(rows / 100) });
    // A small list is counted exactly, as before.
    expect((await api.get('/api/v1/users/?per_page=1')).body.total).toBe(
      await count(
        sql.unsafe`SELECT 1 FROM users WHERE application_id = ${app.id} AND mode = 'test'`,
      ),
    );
  });
});
