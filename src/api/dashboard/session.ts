import { createHmac, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import { z } from 'zod';
import {
  checkAccountPassword,
  checkDashboardPassword,
  confirmDashboardSession,
  findDashboardSession,
  openDashboardSession,
  revokeDashboardSession,
  SESSION_HOURS,
  SESSION_NEEDS,
  type DashboardSession,
} from '../../db/dashboard-accounts';
import { signInNeeds } from '../../db/dashboard-two-step';
import { sessionSubject } from '../../db/rate-limit';
import {
  DASHBOARD_ACTIONS,
  DASHBOARD_ROLES,
  PASSWORD_LENGTH,
  permissionsOf,
} from '../../domain/dashboard-access';
import type { Caller } from '../../domain/types';
import { AppError, errorResponse } from '../errors';
import { clientAddress, throttle, underLockout } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { MessageBody } from '../schemas';
import type { ApiDeps } from '../deps';
import { anySession, guarded, NOT_SIGNED_IN, signedIn, type DashboardState } from './guard';
import { SIGN_IN_LOCKOUT_SCOPE } from './lockout';
import { isDashboardApi } from './static';
import { checkSecondStep } from './two-step';

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

/** The caller the public API's route logic runs as: the session's application, in one mode. */
export function dashboardCaller(ctx: Koa.Context, mode: string): Caller {
  const session = signedIn(ctx);
  if (mode !== 'test' && mode !== 'live') throw new AppError('not_found', 'Not found');
  return {
    applicationId: session.application_id,
    mode,
    credentialId: `dashboard-session:${session.session_id}`,
    rateLimitSubject: sessionSubject({ applicationId: session.application_id, mode }),
  };
}

const SIGN_IN_PATH = '/dashboard/api/session';
/** Accepting an invitation signs in too: no session (and so no CSRF token) before it. */
const ACCEPT_PATH = /^\/dashboard\/api\/invitations\/[^/]+\/accept$/;

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
    const signingIn =
      ctx.method === 'POST' && (ctx.path === SIGN_IN_PATH || ACCEPT_PATH.test(ctx.path));
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
        throw new AppError('invalid_request', 'Send a JSON body to sign in');
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
  password: z.string().min(1).max(PASSWORD_LENGTH.max),
});

const SessionBody = z.object({
  email: z.string(),
  role: z.enum(DASHBOARD_ROLES),
  /** The actions the role may take (docs/dashboard.md, Roles): the page hides the others. */
  permissions: z.array(z.enum(Object.keys(DASHBOARD_ACTIONS) as [string, ...string[]])),
  application: z.object({ id: z.string(), name: z.string(), base_currency: z.string() }),
  /** What the session waits for before it is signed in: a code, or turning two-step on. */
  needs: z.enum(SESSION_NEEDS).nullable(),
  two_step: z.object({ enabled: z.boolean(), required: z.boolean() }),
  /** The password or a code was given within the last minutes that fresh actions allow. */
  fresh: z.boolean(),
  csrf_token: z.string(),
});

function sessionBody(session: DashboardSession, token: string) {
  return {
    email: session.email,
    role: session.role,
    permissions: permissionsOf(session.role),
    application: {
      id: session.application_id,
      name: session.application_name,
      base_currency: session.base_currency,
    },
    needs: session.needs,
    two_step: { enabled: session.two_step, required: session.two_step_required },
    fresh: session.fresh,
    csrf_token: csrfToken(token),
  };
}

/** The session of a token as the page sees it, read again after a change. */
async function answerSession(deps: ApiDeps, ctx: Koa.Context, token: string) {
  const session = await findDashboardSession(deps.pool, token);
  if (!session) throw new AppError('unauthenticated', NOT_SIGNED_IN);
  ctx.set('Cache-Control', 'no-store');
  return { body: sessionBody(session, token) };
}

/** Opens a session for an account whose password was just given, and sets its cookie. */
export async function startSession(deps: ApiDeps, ctx: Koa.Context, accountId: string) {
  const needs = await signInNeeds(deps.pool, accountId);
  const { token } = await openDashboardSession(deps.pool, accountId, needs);
  const seconds = SESSION_HOURS * 3600;
  ctx.set('Set-Cookie', cookie(token, seconds, deps.config.dashboard.secureCookie));
  return answerSession(deps, ctx, token);
}

const tokenOf = (ctx: Koa.Context) => (ctx.state as Required<DashboardState>).dashboard.token;

const Confirmation = z
  .object({
    password: z.string().min(1).max(PASSWORD_LENGTH.max).optional(),
    code: z.string().min(1).max(64).optional(),
  })
  .refine((body) => (body.password === undefined) !== (body.code === undefined), {
    error: 'send either password or code',
  });

export function sessionRoutes(deps: ApiDeps): Route[] {
  const { pool, config } = deps;
  const anyStep = ['code', 'enrolment'] as const;
  return [
    guarded(
      { open: true },
      defineRoute({
        method: 'post',
        path: SIGN_IN_PATH,
        summary:
          'Sign in to the dashboard with email and password; sets the session cookie (a session that `needs` a code or enrolment is not signed in yet)',
        tag: 'Dashboard',
        auth: null,
        body: SignIn,
        responses: {
          200: { description: 'Signed in, or waiting for the second step', schema: SessionBody },
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
          return startSession(deps, ctx, account.id);
        },
      }),
    ),
    guarded(
      { action: 'own_account', during: ['code'] },
      defineRoute({
        method: 'post',
        path: `${SIGN_IN_PATH}/code`,
        summary:
          'The second step of signing in: a code of the authenticator app or a recovery code',
        tag: 'Dashboard',
        auth: null,
        body: z.object({ code: z.string().min(1).max(64) }),
        responses: {
          200: { description: 'Signed in', schema: SessionBody },
          400: errorResponse('No code is awaited'),
          401: errorResponse('Wrong code'),
          429: errorResponse('Too many failed sign-ins from this address'),
        },
        handler: async ({ ctx, body }) => {
          const session = anySession(ctx);
          if (session.needs !== 'code') {
            throw new AppError('invalid_request', 'This session awaits no code');
          }
          await confirmWith(deps, ctx, session, { code: body.code });
          return answerSession(deps, ctx, tokenOf(ctx));
        },
      }),
    ),
    guarded(
      { action: 'own_account' },
      defineRoute({
        method: 'post',
        path: `${SIGN_IN_PATH}/confirm`,
        summary:
          'Confirms a signed-in session with the password or a code: actions that want a fresh sign-in are allowed for the next minutes',
        tag: 'Dashboard',
        auth: null,
        body: Confirmation,
        responses: {
          200: { description: 'Confirmed', schema: SessionBody },
          401: errorResponse('Wrong password or code'),
          429: errorResponse('Too many failed sign-ins from this address'),
        },
        handler: async ({ ctx, body }) => {
          await confirmWith(deps, ctx, signedIn(ctx), body);
          return answerSession(deps, ctx, tokenOf(ctx));
        },
      }),
    ),
    guarded(
      { action: 'own_account', during: anyStep },
      defineRoute({
        method: 'get',
        path: SIGN_IN_PATH,
        summary:
          'The dashboard account, its role and permissions, its application and the CSRF token',
        tag: 'Dashboard',
        auth: null,
        responses: {
          200: { description: 'The session', schema: SessionBody },
          401: errorResponse('Not signed in'),
        },
        handler: ({ ctx }) =>
          Promise.resolve({
            body: sessionBody(anySession(ctx), tokenOf(ctx)),
            headers: { 'Cache-Control': 'no-store' },
          }),
      }),
    ),
    guarded(
      { action: 'own_account', during: anyStep },
      defineRoute({
        method: 'delete',
        path: SIGN_IN_PATH,
        summary: 'Sign out: revokes the session and clears the cookie',
        tag: 'Dashboard',
        auth: null,
        responses: { 200: { description: 'Signed out', schema: MessageBody } },
        handler: async ({ ctx }) => {
          await revokeDashboardSession(pool, anySession(ctx).session_id);
          ctx.set('Set-Cookie', cookie('', 0, config.dashboard.secureCookie));
          return { body: { message: 'Signed out' } };
        },
      }),
    ),
  ];
}

/**
 * The password or a code, checked under the sign-in lockout (a wrong code counts as a wrong
 * password does), then the session is confirmed: signed in, and fresh from now.
 */
async function confirmWith(
  deps: ApiDeps,
  ctx: Koa.Context,
  session: DashboardSession,
  given: { password?: string | undefined; code?: string | undefined },
): Promise<void> {
  const { pool } = deps;
  const ok = await underLockout(pool, SIGN_IN_LOCKOUT_SCOPE, clientAddress(ctx), async () => {
    const right =
      given.password !== undefined
        ? await checkAccountPassword(pool, session.account_id, given.password)
        : await checkSecondStep(deps, session, given.code ?? '');
    return { failed: !right, result: right };
  });
  if (!ok) {
    const what = given.password !== undefined ? 'Wrong password' : 'Wrong or used code';
    throw new AppError('unauthenticated', what);
  }
  await confirmDashboardSession(pool, session.session_id);
}
