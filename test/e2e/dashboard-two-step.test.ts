import { sql } from 'slonik';
import { z } from 'zod';
import { sha256 } from '../../src/db/credentials';
import {
  dashboardAccount,
  newAddress,
  nextCode,
  signIn,
  wrongCode,
  type Session,
} from '../support/dashboard';
import { createTestApp } from '../support/engine';
import { useTestApp, useTestEngine } from '../support/hooks';

/**
 * Two-step sign-in (docs/dashboard.md, Two-step sign-in; docs/security.md): TOTP enrolment with
 * its secret, URI and QR code, sign-in with a code from an authenticator (otpauth here) or a
 * one-time recovery code, the team's requirement, and codes counted in the sign-in lockout.
 */
const engine = useTestEngine({
  env: {
    TRUST_PROXY: 'true',
    RATE_LIMIT_DASHBOARD_ACCOUNT: '1000',
    RATE_LIMIT_DASHBOARD_SIGNED_OUT: '1000',
  },
});
const { app } = useTestApp(engine);

const USERS = '/dashboard/api/test/v1/users/';

const totpRow = (email: string) =>
  engine.pool.one(sql.type(
    z.object({
      id: z.string(),
      secret_sealed: z.string().nullable(),
      pending_sealed: z.string().nullable(),
      enabled: z.boolean(),
    }),
  )`
    SELECT id, totp_secret_sealed AS secret_sealed, totp_pending_sealed AS pending_sealed,
      totp_enabled_at IS NOT NULL AS enabled
    FROM dashboard_users WHERE email = ${email}`);

const recoveryRows = (accountId: string) =>
  engine.pool.any(sql.type(z.object({ code_hash: z.instanceof(Buffer), used: z.boolean() }))`
    SELECT code_hash, used_at IS NOT NULL AS used FROM dashboard_recovery_codes
    WHERE dashboard_user_id = ${accountId}`);

const failures = (address: string) =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM auth_failures
    WHERE scope = 'dashboard_sign_in' AND address = ${address}`);

/** Turns two-step on for a signed-in session: the secret and the recovery codes. */
async function enrol(session: Session): Promise<{ secret: string; recovery: string[] }> {
  const started = await session.request('POST', '/dashboard/api/two-step');
  expect(started.status).toBe(200);
  const secret = started.body.secret as string;
  const confirmed = await session.request('POST', '/dashboard/api/two-step/confirm', {
    code: await nextCode(secret),
  });
  expect(confirmed.status).toBe(200);
  return { secret, recovery: confirmed.body.recovery_codes as string[] };
}

describe('enrolment', () => {
  it('shows the secret, otpauth:// URI and QR code; on only after a first valid code; 10 recovery codes once, hashed', async () => {
    const email = await dashboardAccount(engine.pool, app.id, 'viewer');
    const session = await signIn(engine.url, email);
    const started = await session.request('POST', '/dashboard/api/two-step');
    expect(started.status).toBe(200);
    const { secret, otpauth_uri: uri, qr_code: qr } = started.body;
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(uri).toMatch(/^otpauth:\/\/totp\//);
    const params = new URL(uri as string).searchParams;
    expect(params.get('secret')).toBe(secret);
    expect(params.get('digits')).toBe('6');
    expect(params.get('period')).toBe('30');
    expect(params.get('algorithm')).toBe('SHA1');
    expect(decodeURIComponent(uri as string)).toContain(email);
    expect(qr).toMatch(/^data:image\/png;base64,[A-Za-z0-9+/=]+$/);

    // Sealed at rest, and not on yet.
    let row = await totpRow(email);
    expect(row).toMatchObject({ secret_sealed: null, enabled: false });
    expect(row.pending_sealed).toMatch(/^v2\./);
    expect(row.pending_sealed).not.toContain(secret);
    expect((await session.request('GET', '/dashboard/api/session')).body.two_step.enabled).toBe(
      false,
    );

    const wrong = await session.request('POST', '/dashboard/api/two-step/confirm', {
      code: wrongCode(secret),
    });
    expect(wrong.status).toBe(400);
    expect(await failures(session.headers['x-forwarded-for']!)).toBe(1);
    expect((await totpRow(email)).enabled).toBe(false);

    const confirmed = await session.request('POST', '/dashboard/api/two-step/confirm', {
      code: await nextCode(secret),
    });
    expect(confirmed.status).toBe(200);
    const codes = confirmed.body.recovery_codes as string[];
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    row = await totpRow(email);
    expect(row).toMatchObject({ enabled: true, pending_sealed: null });
    expect(row.secret_sealed).toMatch(/^v2\./);
    expect(row.secret_sealed).not.toContain(secret);
    const stored = await recoveryRows(row.id);
    expect(stored.map((r) => r.code_hash.toString('hex')).sort()).toEqual(
      codes.map((c) => sha256(c.replace('-', '')).toString('hex')).sort(),
    );
    expect(stored.every((r) => !r.used)).toBe(true);
    expect((await session.request('GET', '/dashboard/api/session')).body.two_step.enabled).toBe(
      true,
    );
    // Shown once: starting again is refused while it is on.
    expect((await session.request('POST', '/dashboard/api/two-step')).status).toBe(400);
  });
});

describe('signing in with two steps', () => {
  it('asks for a code after the password; a current code signs in, never twice', async () => {
    const email = await dashboardAccount(engine.pool, app.id, 'developer');
    const { secret } = await enrol(await signIn(engine.url, email));

    const pending = await signIn(engine.url, email);
    expect(pending.body).toMatchObject({ needs: 'code', role: 'developer' });
    const refused = await pending.request('GET', USERS);
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toMatch(/^Finish signing in/);
    expect((await pending.request('POST', '/dashboard/api/test/credentials', {})).status).toBe(401);

    const wrong = await pending.request('POST', '/dashboard/api/session/code', {
      code: wrongCode(secret),
    });
    expect(wrong.status).toBe(401);
    expect(await failures(pending.headers['x-forwarded-for']!)).toBe(1);

    const code = await nextCode(secret);
    const done = await pending.request('POST', '/dashboard/api/session/code', { code });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ needs: null, fresh: true });
    expect((await pending.request('GET', USERS)).status).toBe(200);
    // The right sign-in forgot its own attempts only: the wrong code stays counted.
    expect(await failures(pending.headers['x-forwarded-for']!)).toBe(1);

    // The same code again, in another session: refused.
    const other = await signIn(engine.url, email);
    const replay = await other.request('POST', '/dashboard/api/session/code', { code });
    expect(replay.status).toBe(401);
    expect((await other.request('GET', USERS)).status).toBe(401);
  });

  it('signs in with a recovery code once', async () => {
    const email = await dashboardAccount(engine.pool, app.id, 'operator');
    const { recovery } = await enrol(await signIn(engine.url, email));
    const { id } = await totpRow(email);

    const first = await signIn(engine.url, email);
    const used = await first.request('POST', '/dashboard/api/session/code', {
      code: recovery[3]!.toUpperCase(),
    });
    expect(used.status).toBe(200);
    expect((await first.request('GET', USERS)).status).toBe(200);
    expect((await recoveryRows(id)).filter((r) => r.used)).toHaveLength(1);

    const second = await signIn(engine.url, email);
    const again = await second.request('POST', '/dashboard/api/session/code', {
      code: recovery[3],
    });
    expect(again.status).toBe(401);
    expect((await second.request('GET', USERS)).status).toBe(401);
    expect((await recoveryRows(id)).filter((r) => r.used)).toHaveLength(1);
  });

  it('counts wrong codes in the sign-in lockout as wrong passwords: the fifth locks the address out', async () => {
    const email = await dashboardAccount(engine.pool, app.id, 'viewer');
    const { secret } = await enrol(await signIn(engine.url, email));
    const address = newAddress();
    const pending = await signIn(engine.url, email, address);
    // Four wrong codes and one wrong password: the lockout counts them alike.
    for (let i = 0; i < 4; i += 1) {
      const wrong = await pending.request('POST', '/dashboard/api/session/code', {
        code: wrongCode(secret),
      });
      expect(wrong.status).toBe(401);
    }
    await expect(signIn(engine.url, email, address, 'a wrong password!')).rejects.toThrow(/429/);
    expect(await failures(address)).toBe(5);
    // Locked out: even the right code waits.
    const right = await pending.request('POST', '/dashboard/api/session/code', {
      code: await nextCode(secret),
    });
    expect(right.status).toBe(429);
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(800);
    expect(right.body.detail).toMatch(/^Too many failed authentications from this address/);
    expect((await pending.request('GET', USERS)).status).toBe(401);
    await expect(signIn(engine.url, email, address)).rejects.toThrow(/429/);
  });

  it('can be turned off, unless the team requires it', async () => {
    const email = await dashboardAccount(engine.pool, app.id, 'viewer');
    const session = await signIn(engine.url, email);
    await enrol(session);
    const off = await session.request('DELETE', '/dashboard/api/two-step');
    expect(off.status).toBe(200);
    const row = await totpRow(email);
    expect(row).toMatchObject({ enabled: false, secret_sealed: null });
    expect(await recoveryRows(row.id)).toEqual([]);
    expect((await signIn(engine.url, email)).body.needs).toBeNull();
  });
});

describe('the team’s requirement', () => {
  it('sends members without two-step to enrol on sign-in, then lets them in', async () => {
    const team = await createTestApp(engine.pool);
    const owner = await signIn(engine.url, await dashboardAccount(engine.pool, team.id, 'owner'));
    const memberEmail = await dashboardAccount(engine.pool, team.id, 'operator');
    const before = await signIn(engine.url, memberEmail);

    const viewer = await signIn(engine.url, await dashboardAccount(engine.pool, team.id, 'viewer'));
    const refused = await viewer.request('PATCH', '/dashboard/api/team', {
      two_step_required: true,
    });
    expect(refused.status).toBe(403);

    const on = await owner.request('PATCH', '/dashboard/api/team', { two_step_required: true });
    expect(on.status).toBe(200);
    expect(on.body).toEqual({ two_step_required: true });
    expect((await owner.request('GET', '/dashboard/api/team')).body.two_step_required).toBe(true);
    // A session open before goes on; the requirement applies at sign-in.
    expect((await before.request('GET', USERS)).status).toBe(200);

    const member = await signIn(engine.url, memberEmail);
    expect(member.body).toMatchObject({
      needs: 'enrolment',
      two_step: { enabled: false, required: true },
    });
    expect((await member.request('GET', USERS)).status).toBe(401);
    const { secret } = await enrol(member);
    const now = await member.request('GET', '/dashboard/api/session');
    expect(now.body).toMatchObject({ needs: null, two_step: { enabled: true, required: true } });
    expect((await member.request('GET', USERS)).status).toBe(200);
    const off = await member.request('DELETE', '/dashboard/api/two-step');
    expect(off.status).toBe(400);
    expect(off.body).toEqual({ detail: 'Your team requires two-step sign-in' });
    expect((await totpRow(memberEmail)).enabled).toBe(true);

    // The next sign-in asks for a code.
    const next = await signIn(engine.url, memberEmail);
    expect(next.body.needs).toBe('code');
    const done = await next.request('POST', '/dashboard/api/session/code', {
      code: await nextCode(secret),
    });
    expect(done.status).toBe(200);
  });

  it('confirms a stale session with a code as with the password', async () => {
    const email = await dashboardAccount(engine.pool, app.id, 'owner');
    const session = await signIn(engine.url, email);
    const { secret } = await enrol(session);
    await engine.pool.query(sql.unsafe`
      UPDATE dashboard_sessions s SET confirmed_at = now() - interval '6 minutes'
      FROM dashboard_users u WHERE u.id = s.dashboard_user_id AND u.email = ${email}`);
    const stale = await session.request('POST', '/dashboard/api/test/credentials', {});
    expect(stale.status).toBe(401);
    const confirmed = await session.request('POST', '/dashboard/api/session/confirm', {
      code: await nextCode(secret),
    });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.fresh).toBe(true);
    const made = await session.request('POST', '/dashboard/api/test/credentials', {});
    expect(made.status).toBe(201);
    expect(
      await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM credentials WHERE id = ${made.body.id as string}`),
    ).toBe(1);
  });
});
