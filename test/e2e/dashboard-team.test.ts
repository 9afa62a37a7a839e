import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { apiRoutes } from '../../src/api/app';
import { dashboardRouter } from '../../src/api/dashboard/routes';
import { sha256 } from '../../src/db/credentials';
import { DASHBOARD_ROLES, type DashboardRole } from '../../src/domain/dashboard-access';
import { createLogger } from '../../src/observability/logger';
import { createProviders } from '../../src/providers';
import {
  dashboardAccount,
  newAddress,
  PASSWORD,
  sessionFrom,
  signIn,
  type Session,
} from '../support/dashboard';
import { createTestApp } from '../support/engine';
import { clientFor, createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

/**
 * Team access in the dashboard (docs/dashboard.md, Roles, Team and Fresh sign-in): every route
 * walked with every role, invitations, role changes and removals, the last owner, and actions
 * that want the password or a code given within the last minutes.
 */
const engine = useTestEngine({
  env: {
    TRUST_PROXY: 'true',
    RATE_LIMIT_DASHBOARD_ACCOUNT: '1000',
    RATE_LIMIT_DASHBOARD_SIGNED_OUT: '1000',
  },
});
const { app, api } = useTestApp(engine);

const FORBIDDEN = { detail: 'Your role does not allow this' };
const account = (role: DashboardRole) => dashboardAccount(engine.pool, app.id, role);
const signedIn = async (role: DashboardRole) => signIn(engine.url, await account(role));

const count = (query: ReturnType<typeof sql.unsafe>) =>
  engine.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM (${query}) AS q`,
  );

const roleOf = (email: string) =>
  engine.pool.maybeOneFirst(sql.type(z.object({ role: z.string() }))`
    SELECT role FROM dashboard_users WHERE email = ${email}`);

/** The audit log's entries of one target, oldest first: who, what and the details. */
const auditOf = (targetId: string) =>
  engine.pool.any(sql.type(
    z.object({
      actor_type: z.string(),
      actor_name: z.string(),
      action: z.string(),
      application_id: z.string().nullable(),
      details: z.record(z.string(), z.unknown()),
    }),
  )`SELECT actor_type, actor_name, action, application_id, details FROM audit_log
    WHERE target_id = ${targetId} ORDER BY at, id`);

/** Makes a session stale: its password or code was given longer ago than fresh actions allow. */
const makeStale = (session: Session) =>
  engine.pool.query(sql.unsafe`
    UPDATE dashboard_sessions SET confirmed_at = now() - interval '6 minutes'
    WHERE token_hash = ${sql.binary(sha256(session.headers.cookie!.split('=')[1]!))}`);

/**
 * Who may use a route, as docs/dashboard.md's roles table says, written here apart from the
 * engine's table so that the walk checks one against the other. A route it does not know fails.
 */
function expectedRoles(method: string, path: string): readonly DashboardRole[] {
  const everyone = DASHBOARD_ROLES;
  if (/^\/dashboard\/api\/(session|invitations|two-step)(\/|$)/.test(path)) return everyone;
  if (method === 'get') return everyone;
  if (/\/credentials(\/|$)/.test(path)) return ['owner', 'developer'];
  if (/\/v1\/(webhooks|events)\//.test(path)) return ['owner', 'developer'];
  if (/\/refund$/.test(path) || /\/evidence$/.test(path)) return ['owner', 'operator'];
  if (/\/reconciliation\/exceptions\/.*resolve$/.test(path)) return ['owner', 'operator'];
  if (/\/reconciliation\/(imports|runs)$/.test(path)) return ['owner'];
  if (/\/v1\/batches(\/|$)/.test(path)) return ['owner'];
  if (/^\/dashboard\/api\/team(\/|$)/.test(path)) return ['owner'];
  throw new Error(`no expectation for ${method} ${path}: add it to the roles table`);
}

/** Every route of the running engine's dashboard router, each method apart. */
function dashboardRouteList(): { method: string; path: string }[] {
  const deps = {
    config: engine.config,
    pool: engine.pool,
    temporal: engine.temporal,
    logger: createLogger('silent'),
    providers: createProviders({ config: engine.config, pool: engine.pool }),
  };
  const router = dashboardRouter(deps, apiRoutes(deps));
  return router.stack.flatMap((layer) =>
    layer.methods
      .filter((method) => method !== 'HEAD')
      .map((method) => ({ method: method.toLowerCase(), path: String(layer.path) })),
  );
}

const concrete = (path: string) =>
  path
    .replace(':mode', 'test')
    .replace(':token', 'no-such-token')
    .replace(/:[a-z_]+/g, () => randomUUID());

describe('roles', () => {
  it('walks every dashboard route with every role: 403 exactly where the roles table forbids', async () => {
    const routes = dashboardRouteList();
    expect(routes.length).toBeGreaterThan(40);
    // Signing out ends the walk's session: last.
    const order = (r: { method: string; path: string }) =>
      r.method === 'delete' && r.path === '/dashboard/api/session' ? 1 : 0;
    routes.sort((a, b) => order(a) - order(b));
    const written = () =>
      Promise.all([
        count(sql.unsafe`SELECT 1 FROM credentials WHERE application_id = ${app.id}`),
        count(sql.unsafe`SELECT 1 FROM dashboard_invitations WHERE application_id = ${app.id}`),
        count(sql.unsafe`SELECT 1 FROM webhook_subscriptions WHERE application_id = ${app.id}`),
        count(sql.unsafe`SELECT 1 FROM recon_runs WHERE application_id = ${app.id}`),
      ]);
    const before = await written();
    const outcomes: string[] = [];
    // The viewer first: forbidden everything that writes, it must leave every table as it was.
    for (const role of ['viewer', 'operator', 'developer', 'owner'] as const) {
      const session = await signedIn(role);
      expect(session.body).toMatchObject({ role, needs: null, fresh: true });
      for (const route of routes) {
        const body = route.method === 'get' ? undefined : {};
        const reply = await session.request(route.method.toUpperCase(), concrete(route.path), body);
        const allowed = expectedRoles(route.method, route.path).includes(role);
        const forbidden = reply.status === 403 && reply.body?.detail === FORBIDDEN.detail;
        if (forbidden === allowed) {
          outcomes.push(`${role} ${route.method} ${route.path}: ${reply.status}`);
        }
      }
      if (role === 'viewer') expect(await written()).toEqual(before);
    }
    expect(outcomes).toEqual([]);
  });

  it('tells the page the role and what it may do', async () => {
    const viewer = await signedIn('viewer');
    expect(viewer.body.permissions).toEqual(['read', 'own_account', 'own_two_step']);
    const operator = await signedIn('operator');
    expect(operator.body.permissions).toEqual([
      'read',
      'own_account',
      'own_two_step',
      'refunds',
      'dispute_evidence',
      'reconciliation_accept',
    ]);
    const reply = await operator.request('GET', '/dashboard/api/session');
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      role: 'operator',
      permissions: operator.body.permissions,
      two_step: { enabled: false, required: false },
    });
  });

  it('makes owners on the command line’s path and of accounts made before roles', async () => {
    const created = await engine.pool.one(sql.type(z.object({ role: z.string() }))`
      SELECT role FROM dashboard_users WHERE email = ${await dashboardAccount(
        engine.pool,
        app.id,
        'owner',
      )}`);
    expect(created.role).toBe('owner');
    // The column has no default left: an account must be given its role.
    const defaulted = await engine.pool.maybeOneFirst(sql.type(z.object({ d: z.string() }))`
      SELECT column_default AS d FROM information_schema.columns
      WHERE table_name = 'dashboard_users' AND column_name = 'role' AND column_default IS NOT NULL`);
    expect(defaulted).toBeNull();
  });
});

describe('invitations', () => {
  it('invites by email and role with a one-time link valid 72 hours, kept hashed', async () => {
    const ownerEmail = await account('owner');
    const owner = await signIn(engine.url, ownerEmail);
    const email = `new-${Date.now()}@team.test`;
    const made = await owner.request('POST', '/dashboard/api/team/invitations', {
      email,
      role: 'operator',
    });
    expect(made.status).toBe(201);
    expect(made.body.invitation).toMatchObject({ email, role: 'operator' });
    const path = made.body.path as string;
    expect(path).toMatch(/^\/dashboard\/invitations\/[A-Za-z0-9_-]{43}$/);
    const token = path.split('/').pop()!;
    const row = await engine.pool.one(sql.type(
      z.object({ hash: z.boolean(), hours: z.number(), plain: z.boolean() }),
    )`
      SELECT token_hash = ${sql.binary(sha256(token))} AS hash,
        extract(epoch FROM expires_at - created_at)::int / 3600 AS hours,
        position(${token}::bytea IN token_hash) > 0 AS plain
      FROM dashboard_invitations WHERE id = ${made.body.invitation.id}`);
    expect(row).toEqual({ hash: true, hours: 72, plain: false });

    const team = await owner.request('GET', '/dashboard/api/team');
    expect(team.body.invitations).toContainEqual(made.body.invitation);

    const guest = clientFor(engine.url, null);
    const shown = await guest.get(`/dashboard/api/invitations/${token}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ email, role: 'operator', application: { id: app.id } });

    // A short password is refused at once, and nothing is made.
    const address = newAddress();
    const short = await guest.post(
      `/dashboard/api/invitations/${token}/accept`,
      { password: 'short' },
      { 'x-forwarded-for': address },
    );
    expect(short.status).toBe(422);
    expect(short.body.detail).toMatch(/12 to 1024 characters/);
    expect(await roleOf(email)).toBeNull();

    const accepted = await guest.post(
      `/dashboard/api/invitations/${token}/accept`,
      { password: PASSWORD },
      { 'x-forwarded-for': address },
    );
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ email, role: 'operator', needs: null });
    expect(await roleOf(email)).toBe('operator');
    const session = sessionFrom(engine.url, accepted, address);
    expect((await session.request('GET', '/dashboard/api/test/v1/users/')).status).toBe(200);
    // The new account signs in with the password it chose.
    expect((await signIn(engine.url, email)).body.role).toBe('operator');

    // Once only.
    const again = await guest.post(
      `/dashboard/api/invitations/${token}/accept`,
      { password: PASSWORD },
      { 'x-forwarded-for': newAddress() },
    );
    expect(again.status).toBe(404);
    expect((await guest.get(`/dashboard/api/invitations/${token}`)).status).toBe(404);
    expect(
      await count(sql.unsafe`
        SELECT 1 FROM dashboard_invitations
        WHERE id = ${made.body.invitation.id} AND accepted_at IS NOT NULL`),
    ).toBe(1);
    expect((await owner.request('GET', '/dashboard/api/team')).body.members).toContainEqual(
      expect.objectContaining({ email, role: 'operator', two_step: false }),
    );
    // Both changes are in the audit log, each by the account that made it; no token in either.
    const [invited] = await auditOf(made.body.invitation.id);
    expect(invited).toMatchObject({
      actor_type: 'dashboard_account',
      actor_name: ownerEmail,
      action: 'team.invitation_created',
      application_id: app.id,
      details: { email, role: 'operator' },
    });
    expect(JSON.stringify(invited)).not.toContain(token);
    const joined = await auditOf(await idOf(email));
    expect(joined).toEqual([
      expect.objectContaining({
        actor_type: 'dashboard_account',
        actor_name: email,
        action: 'team.invitation_accepted',
        application_id: app.id,
        details: { role: 'operator' },
      }),
    ]);
  });

  it('refuses an expired or revoked link, a member invited again and a bad role', async () => {
    const owner = await signedIn('owner');
    const invite = (email: string, role = 'viewer') =>
      owner.request('POST', '/dashboard/api/team/invitations', { email, role });
    const expired = await invite(`late-${Date.now()}@team.test`);
    await engine.pool.query(sql.unsafe`
      UPDATE dashboard_invitations SET expires_at = now() - interval '1 second'
      WHERE id = ${expired.body.invitation.id}`);
    const guest = clientFor(engine.url, null);
    const late = await guest.post(
      `/dashboard/api/invitations/${tokenOf(expired.body.path)}/accept`,
      {
        password: PASSWORD,
      },
    );
    expect(late.status).toBe(404);

    const revoked = await invite(`gone-${Date.now()}@team.test`);
    const revoke = await owner.request(
      'DELETE',
      `/dashboard/api/team/invitations/${revoked.body.invitation.id}`,
    );
    expect(revoke.status).toBe(200);
    expect(
      (await guest.get(`/dashboard/api/invitations/${tokenOf(revoked.body.path)}`)).status,
    ).toBe(404);

    const member = await invite(owner.body.email as string);
    expect(member.status).toBe(400);
    expect(member.body).toEqual({ detail: 'This email is a member of the team already' });
    const bad = await invite(`x-${Date.now()}@team.test`, 'admin');
    expect(bad.status).toBe(422);
    const notEmail = await invite('not an email');
    expect(notEmail.status).toBe(422);
    expect(
      await count(sql.unsafe`
        SELECT 1 FROM dashboard_invitations WHERE email IN ('not an email', ${owner.body.email})`),
    ).toBe(0);
  });

  it('lets only an owner invite: 403 for the others, nothing written', async () => {
    for (const role of ['developer', 'operator', 'viewer'] as const) {
      const session = await signedIn(role);
      const email = `by-${role}-${Date.now()}@team.test`;
      const reply = await session.request('POST', '/dashboard/api/team/invitations', {
        email,
        role: 'owner',
      });
      expect(reply.status).toBe(403);
      expect(reply.body).toEqual(FORBIDDEN);
      expect(
        await count(sql.unsafe`SELECT 1 FROM dashboard_invitations WHERE email = ${email}`),
      ).toBe(0);
    }
  });
});

const tokenOf = (path: string) => path.split('/').pop()!;

describe('members', () => {
  it('changes a role, which applies to the member’s open session at once', async () => {
    const ownerEmail = await account('owner');
    const owner = await signIn(engine.url, ownerEmail);
    const email = await account('developer');
    const developer = await signIn(engine.url, email);
    const hooks = '/dashboard/api/test/v1/webhooks/subscriptions';
    expect((await developer.request('POST', hooks, { url: 'not a url' })).status).toBe(422);

    const id = await idOf(email);
    const changed = await owner.request('PATCH', `/dashboard/api/team/members/${id}`, {
      role: 'viewer',
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ id, email, role: 'viewer' });
    expect(await roleOf(email)).toBe('viewer');
    const refused = await developer.request('POST', hooks, { url: 'not a url' });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual(FORBIDDEN);
    expect((await developer.request('GET', '/dashboard/api/session')).body.role).toBe('viewer');
    expect(await auditOf(id)).toEqual([
      expect.objectContaining({
        actor_name: ownerEmail,
        action: 'team.member_role_changed',
        details: { email, role: 'viewer' },
      }),
    ]);
  });

  it('removes a member, whose sessions end with it', async () => {
    const ownerEmail = await account('owner');
    const owner = await signIn(engine.url, ownerEmail);
    const email = await account('operator');
    const operator = await signIn(engine.url, email);
    const id = await idOf(email);
    const removed = await owner.request('DELETE', `/dashboard/api/team/members/${id}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ id, email });
    expect(await roleOf(email)).toBeNull();
    expect((await operator.request('GET', '/dashboard/api/session')).status).toBe(401);
    const missing = await owner.request('DELETE', `/dashboard/api/team/members/${id}`);
    expect(missing.status).toBe(404);
    // One entry: the refused second removal recorded nothing.
    expect(await auditOf(id)).toEqual([
      expect.objectContaining({ actor_name: ownerEmail, action: 'team.member_removed' }),
    ]);
  });

  it('keeps the last owner: neither demoted nor removed (400), concurrent demotions included', async () => {
    const { app: lone } = await soleOwnerApp();
    const owner = await signIn(engine.url, lone.email);
    const demote = await owner.request('PATCH', `/dashboard/api/team/members/${lone.id}`, {
      role: 'developer',
    });
    expect(demote.status).toBe(400);
    expect(demote.body).toEqual({ detail: 'The application must keep at least one owner' });
    const remove = await owner.request('DELETE', `/dashboard/api/team/members/${lone.id}`);
    expect(remove.status).toBe(400);
    expect(await roleOf(lone.email)).toBe('owner');

    // Two owners demoting each other at once: one of them stays an owner.
    const second = await dashboardAccount(engine.pool, lone.applicationId, 'owner');
    const other = await signIn(engine.url, second);
    const secondId = await idOf(second);
    const [a, b] = await Promise.all([
      owner.request('PATCH', `/dashboard/api/team/members/${secondId}`, { role: 'viewer' }),
      other.request('PATCH', `/dashboard/api/team/members/${lone.id}`, { role: 'viewer' }),
    ]);
    // The loser is refused by the last-owner rule (400), or, when the winner committed before
    // its request was authorized, as no longer an owner (403): either way one owner stays.
    const [won, lost] = [a.status, b.status].sort();
    expect(won).toBe(200);
    expect([400, 403]).toContain(lost);
    expect(
      await count(sql.unsafe`
        SELECT 1 FROM dashboard_users WHERE application_id = ${lone.applicationId} AND role = 'owner'`),
    ).toBe(1);
  });
});

const idOf = (email: string) =>
  engine.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM dashboard_users WHERE email = ${email}`);

/** An application of its own with one owner. */
async function soleOwnerApp() {
  const other = await createTestApp(engine.pool);
  const email = await dashboardAccount(engine.pool, other.id, 'owner');
  return { app: { email, id: await idOf(email), applicationId: other.id } };
}

describe('fresh sign-in', () => {
  it('refuses a refund when the password was given over 5 minutes ago (401), then allows it once confirmed', async () => {
    const { walletId } = await createUserWithWallet(api);
    const deposit = await api.post('/api/v1/transactions/wallet/card-deposit', {
      wallet_id: walletId,
      amount: 20,
      payment_method_id: 'pm_card_visa',
    });
    expect(deposit.body.status).toBe('completed');
    const operator = await signedIn('operator');
    await makeStale(operator);
    const refundsCounted = await refundsCounter();
    const counted = await refundsCounted();
    expect((await operator.request('GET', '/dashboard/api/session')).body.fresh).toBe(false);
    const refund = () =>
      operator.request('POST', `/dashboard/api/test/v1/transactions/${deposit.body.id}/refund`, {
        amount: 5,
      });
    const stale = await refund();
    expect(stale.status).toBe(401);
    expect(stale.headers.get('www-authenticate')).toBe('Dashboard-Confirm');
    expect(stale.body.detail).toMatch(/^Confirm it is you/);
    expect(await refundsOf(deposit.body.id)).toBe(0);
    // Reads need no confirmation.
    expect((await operator.request('GET', '/dashboard/api/test/v1/users/')).status).toBe(200);

    const failures = () =>
      count(sql.unsafe`
        SELECT 1 FROM auth_failures
        WHERE scope = 'dashboard_sign_in' AND address = ${operator.headers['x-forwarded-for']!}`);
    const wrong = await operator.request('POST', '/dashboard/api/session/confirm', {
      password: 'not the password at all',
    });
    expect(wrong.status).toBe(401);
    expect(await failures()).toBe(1);
    const both = await operator.request('POST', '/dashboard/api/session/confirm', {
      password: PASSWORD,
      code: '123456',
    });
    expect(both.status).toBe(422);

    const confirmed = await operator.request('POST', '/dashboard/api/session/confirm', {
      password: PASSWORD,
    });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.fresh).toBe(true);
    const done = await refund();
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      transaction_type: 'card_refund',
      amount: 5,
      source_transaction_id: deposit.body.id,
    });
    expect(await refundsOf(deposit.body.id)).toBe(1);
    const after = await api.get(`/api/v1/transactions/${deposit.body.id}`);
    expect(after.body.amount_refunded).toBe(5);
    // The refund counted once as a request of the API's `refunds` category, the refused one not.
    expect(await refundsCounted()).toBe(counted + 1);
  });

  it('asks it for new credentials, dispute evidence and team changes too, never for reads', async () => {
    const owner = await signedIn('owner');
    await makeStale(owner);
    const asks = [
      owner.request('POST', '/dashboard/api/test/credentials', {}),
      owner.request('POST', `/dashboard/api/test/v1/disputes/${randomUUID()}/evidence`, {
        text: 'x',
      }),
      owner.request('POST', '/dashboard/api/team/invitations', {
        email: `stale-${Date.now()}@team.test`,
        role: 'viewer',
      }),
      owner.request('PATCH', '/dashboard/api/team', { two_step_required: true }),
    ];
    for (const reply of await Promise.all(asks)) {
      expect(reply.status).toBe(401);
      expect(reply.headers.get('www-authenticate')).toBe('Dashboard-Confirm');
    }
    expect(
      await count(sql.unsafe`SELECT 1 FROM dashboard_invitations WHERE email LIKE 'stale-%'`),
    ).toBe(0);
    expect(
      await count(sql.unsafe`
        SELECT 1 FROM applications WHERE id = ${app.id} AND dashboard_two_step_required`),
    ).toBe(0);
    expect((await owner.request('GET', '/dashboard/api/test/credentials')).status).toBe(200);
    expect((await owner.request('GET', '/dashboard/api/team')).status).toBe(200);
  });
});

const refundsOf = (depositId: string) =>
  count(sql.unsafe`
    SELECT 1 FROM transactions WHERE transaction_type = 'card_refund' AND parent_id = ${depositId}`);

/**
 * The application's Test Mode requests counted in the `refunds` category from this minute's
 * window on: the maintenance prunes only windows older than this test.
 */
async function refundsCounter(): Promise<() => Promise<number>> {
  const since = await engine.pool.oneFirst(sql.type(z.object({ at: z.string() }))`
    SELECT date_trunc('minute', now())::text AS at`);
  return () =>
    engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT coalesce(sum(count), 0)::int AS n FROM throttle_counters
      WHERE subject = ${`session:${app.id}:test`} AND category = 'refunds'
        AND window_start >= ${since}::timestamptz`);
}
