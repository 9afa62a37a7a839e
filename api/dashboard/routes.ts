import Router from '@koa/router';
import type Koa from 'koa';
import { z } from 'zod';
import { createCredential } from '../../db/credentials';
import { listModeCredentials, revokeModeCredential } from '../../db/dashboard-credentials';
import { audited } from '../audit';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse, refuseOverCap } from '../errors';
import { mountRoutes } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { dashboardCaller, dashboardSession, sessionRoutes } from './session';
import { isDashboardApi, serveDashboard } from './static';

/**
 * The dashboard's JSON endpoints (/dashboard/api/{mode}/..., session cookie) run the public API's
 * own routes as the signed-in application (docs/dashboard.md): the same code, not a copy.
 */
const EXPOSED = new Set([
  'get /api/v1/analytics/dashboard',
  'get /api/v1/users/',
  'get /api/v1/users/:user_id/',
  'get /api/v1/wallets/',
  'get /api/v1/wallets/:user_id/',
  'get /api/v1/wallets/:wallet_id/statement',
  'get /api/v1/transactions/',
  'get /api/v1/transactions/export',
  'get /api/v1/transactions/:transaction_id',
  'get /api/v1/transactions/:transaction_id/timeline',
  'post /api/v1/transactions/:transaction_id/refund',
  'get /api/v1/disputes',
  'get /api/v1/disputes/:dispute_id',
  'post /api/v1/disputes/:dispute_id/evidence',
  'get /api/v1/webhooks/subscriptions',
  'post /api/v1/webhooks/subscriptions',
  'get /api/v1/webhooks/subscriptions/:subscription_id',
  'patch /api/v1/webhooks/subscriptions/:subscription_id',
  'delete /api/v1/webhooks/subscriptions/:subscription_id',
  'post /api/v1/webhooks/subscriptions/:subscription_id/test',
  'post /api/v1/webhooks/subscriptions/:subscription_id/rotate-secret',
  'get /api/v1/events',
  'get /api/v1/events/:event_id',
  'post /api/v1/events/:event_id/redeliver',
  'post /api/v1/reconciliation/imports',
  'post /api/v1/reconciliation/runs',
  'get /api/v1/reconciliation/runs',
  'get /api/v1/reconciliation/runs/:run_id',
  'get /api/v1/reconciliation/exceptions',
  'get /api/v1/reconciliation/exceptions/:exception_id',
  'post /api/v1/reconciliation/exceptions/resolve',
  'post /api/v1/reconciliation/exceptions/:exception_id/resolve',
  'get /api/v1/audit-log',
]);

const MODE_PREFIX = '/dashboard/api/:mode';

/** The public path a dashboard path runs (`/dashboard/api/test/v1/x` runs `/api/v1/x`), or null. */
export function publicPathOf(path: string): string | null {
  const match = /^\/dashboard\/api\/[^/]+(\/v1\/.*)$/.exec(path);
  return match ? `/api${match[1]}` : null;
}

/** A public route, at its dashboard path, run as the session's application in the path's mode. */
function asDashboardRoute(route: Route): Route {
  return {
    ...route,
    path: `${MODE_PREFIX}${route.path.replace(/^\/api/, '')}`,
    auth: null,
    idempotent: route.idempotent === true,
    // Reads stay under the dashboard's own limit; actions count as the API counts them.
    ...(route.method !== 'get' && route.auth !== null ? { sessionCategory: route.auth } : {}),
    sessionCaller: (ctx) => dashboardCaller(ctx, (ctx.params as { mode: string }).mode),
    handler: (input) =>
      route.handler({
        ...input,
        caller: dashboardCaller(input.ctx, (input.ctx.params as { mode: string }).mode),
      }),
  };
}

const ModeParams = z.object({ mode: z.string() });

const CredentialBody = z.object({
  id: z.string(),
  api_key: z.string(),
  mode: z.enum(['test', 'live']),
  status: z.enum(['active', 'revoked', 'expired']),
  last_used: z.string().nullable(),
  expires_at: z.string().nullable(),
  created_at: z.string(),
});

const NewCredential = z.object({
  expires_at: z.iso
    .datetime({ offset: true, error: 'expires_at must be an ISO 8601 time' })
    .nullable()
    .optional(),
});

function credentialRoutes(deps: ApiDeps): Route[] {
  const { pool } = deps;
  return [
    defineRoute({
      method: 'get',
      path: `${MODE_PREFIX}/credentials`,
      summary: 'The application’s credentials of one mode: status, last_used, never a secret',
      tag: 'Dashboard',
      auth: null,
      params: ModeParams,
      responses: { 200: { description: 'Credentials', schema: z.array(CredentialBody) } },
      handler: async ({ ctx, params }) => {
        const caller = dashboardCaller(ctx, params.mode);
        return { body: await listModeCredentials(pool, caller.applicationId, caller.mode) };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${MODE_PREFIX}/credentials`,
      summary: 'Generates a credential; its secret is shown in this answer only',
      tag: 'Dashboard',
      auth: null,
      params: ModeParams,
      body: NewCredential,
      responses: {
        201: { description: 'The new credential with its secret' },
        400: errorResponse('The application has as many active credentials in this mode as it may'),
        422: errorResponse('expires_at is not a time in the future'),
      },
      handler: async ({ ctx, params, body }) => {
        const caller = dashboardCaller(ctx, params.mode);
        const expiresAt = body.expires_at ? new Date(body.expires_at).toISOString() : null;
        if (expiresAt && Date.parse(expiresAt) <= Date.now()) {
          throw new AppError('validation_failed', 'expires_at must be in the future');
        }
        const created = await refuseOverCap(() =>
          audited(
            pool,
            ctx,
            caller,
            (trx) =>
              createCredential(trx, { ...caller, expiresAt, cap: deps.config.caps.credentials }),
            (made) => ({
              action: 'credential.created',
              target: { type: 'credential', id: made.id },
              details: { expires_at: made.expires_at },
            }),
          ),
        );
        return {
          status: 201,
          body: {
            id: created.id,
            api_key: created.api_key,
            secret_key: created.secret_key,
            mode: created.mode,
            expires_at: created.expires_at,
          },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${MODE_PREFIX}/credentials/:credential_id/revoke`,
      summary: 'Revokes a credential of the application and mode',
      tag: 'Dashboard',
      auth: null,
      params: ModeParams.extend({ credential_id: z.string() }),
      responses: {
        200: { description: 'The revoked credential', schema: CredentialBody },
        404: errorResponse('No such credential in this application and mode'),
      },
      handler: async ({ ctx, params }) => {
        const caller = dashboardCaller(ctx, params.mode);
        const revoked = await audited(
          pool,
          ctx,
          caller,
          (trx) =>
            revokeModeCredential(trx, caller.applicationId, caller.mode, params.credential_id),
          (row) =>
            row && { action: 'credential.revoked', target: { type: 'credential', id: row.id } },
        );
        if (!revoked) throw new AppError('not_found', 'Credential not found');
        return { body: revoked };
      },
    }),
  ];
}

/** Everything under /dashboard: the JSON endpoints, then the built app's files. */
export function dashboard(deps: ApiDeps, publicRoutes: readonly Route[]): Koa.Middleware[] {
  const router = new Router();
  const routes = [
    ...sessionRoutes(deps),
    ...credentialRoutes(deps),
    ...publicRoutes
      .filter((route) => EXPOSED.has(`${route.method} ${route.path}`))
      .map(asDashboardRoute),
  ];
  mountRoutes(router, routes, deps.pool);
  const notFound: Koa.Middleware = async (ctx, next) => {
    if (!isDashboardApi(ctx)) {
      await next();
      return;
    }
    throw new AppError('not_found', 'No such dashboard endpoint');
  };
  return [
    dashboardSession(deps),
    router.routes() as Koa.Middleware,
    notFound,
    serveDashboard(deps.config.dashboard.distDir),
  ];
}
