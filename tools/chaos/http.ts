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
 * An API client that retries every request with the same `Idempotency-Key` until it has a
 * definitive answer, as the bank test requires; `retries` counts the retried attempts.
 */
export function chaosClient(baseUrl: string, credentials: Credentials) {
  const stats = { requests: 0, retries: 0 };

  async function once(
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string>,
  ): Promise<{ status: number; body: Json }> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        'api-key': credentials.apiKey,
        'secret-key': credentials.secretKey,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(RETRY.perTryMs),
    });
    const text = await response.text();
    let parsed: Json = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    return { status: response.status, body: parsed };
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
        if (status >= 200 && status < 300)
          return { kind: 'ok', status, body: reply.body, attempts: attempt };
        if (status >= 400 && status < 500 && status !== 429) {
          return { kind: 'refused', status, body: reply.body, attempts: attempt };
        }
      } catch {
        status = 0; // refused connection, reset, or the per-try timeout
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
    call,
    get: (path: string) => call('GET', path),
    post: (path: string, body: unknown, key?: string, headers?: Record<string, string>) =>
      call('POST', path, { body, ...(key ? { key } : {}), ...(headers ? { headers } : {}) }),
  };
}

export type ChaosClient = ReturnType<typeof chaosClient>;
