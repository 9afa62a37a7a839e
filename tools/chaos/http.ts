/** What a request came to: a definitive answer (2xx or 4xx), or none within its bounds. */
export type Outcome =
  | { kind: 'ok' | 'refused'; status: number; body: Json; attempts: number }
  | { kind: 'indefinite'; status: number; attempts: number };

/** A reply's JSON, read through the schemas of tools/chaos/wire.ts. */
export type Json = unknown;

export type Credentials = { apiKey: string; secretKey: string };

/** Bounds of one request's retries (a 5xx, a timeout or a refused connection is retried). */
export const RETRY = { attempts: 400, totalMs: 150_000, perTryMs: 20_000, pauseMs: 300 };

/**
 * What a run's clients saw: the attempts that failed and the retried answers that are fine, by
 * kind, and the longest time without a definitive answer (docs/testing.md, "Rolling restarts").
 */
export function createMeter() {
  let since: number | null = null;
  const meter = {
    longestPauseMs: 0,
    /** When the longest pause ended (epoch ms). */
    longestPauseEnded: 0,
    failures: new Map<string, number>(),
    /** When each failure happened (epoch ms), in order. */
    failedAt: [] as { at: number; what: string }[],
    retried: new Map<string, number>(),
    start: () => {
      since = Date.now();
    },
    answered: () => {
      if (since === null) return;
      const now = Date.now();
      if (now - since > meter.longestPauseMs) {
        meter.longestPauseMs = now - since;
        meter.longestPauseEnded = now;
      }
      since = now;
    },
    failed: (what: string) => {
      meter.failures.set(what, (meter.failures.get(what) ?? 0) + 1);
      meter.failedAt.push({ at: Date.now(), what });
    },
    retry: (why: string) => meter.retried.set(why, (meter.retried.get(why) ?? 0) + 1),
  };
  return meter;
}

export type Meter = ReturnType<typeof createMeter>;

/** Whether `body` is the API's own error answer, `{"detail": ...}` (a balancer's page is not). */
const fromApi = (body: Json) =>
  typeof body === 'object' &&
  body !== null &&
  typeof (body as { detail?: unknown }).detail === 'string';

/** Sorts a retried answer into failed (meter.failed) or fine to retry (meter.retry). */
function judge(meter: Meter, status: number, retryAfter: boolean, body: Json): void {
  if (status === 502) meter.failed('HTTP 502');
  else if (status === 504 && !fromApi(body)) meter.failed('HTTP 504 from the balancer');
  else if (status === 503 && !retryAfter) meter.failed('HTTP 503 without Retry-After');
  else if (status >= 500 && !fromApi(body)) meter.failed(`HTTP ${status} without a detail`);
  else meter.retry(`HTTP ${status}${retryAfter ? ' with Retry-After' : ''}`);
}

/**
 * An API client that retries every request with the same `Idempotency-Key` until it has a
 * definitive answer, as the bank test requires; `retries` counts the retried attempts, and
 * `meter` (shared by a run's clients) what they saw.
 */
export function chaosClient(
  baseUrl: string,
  credentials: Credentials,
  meter: Meter = createMeter(),
) {
  const stats = { requests: 0, retries: 0 };

  async function once(
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string>,
  ): Promise<{ status: number; body: Json; retryAfter: boolean }> {
    // A form (a file upload) sets its own content type, with its boundary.
    const form = body instanceof FormData;
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        'api-key': credentials.apiKey,
        'secret-key': credentials.secretKey,
        ...(body === undefined || form ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : form ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(RETRY.perTryMs),
    });
    const text = await response.text();
    let parsed: Json = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    return {
      status: response.status,
      body: parsed,
      retryAfter: response.headers.has('retry-after'),
    };
  }

  /** The request, retried until 2xx or 4xx (or its bounds are spent). */
  async function call(
    method: string,
    path: string,
    options: { body?: unknown; key?: string; headers?: Record<string, string> } = {},
  ): Promise<Outcome> {
    stats.requests += 1;
    const headers = { ...(options.headers ?? {}) };
    if (options.key) headers['Idempotency-Key'] = options.key;
    const deadline = Date.now() + RETRY.totalMs;
    let status = 0;
    for (let attempt = 1; attempt <= RETRY.attempts; attempt++) {
      try {
        const reply = await once(method, path, options.body, headers);
        status = reply.status;
        if (status >= 200 && status < 300) {
          meter.answered();
          return { kind: 'ok', status, body: reply.body, attempts: attempt };
        }
        if (status >= 400 && status < 500 && status !== 429) {
          meter.answered();
          return { kind: 'refused', status, body: reply.body, attempts: attempt };
        }
        judge(meter, status, reply.retryAfter, reply.body);
      } catch (error) {
        status = 0; // refused connection, reset, or the per-try timeout
        meter.failed(noAnswer(error));
      }
      if (Date.now() + RETRY.pauseMs > deadline)
        return { kind: 'indefinite', status, attempts: attempt };
      stats.retries += 1;
      await new Promise((resolve) => setTimeout(resolve, RETRY.pauseMs));
    }
    return { kind: 'indefinite', status, attempts: RETRY.attempts };
  }

  return {
    stats,
    meter,
    call,
    get: (path: string) => call('GET', path),
    post: (path: string, body: unknown, key?: string, headers?: Record<string, string>) =>
      call('POST', path, { body, ...(key ? { key } : {}), ...(headers ? { headers } : {}) }),
  };
}

export type ChaosClient = ReturnType<typeof chaosClient>;

/** Why an attempt had no answer, as fetch reports it: a timeout, or the socket's error code. */
function noAnswer(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'no answer: timeout';
  const cause =
    error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  return `no answer: ${typeof cause?.code === 'string' ? cause.code : 'connection failed'}`;
}
