import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/**
 * One registry per process, every instrument created once here. Labels come from bounded sets
 * (route templates, payment types, statuses), never ids. See docs/operations.md, Metrics.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** Request latency buckets: the API answers in milliseconds, a payment waits on a workflow. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const httpRequests = new Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time to answer an HTTP request, by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const paymentsStarted = new Counter({
  name: 'payments_started_total',
  help: 'Payment workflows the API asked Temporal to start (or attach to), by payment type',
  labelNames: ['type'] as const,
  registers: [registry],
});

export const eagerStarts = new Counter({
  name: 'payments_started_eagerly_total',
  help: "Payment workflows whose first workflow task the server handed to this process's worker in the start call (eager start), by payment type",
  labelNames: ['type'] as const,
  registers: [registry],
});

export const settledLocally = new Counter({
  name: 'payments_answered_locally_total',
  help: "Payments started eagerly whose answer came from this process's worker as the workflow settled, without waiting on the server for the result, by payment type",
  labelNames: ['type'] as const,
  registers: [registry],
});

export const eagerFallbacks = new Counter({
  name: 'payments_eager_fallbacks_total',
  help: "Payments with a worker in the API's process that were answered through the server instead, by payment type and why: no_slot (the start was not eager), start_failed (the eager start failed or did not answer in time), settlement_wait (the worker did not report in time), not_local (an answer only the server gives)",
  labelNames: ['type', 'reason'] as const,
  registers: [registry],
});

export const paymentsEnded = new Counter({
  name: 'payments_ended_total',
  help: 'Payment records written with a settled status (held, completed, failed, expired, reversed), by type and outcome',
  labelNames: ['type', 'outcome'] as const,
  registers: [registry],
});

export const paymentResolutions = new Counter({
  name: 'payment_resolutions_total',
  help: 'Payments stuck on their provider that an operator resolved (the resolve update), by payment type and the outcome they ended with',
  labelNames: ['type', 'outcome'] as const,
  registers: [registry],
});

export const providerEventsUnapplied = new Counter({
  name: 'provider_events_unapplied_total',
  help: "Signed provider events that should have moved money but could not, kept for an operator (provider_notifications outcome 'unapplied'), by kind and reason",
  labelNames: ['kind', 'reason'] as const,
  registers: [registry],
});

export const providerContradictions = new Counter({
  name: 'payment_provider_contradictions_total',
  help: 'Provider answers that contradict a payment the engine had ended (paid after it failed, failed after it completed), kept once each, by payment type and mode',
  labelNames: ['type', 'mode'] as const,
  registers: [registry],
});

export const idempotentReplays = new Counter({
  name: 'idempotent_replays_total',
  help: 'Requests answered from a stored Idempotency-Key result instead of running again, by route template',
  labelNames: ['route'] as const,
  registers: [registry],
});

export const rateLimitedRequests = new Counter({
  name: 'rate_limited_requests_total',
  help: 'Requests refused with 429 by the per-credential rate limit, by category',
  labelNames: ['category'] as const,
  registers: [registry],
});

export const ledgerTransactionDuration = new Histogram({
  name: 'ledger_transaction_duration_seconds',
  help: 'Time of the statement that writes one balanced ledger transaction, by ledger kind',
  labelNames: ['kind'] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  registers: [registry],
});

/** Where no route matched (an unknown path): one label for all, never the raw path. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * First in the API's chain: counts and times every request by its route template (the router's
 * `_matchedRoute`, e.g. `/api/v1/wallets/:wallet_id/`) and final status. Two label lookups per
 * request; nothing else is allocated.
 */
export function httpMetrics(): Koa.Middleware {
  return async function measureRequest(ctx, next) {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      const labels = {
        method: ctx.method,
        route: typeof matched === 'string' ? matched : UNMATCHED_ROUTE,
        status: ctx.status,
      };
      httpRequests.inc(labels);
      httpRequestDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    }
  };
}

/** The settled statuses a payment record can be written with: where a payment step ends. */
const SETTLED = new Set(['held', 'completed', 'failed', 'expired', 'reversed']);

/** Counts a payment record written with a settled status (a pending one is not an end). */
export function countPaymentEnded(row: { transaction_type: string; status: string }): void {
  if (SETTLED.has(row.status)) {
    paymentsEnded.inc({ type: row.transaction_type, outcome: row.status });
  }
}

export const METRICS_CONTENT_TYPE = registry.contentType;

/**
 * The worker's metrics endpoint: `GET /metrics` answers this process's registry followed by
 * the Temporal SDK's own metrics, read from the Runtime's Prometheus exporter at
 * `temporalMetricsUrl` (bound to loopback by the worker). Anything else is a 404.
 */
export async function startMetricsServer(options: {
  port: number;
  host: string;
  temporalMetricsUrl?: string;
}): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify({ detail: 'Not found' }));
      return;
    }
    void workerMetricsText(options.temporalMetricsUrl).then(
      (text) => {
        response.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE });
        response.end(text);
      },
      () => {
        response.writeHead(500, { 'Content-Type': 'application/json' });
        response.end(JSON.stringify({ detail: 'Metrics could not be collected' }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host === '0.0.0.0' ? '127.0.0.1' : options.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function workerMetricsText(temporalMetricsUrl: string | undefined): Promise<string> {
  const own = await registry.metrics();
  if (!temporalMetricsUrl) return own;
  // The SDK's exporter may be briefly unreachable (starting): the engine's own metrics still go out.
  const temporal = await fetch(temporalMetricsUrl, { signal: AbortSignal.timeout(2_000) })
    .then((response) => (response.ok ? response.text() : ''))
    .catch(() => '');
  return `${own}\n${temporal}`;
}
