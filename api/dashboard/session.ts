import { createHmac, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import { z } from 'zod';
import {
  checkDashboardPassword,
  findDashboardSession,
  openDashboardSession,
  revokeDashboardSession,
  SESSION_HOURS,
  type DashboardSession,
} from '../../db/dashboard-accounts';
import type { Caller } from '../../domain/types';
import { AppError, errorResponse } from '../errors';
import { clientAddress, throttle, underLockout } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { MessageBody } from '../schemas';
import type { ApiDeps } from '../deps';
import { SIGN_IN_LOCKOUT_SCOPE } from './lockout';
import { isDashboardApi } from './static';

/**
 * Dashboard sign-in: the session token travels only in an HttpOnly, SameSite=Strict cookie, and a
 * state-changing request must also carry `X-CSRF-Token`, an HMAC of it, neither of which a page of
 * another site can read. See docs/dashboard.md, Security choices.
 */
export const SESSION_COOKIE = 'dashboard_session';
export const CSRF_HEADER = 'x-csrf-token';

export function csrfToken(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('dashboard csrf').digest('base64url');
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function cookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  return [
    `${SESSION_COOKIE}=${value}`,
    'Path=/dashboard',
    `Max-Age=${maxAgeSeconds}`,
    'HttpOnly',
    'SameSite=Strict',
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

type DashboardState = { dashboard?: { session: DashboardSession; token: string } };

const NOT_SIGNED_IN = 'Not signed in: sign in to the dashboard';

/** The signed-in session of the request, or 401. */
export function signedIn(ctx: Koa.Context): DashboardSession {
  const state = (ctx.state as DashboardState).dashboard;
  if (!state) throw new AppError('unauthenticated', NOT_SIGNED_IN);
  return state.session;
}

/** The signed-in session of the request, or null (no session cookie, or not a dashboard path). */
export function sessionOf(ctx: Koa.Context): DashboardSession | null {
  return (ctx.state as DashboardState).dashboard?.session ?? null;
}

/** The caller the public API's route logic runs as: the session's application, in one mode. */
export function dashboardCaller(ctx: Koa.Context, mode: string): Caller {
  const session = signedIn(ctx);
  if (mode !== 'test' && mode !== 'live') throw new AppError('not_found', 'Not found');
  return {
    applicationId: session.application_id,
    mode,
    credentialId: `dashboard-session:${session.session_id}`,
  };
}

const SIGN_IN_PATH = '/dashboard/api/session';

/**
 * In front of every /dashboard/api route: reads the session cookie, throttles (429) per account
 * once signed in, else per client address, signing in included, and refuses a state-changing
 * request without the CSRF token (403). Signing in must be JSON: a cross-site form cannot send it.
 */
export function dashboardSession({ pool, config }: ApiDeps): Koa.Middleware {
  const { dashboardAccount, dashboardSignedOut } = config.throttles;
  return async function readSession(ctx, next) {
    if (!isDashboardApi(ctx)) {
      await next();
      return;
    }
    const token = ctx.cookies.get(SESSION_COOKIE);
    const session = token ? await findDashboardSession(pool, token) : null;
    if (session && token) (ctx.state as DashboardState).dashboard = { session, token };
    const signingIn = ctx.path === SIGN_IN_PATH && ctx.method === 'POST';
    if (session && !signingIn) {
      await throttle(pool, session.account_id, {
        category: 'dashboard_account',
        perMinute: dashboardAccount,
      });
    } else {
      await throttle(pool, clientAddress(ctx), {
        category: 'dashboard_signed_out',
        perMinute: dashboardSignedOut,
      });
    }
    const changes = !['GET', 'HEAD', 'OPTIONS'].includes(ctx.method);
    if (changes && signingIn) {
      if (!ctx.is('application/json')) {
        throw new AppError('invalid_request', 'Sign in with a JSON body {email, password}');
      }
    } else if (changes) {
      if (!session || !token) throw new AppError('unauthenticated', NOT_SIGNED_IN);
      if (!sameToken(ctx.get(CSRF_HEADER), csrfToken(token))) {
        throw new AppError('forbidden', 'Missing or wrong X-CSRF-Token: reload the dashboard');
      }
    }
    await next();
  };
}

const SignIn = z.object({
  email: z.string().min(1).max(254),
  password: z.string().min(1).max(1024),
});

const SessionBody = z.object({
  email: z.string(),
  application: z.object({ id: z.string(), name: z.string(), base_currency: z.string() }),
  csrf_token: z.string(),
});

function sessionBody(session: DashboardSession, token: string) {
  return {
    email: session.email,
    application: {
      id: session.application_id,
      name: session.application_name,
      base_currency: session.base_currency,
    },
    csrf_token: csrfToken(token),
  };
}

export function sessionRoutes(deps: ApiDeps): Route[] {
  const { pool, config } = deps;
  return [
    defineRoute({
      method: 'post',
      path: SIGN_IN_PATH,
      summary: 'Sign in to the dashboard with email and password; sets the session cookie',
      tag: 'Dashboard',
      auth: null,
      body: SignIn,
      responses: {
        200: { description: 'Signed in', schema: SessionBody },
        401: errorResponse('Wrong email or password'),
        429: errorResponse('Too many failed sign-ins from this address'),
      },
      handler: async ({ ctx, body }) => {
        // The address's lockout comes first: even the right password waits it out.
        const address = clientAddress(ctx);
        const account = await underLockout(pool, SIGN_IN_LOCKOUT_SCOPE, address, async () => {
          const found = await checkDashboardPassword(pool, body.email, body.password);
          return { failed: !found, result: found };
        });
        if (!account) throw new AppError('unauthenticated', 'Wrong email or password');
        const { token } = await openDashboardSession(pool, account.id);
        const session = await findDashboardSession(pool, token);
        if (!session) throw new Error('a session just opened is not found');
        ctx.set('Set-Cookie', cookie(token, SESSION_HOURS * 3600, config.dashboard.secureCookie));
        ctx.set('Cache-Control', 'no-store');
        return { body: sessionBody(session, token) };
      },
    }),
    defineRoute({
      method: 'get',
      path: SIGN_IN_PATH,
      summary: 'The signed-in dashboard account, its application and the CSRF token',
      tag: 'Dashboard',
      auth: null,
      responses: {
        200: { description: 'The session', schema: SessionBody },
        401: errorResponse('Not signed in'),
      },
      handler: ({ ctx }) => {
        const session = signedIn(ctx);
        const { token } = (ctx.state as Required<DashboardState>).dashboard;
        ctx.set('Cache-Control', 'no-store');
        return Promise.resolve({ body: sessionBody(session, token) });
      },
    }),
    defineRoute({
      method: 'delete',
      path: SIGN_IN_PATH,
      summary: 'Sign out: revokes the session and clears the cookie',
      tag: 'Dashboard',
      auth: null,
      responses: { 200: { description: 'Signed out', schema: MessageBody } },
      handler: async ({ ctx }) => {
        await revokeDashboardSession(pool, signedIn(ctx).session_id);
        ctx.set('Set-Cookie', cookie('', 0, config.dashboard.secureCookie));
        return { body: { message: 'Signed out' } };
      },
    }),
  ];
}
