/**
 * The bound on webhook attempts to one endpoint in one worker process: a dead endpoint holds a
 * few of the worker's slots, and an attempt past the bound waits in Temporal's queue for about
 * its place in the endpoint's queue, so that it is refused about once, not polled.
 */

/** One attempt's hold on its endpoint; `leave` once it is over, with how its POST went if made. */
export type EndpointLease = { leave: (posted?: { durationMs: number; ok: boolean }) => void };

export type EndpointGate = {
  /**
   * A slot for one attempt to `endpoint`, or null while its bound of attempts run: `perEndpoint`,
   * or one while its last attempt failed (that one attempt probes it for the others).
   */
  enter: (endpoint: string) => EndpointLease | null;
  /** Whether the last attempt to `endpoint` in this process failed (none yet: false). */
  failing: (endpoint: string) => boolean;
  /**
   * How long an attempt refused now should wait before it comes back: the endpoint's queue of
   * waiting attempts drained at the pace its attempts have been taking, each refusal taking the
   * next place in it.
   */
  deferralMs: (endpoint: string) => number;
  /**
   * The wait before the next attempt of a delivery whose attempt to `endpoint` just failed: the
   * schedule's `scheduledMs`, or its place in the endpoint's queue when that is later.
   */
  retryMs: (endpoint: string, scheduledMs: number) => number;
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
/**
 * Places are spaced a little wider than attempts take, so that an attempt coming back at its
 * place finds the slot of the one before it free, not still held by its last steps.
 */
const PACE_MARGIN = 1.1;
/** Waits past the longest are spread over this fraction of it, not all due at one instant. */
const CAPPED_SPREAD = 0.1;
/** Endpoints remembered; past it the memory of the idle ones starts over. */
const ENDPOINTS_REMEMBERED = 10_000;

type Endpoint = {
  running: number;
  failing: boolean;
  meanMs: number;
  finished: number;
  /** The last place given in the endpoint's queue (ms since the epoch). */
  queuedUntil: number;
};

export function endpointGate(options: {
  perEndpoint: number;
  now?: () => number;
  /** Spreads the waits past the longest; a fraction from 0 to 1 (default: random). */
  jitter?: () => number;
}): EndpointGate {
  const { perEndpoint } = options;
  const now = options.now ?? Date.now;
  const jitter = options.jitter ?? Math.random;
  const endpoints = new Map<string, Endpoint>();

  const bound = (e: Endpoint) => (e.failing ? 1 : perEndpoint);
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

  /** The next place in `e`'s queue, no sooner than `earliestMs` from now; the wait until it. */
  const place = (e: Endpoint, earliestMs: number): number => {
    const at = now();
    let until = at + earliestMs;
    // With nothing running past the bound and nobody waiting, the schedule's time is free.
    if (e.running >= bound(e) || e.queuedUntil > at) {
      // Until an attempt has finished, paced as if one at a time: the endpoint may be dead.
      const slots = e.finished === 0 ? 1 : bound(e);
      const spacing = (e.meanMs * PACE_MARGIN) / slots;
      until = Math.max(until, Math.max(at, e.queuedUntil) + spacing);
    }
    if (until - at > MAX_DEFERRAL_MS) {
      e.queuedUntil = at + MAX_DEFERRAL_MS;
      return Math.max(earliestMs, Math.round(MAX_DEFERRAL_MS * (1 - CAPPED_SPREAD * jitter())));
    }
    e.queuedUntil = Math.max(e.queuedUntil, until);
    return Math.round(until - at);
  };

  return {
    enter: (key) => {
      const e = of(key);
      if (e.running >= bound(e)) return null;
      e.running += 1;
      const enteredAt = now();
      let left = false;
      return {
        leave: (posted) => {
          if (left) return;
          left = true;
          e.running -= 1;
          if (posted) {
            e.failing = !posted.ok;
            // The slot is held for the attempt's reads as well as its POST.
            const duration = Math.max(0, posted.durationMs, now() - enteredAt);
            e.meanMs = e.finished === 0 ? duration : e.meanMs + MEAN_WEIGHT * (duration - e.meanMs);
            e.finished += 1;
          }
          // A healthy endpoint with nothing running or queued is forgotten at once.
          if (idle(e) && endpoints.get(key) === e) endpoints.delete(key);
        },
      };
    },
    failing: (key) => endpoints.get(key)?.failing ?? false,
    deferralMs: (key) => Math.max(MIN_DEFERRAL_MS, place(of(key), MIN_DEFERRAL_MS)),
    retryMs: (key, scheduledMs) => {
      const e = endpoints.get(key);
      return e ? place(e, scheduledMs) : scheduledMs;
    },
    running: (key) => endpoints.get(key)?.running ?? 0,
  };
}
