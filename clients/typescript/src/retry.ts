export type RetryOptions = {
  /** Attempts in all, the first included (default 4; 1 turns retries off). */
  maxAttempts?: number;
  /** The first backoff's ceiling, doubled on each retry (default 250 ms). */
  baseDelayMs?: number;
  /** The largest backoff ceiling (default 8 s). */
  maxDelayMs?: number;
  /** A Retry-After longer than this is not waited for: the 429 or 503 is answered (default 60 s). */
  maxRetryAfterMs?: number;
};

export type RetryDeps = {
  random?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
};

/** Answers that say "try again": the API answered nothing final (5xx) or refused for now (429). */
const TRANSIENT = new Set([429, 500, 502, 503, 504]);
/** Methods that change nothing, so that sending them twice is harmless. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function sleepFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', abort, { once: true });
  });
}

/** Retry-After as seconds or as an HTTP date, in milliseconds; undefined when absent or bad. */
export function retryAfterMs(response: Response, now = Date.now()): number | undefined {
  const value = response.headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * A request may be sent again when sending it twice cannot do anything twice: a safe method, or
 * a request that carries an Idempotency-Key (the API answers a repeat with the first answer).
 */
export function isReplayable(request: Request): boolean {
  return SAFE_METHODS.has(request.method) || request.headers.has('idempotency-key');
}

/**
 * `fetch` with bounded retries, exponential backoff and full jitter, each attempt a copy of the
 * request (Idempotency-Key included). A replayable request is retried on network errors and
 * transient statuses; any other only on 429, which the API answers before doing anything.
 */
export function retryingFetch(
  fetchImpl: (request: Request) => Promise<Response>,
  options: RetryOptions = {},
  deps: RetryDeps = {},
): (request: Request) => Promise<Response> {
  const maxAttempts = Math.max(1, options.maxAttempts ?? 4);
  const base = options.baseDelayMs ?? 250;
  const cap = options.maxDelayMs ?? 8_000;
  const maxRetryAfter = options.maxRetryAfterMs ?? 60_000;
  const random = deps.random ?? Math.random;
  const sleep = deps.sleep ?? sleepFor;
  const backoff = (attempt: number) => random() * Math.min(cap, base * 2 ** (attempt - 1));

  return async function fetchWithRetries(request: Request): Promise<Response> {
    const replayable = isReplayable(request);
    for (let attempt = 1; ; attempt += 1) {
      const last = attempt >= maxAttempts;
      let response: Response;
      try {
        response = await fetchImpl(last ? request : request.clone());
      } catch (error) {
        if (last || !replayable || request.signal.aborted) throw error;
        await sleep(backoff(attempt), request.signal);
        continue;
      }
      const again = response.status === 429 || (replayable && TRANSIENT.has(response.status));
      if (last || !again) return response;
      const asked = response.status === 429 || response.status === 503;
      const wait = (asked ? retryAfterMs(response) : undefined) ?? backoff(attempt);
      if (wait > maxRetryAfter) return response;
      // The answer is dropped: its body is released so that the connection can be reused.
      await response.body?.cancel().catch(() => undefined);
      await sleep(wait, request.signal);
    }
  };
}
