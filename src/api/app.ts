import { METHODS } from 'node:http';
import Router from '@koa/router';
import Koa from 'koa';
import { dashboard, publicPathOf } from './dashboard/routes';
import type { ApiDeps } from './deps';
import { jsonBody } from './middleware/body';
import { errorsAndAccessLog, logLateErrors } from './middleware/errors';
import { httpMetrics } from '../observability/metrics';
import { concretePathsWin, mountRoutes } from './pipeline';
import type { Route } from './route';
import { adminRoutes } from './routes/admin';
import { analyticsRoutes } from './routes/analytics';
import { BATCH_MAX_BODY_BYTES, batchRoutes, takesBatchBody } from './routes/batches';
import { auditLogRoutes } from './routes/audit-log';
import { cardDepositRoutes } from './routes/card-deposits';
import { cardPayoutRoutes } from './routes/card-payouts';
import { cashoutRoutes } from './routes/cashouts';
import { disputeRoutes } from './routes/disputes';
import { feeRoutes } from './routes/fees';
import { depositRoutes } from './routes/deposits';
import { escrowRoutes } from './routes/escrow';
import { eventRoutes } from './routes/events';
import { onboardingRoutes, streamsOwnBody } from './routes/onboarding';
import { reconciliationRoutes, streamsReconImport } from './routes/reconciliation';
import { refundRoutes } from './routes/refunds';
import { providerWebhookRoutes } from './routes/provider-webhooks';
import { syncRoutes } from './routes/sync';
import { temporalCodecEdge, temporalCodecRoutes } from './routes/temporal-codec';
import { testClockRoutes } from './routes/test-clocks';
import { systemRoutes } from './routes/system';
import { transactionRoutes } from './routes/transactions';
import { transferRoutes } from './routes/transfers';
import { userRoutes } from './routes/users';
import { statementRoutes } from './routes/statements';
import { walletRoutes } from './routes/wallets';
import { webhookSubscriptionRoutes } from './routes/webhook-subscriptions';

/** Every route of the API, in one list: the router and the OpenAPI document both read it. */
export function apiRoutes(deps: ApiDeps): Route[] {
  const routes: Route[] = [];
  routes.push(
    ...systemRoutes(deps, () => routes),
    ...userRoutes(deps),
    ...walletRoutes(deps),
    ...statementRoutes(deps),
    ...transferRoutes(deps),
    ...depositRoutes(deps),
    ...cardDepositRoutes(deps),
    ...cashoutRoutes(deps),
    ...cardPayoutRoutes(deps),
    ...batchRoutes(deps),
    ...refundRoutes(deps),
    ...providerWebhookRoutes(deps),
    ...syncRoutes(deps),
    ...escrowRoutes(deps),
    ...feeRoutes(deps),
    ...transactionRoutes(deps),
    ...disputeRoutes(deps),
    ...reconciliationRoutes(deps),
    ...testClockRoutes(deps),
    ...webhookSubscriptionRoutes(deps),
    ...eventRoutes(deps),
    ...onboardingRoutes(deps),
    ...analyticsRoutes(deps),
    ...adminRoutes(deps),
    ...auditLogRoutes(deps),
    ...temporalCodecRoutes(deps),
  );
  return routes;
}

export function createApp(deps: ApiDeps): Koa {
  const { trustProxy } = deps.config.api;
  // X-Forwarded-* (ctx.ip, ctx.protocol, ctx.host) is believed only behind TRUST_PROXY proxies,
  // and of X-Forwarded-For only the hops those proxies appended.
  const app = new Koa({ proxy: trustProxy > 0, maxIpsCount: trustProxy });
  // Every method node parses counts as implemented, so that TRACE on a known path answers 405
  // with Allow (as PUT does), not the router's bare 501.
  const router = new Router({ methods: [...METHODS] });
  const routes = apiRoutes(deps);
  mountRoutes(router, routes, deps.pool, { credentials: deps.credentials });
  // Outside the error handler, so that it sees the status every request is finally answered.
  if (deps.config.metrics.enabled) app.use(httpMetrics());
  app.use(errorsAndAccessLog(deps.logger));
  logLateErrors(app, deps.logger);
  app.use(temporalCodecEdge(deps.config));
  // The settlement file streams on its dashboard path too (the page uploads it there).
  const streamsImport = (path: string) => streamsReconImport(publicPathOf(path) ?? path);
  app.use(
    jsonBody({
      streamed: (path) => streamsOwnBody(path) || streamsImport(path),
      maxBytes: (path) =>
        takesBatchBody(publicPathOf(path) ?? path) ? BATCH_MAX_BODY_BYTES : undefined,
    }),
  );
  for (const middleware of dashboard(deps, routes)) app.use(middleware);
  app.use(router.routes());
  app.use(concretePathsWin());
  app.use(router.allowedMethods());
  return app;
}
