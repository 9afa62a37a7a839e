/**
 * The bound on webhook attempts to one endpoint in one worker process: a dead endpoint holds a
 * few of the worker's slots, and an attempt past the bound waits in Temporal's queue for about
 * its place in the endpoint's queue, so that it is refused about once, not polled.
 */

/** One attempt's hold on its endpoint; `leave` once it is over, with how its POST went if made. */
export type EndpointLease = { leave: (posted?: { durationMs: number; ok: boolean }) => void };

export type EndpointGate = {
  /** A slot for one attempt to `endpoint`, or null while `perEndpoint` attempts to it run. */
  enter: (endpoint: string) => EndpointLease | null;
  /** Whether the last attempt to `endpoint` in this process failed (none yet: false). */
  failing: (endpoint: string) => boolean;
  /**
   * How long an attempt refused now should wait before it comes back: the endpoint's queue of
   * refused attempts drained at the pace its attempts have been taking, each refusal taking the
   * next place in it.
   */
  deferralMs: (endpoint: string) => number;
  /** Attempts to `endpoint` running now (tests, metrics). */
  running: (endpoint: string) => number;
};

/** A refused attempt waits at least this long, so that a refusal is never a tight loop. */
export const MIN_DEFERRAL_MS = 1_000;
/** And at most this long: the retry schedule's longest wait between two attempts. */
export const MAX_DEFERRAL_MS = 60 * 60 * 1000;
/**
 * What an attempt is taken to last before one to the endpoint has finished here: its longest,
 * since the endpoint is at its bound with none finished (a first refusal too short is repeated).
 */
const FIRST_GUESS_MS = 10_000;
/** The weight of the newest attempt in the endpoint's running mean of durations. */
const MEAN_WEIGHT = 0.2;
/** Endpoints remembered; past it the memory of the idle ones starts over. */
const ENDPOINTS_REMEMBERED = 10_000;

type Endpoint = {
  running: number;
  failing: boolean;
  meanMs: number;
  finished: number;
  /** When the last refused attempt was told to come back (ms since the epoch). */
  queuedUntil: number;
};

export function endpointGate(options: {
  perEndpoint: number;
  now?: () => number;
  /** Spreads comebacks that fall together; a fraction of the wait (default: random, ±10%). */
  jitter?: () => number;
}): EndpointGate {
  const { perEndpoint } = options;
  const now = options.now ?? Date.now;
  const jitter = options.jitter ?? (() => (Math.random() - 0.5) / 5);
  const endpoints = new Map<string, Endpoint>();

  const idle = (e: Endpoint) => e.running === 0 && !e.failing && e.queuedUntil <= now();
  const of = (key: string): Endpoint => {
    let e = endpoints.get(key);
    if (!e) {
      if (endpoints.size >= ENDPOINTS_REMEMBERED) {
        for (const [k, v] of endpoints) if (v.running === 0) endpoints.delete(k);
      }
      e = { running: 0, failing: false, meanMs: FIRST_GUESS_MS, finished: 0, queuedUntil: 0 };
      endpoints.set(key, e);
    }
    return e;
  };

  return {
    enter: (key) => {
      const e = of(key);
      if (e.running >= perEndpoint) return null;
      e.running += 1;
      let left = false;
      return {
        leave: (posted) => {
          if (left) return;
          left = true;
          e.running -= 1;
          if (posted) {
            e.failing = !posted.ok;
            const duration = Math.max(0, posted.durationMs);
            e.meanMs = e.finished === 0 ? duration : e.meanMs + MEAN_WEIGHT * (duration - e.meanMs);
            e.finished += 1;
          }
          // A healthy endpoint with nothing running or queued is forgotten at once.
          if (idle(e) && endpoints.get(key) === e) endpoints.delete(key);
        },
      };
    },
    failing: (key) => endpoints.get(key)?.failing ?? false,
    deferralMs: (key) => {
      const e = of(key);
      const at = now();
      const place = Math.max(at, e.queuedUntil) + e.meanMs / perEndpoint;
      e.queuedUntil = Math.min(place, at + MAX_DEFERRAL_MS);
      const wait = (e.queuedUntil - at) * (1 + jitter());
      return Math.round(Math.min(MAX_DEFERRAL_MS, Math.max(MIN_DEFERRAL_MS, wait)));
    },
    running: (key) => endpoints.get(key)?.running ?? 0,
  };
}
