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
import type { DashboardAction } from '../../domain/dashboard-access';
import { guarded } from './guard';
import { dashboardCaller, dashboardSession, sessionRoutes } from './session';
import { teamRoutes } from './team';
import { twoStepRoutes } from './two-step';
import { isDashboardApi, serveDashboard } from './static';

/**
 * The dashboard's JSON endpoints (/dashboard/api/{mode}/..., session cookie) run the public API's
 * own routes as the signed-in application (docs/dashboard.md): the same code, not a copy. Each
 * with the action of the role table (src/domain/dashboard-access.ts) it takes.
 */
const EXPOSED: Record<string, DashboardAction> = {
  'get /api/v1/analytics/dashboard': 'read',
  'get /api/v1/users/': 'read',
  'get /api/v1/users/:user_id/': 'read',
  'get /api/v1/wallets/': 'read',
  'get /api/v1/wallets/:user_id/': 'read',
  'get /api/v1/wallets/:wallet_id/statement': 'read',
  'get /api/v1/transactions/': 'read',
  'get /api/v1/transactions/export': 'read',
  'get /api/v1/transactions/:transaction_id': 'read',
  'get /api/v1/transactions/:transaction_id/timeline': 'read',
  'post /api/v1/transactions/:transaction_id/refund': 'refunds',
  'post /api/v1/batches': 'batches',
  'get /api/v1/batches': 'read',
  'get /api/v1/batches/:batch_id': 'read',
  'get /api/v1/batches/:batch_id/items': 'read',
  'post /api/v1/batches/:batch_id/cancel': 'batches',
  'get /api/v1/disputes': 'read',
  'get /api/v1/disputes/:dispute_id': 'read',
  'post /api/v1/disputes/:dispute_id/evidence': 'dispute_evidence',
  'get /api/v1/webhooks/subscriptions': 'read',
  'post /api/v1/webhooks/subscriptions': 'webhooks',
  'get /api/v1/webhooks/subscriptions/:subscription_id': 'read',
  'patch /api/v1/webhooks/subscriptions/:subscription_id': 'webhooks',
  'delete /api/v1/webhooks/subscriptions/:subscription_id': 'webhooks',
  'post /api/v1/webhooks/subscriptions/:subscription_id/test': 'webhooks',
  'post /api/v1/webhooks/subscriptions/:subscription_id/rotate-secret': 'webhooks',
  'get /api/v1/events': 'read',
  'get /api/v1/events/:event_id': 'read',
  'post /api/v1/events/:event_id/redeliver': 'webhooks',
  'post /api/v1/reconciliation/imports': 'reconciliation_runs',
  'post /api/v1/reconciliation/runs': 'reconciliation_runs',
  'get /api/v1/reconciliation/runs': 'read',
  'get /api/v1/reconciliation/runs/:run_id': 'read',
  'get /api/v1/reconciliation/exceptions': 'read',
  'get /api/v1/reconciliation/exceptions/:exception_id': 'read',
  'post /api/v1/reconciliation/exceptions/resolve': 'reconciliation_accept',
  'post /api/v1/reconciliation/exceptions/:exception_id/resolve': 'reconciliation_accept',
  'get /api/v1/audit-log': 'read',
};

const MODE_PREFIX = '/dashboard/api/:mode';

/** The public path a dashboard path runs (`/dashboard/api/test/v1/x` runs `/api/v1/x`), or null. */
export function publicPathOf(path: string): string | null {
  const match = /^\/dashboard\/api\/[^/]+(\/v1\/.*)$/.exec(path);
  return match ? `/api${match[1]}` : null;
}

/** A public route, at its dashboard path, run as the session's application in the path's mode. */
function asDashboardRoute(route: Route, action: DashboardAction): Route {
  return guarded(
    { action },
    {
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
    },
  );
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
    guarded(
      { action: 'read' },
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
    ),
    guarded(
      { action: 'credentials_create' },
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
          400: errorResponse(
            'The application has as many active credentials in this mode as it may',
          ),
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
    ),
    guarded(
      { action: 'credentials_revoke' },
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
    ),
  ];
}

/** The dashboard's endpoints of its own, not public routes (docs/dashboard.md lists them). */
export function dashboardOwnRoutes(deps: ApiDeps): Route[] {
  return [
    ...sessionRoutes(deps),
    ...twoStepRoutes(deps),
    ...teamRoutes(deps),
    ...credentialRoutes(deps),
  ];
}

/**
 * The router of the dashboard's JSON endpoints. Every route goes through the role guard
 * (src/api/dashboard/guard.ts): one without it does not start.
 */
export function dashboardRouter(deps: ApiDeps, publicRoutes: readonly Route[]): Router {
  const router = new Router();
  const routes = [
    ...dashboardOwnRoutes(deps),
    ...publicRoutes.flatMap((route) => {
      const action = EXPOSED[`${route.method} ${route.path}`];
      return action ? [asDashboardRoute(route, action)] : [];
    }),
  ];
  const unguarded = routes.filter((route) => !route.guard);
  if (unguarded.length > 0) {
    const names = unguarded.map((route) => `${route.method} ${route.path}`).join(', ');
    throw new Error(`dashboard routes without the role guard: ${names}`);
  }
  mountRoutes(router, routes, deps.pool);
  return router;
}

/** Everything under /dashboard: the JSON endpoints, then the built app's files. */
export function dashboard(deps: ApiDeps, publicRoutes: readonly Route[]): Koa.Middleware[] {
  const router = dashboardRouter(deps, publicRoutes);
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
