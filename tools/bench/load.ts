/**
 * Load generators with no I/O of their own: a closed loop (N clients) and an open model, which
 * sends on schedule whatever the earlier answers, so that a slow system shows as queueing in the
 * latency instead of as a slower sender.
 */

/** One unit of work; it throws to count as an error (the message is the error's kind). */
export type Send = () => Promise<void>;

export type LoadResult = {
  /** Requests sent (open model: all of the schedule). */
  sent: number;
  ok: number;
  errors: number;
  /** Error messages and how often each occurred. */
  errorKinds: Record<string, number>;
  /** Successful requests per second over the whole run, backlog drain included. */
  throughput: number;
  /** Milliseconds, of successful requests. */
  p50: number;
  p99: number;
  max: number;
  /** Seconds from the first send to the last answer. */
  elapsed: number;
};

/** The value at percentile `p` (0..100) of ascending `sorted`, by nearest rank; NaN if empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** Send times, in ms from the start, of `rate` requests per second for `durationS` seconds. */
export function schedule(rate: number, durationS: number): number[] {
  const count = Math.max(1, Math.round(rate * durationS));
  return Array.from({ length: count }, (_, i) => (i * 1000) / rate);
}

function summarize(
  latencies: number[],
  errorKinds: Record<string, number>,
  sent: number,
  elapsedMs: number,
  windowMs: number,
): LoadResult {
  latencies.sort((a, b) => a - b);
  const errors = Object.values(errorKinds).reduce((a, b) => a + b, 0);
  return {
    sent,
    ok: latencies.length,
    errors,
    errorKinds,
    throughput: latencies.length / (Math.max(elapsedMs, windowMs) / 1000),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies.at(-1) ?? Number.NaN,
    elapsed: elapsedMs / 1000,
  };
}

function errorKind(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Open model: `rate` requests per second for `durationS` seconds, each fired at its scheduled
 * time; its latency runs from that scheduled time, so a late timer (a busy event loop) counts
 * too. Waits for every request to answer.
 */
export async function openLoop(options: {
  rate: number;
  durationS: number;
  send: Send;
  now?: () => number;
  /** Stops sending (what was sent is still awaited). */
  signal?: AbortSignal;
}): Promise<LoadResult> {
  const now = options.now ?? (() => performance.now());
  const times = schedule(options.rate, options.durationS);
  const latencies: number[] = [];
  const errorKinds: Record<string, number> = {};
  const inFlight: Promise<void>[] = [];
  const start = now();
  let last = start;
  const fire = (at: number) =>
    options.send().then(
      () => {
        last = Math.max(last, now());
        latencies.push(now() - at);
      },
      (error: unknown) => {
        last = Math.max(last, now());
        const kind = errorKind(error);
        errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
      },
    );
  let next = 0;
  while (next < times.length && !options.signal?.aborted) {
    const current = now();
    while (next < times.length && start + times[next]! <= current) {
      inFlight.push(fire(start + times[next]!));
      next += 1;
    }
    if (next < times.length) await sleep(Math.max(0, start + times[next]! - now()));
  }
  await Promise.all(inFlight);
  return summarize(latencies, errorKinds, next, last - start, options.durationS * 1000);
}

/**
 * Closed loop: `concurrency` clients, each sending again as soon as it has an answer, for
 * `durationS` seconds after `warmupS` seconds whose requests are not counted.
 */
export async function closedLoop(options: {
  concurrency: number;
  durationS: number;
  warmupS?: number;
  send: Send;
  now?: () => number;
  signal?: AbortSignal;
}): Promise<LoadResult> {
  const now = options.now ?? (() => performance.now());
  const begin = now();
  const measureFrom = begin + (options.warmupS ?? 0) * 1000;
  const end = measureFrom + options.durationS * 1000;
  const latencies: number[] = [];
  const errorKinds: Record<string, number> = {};
  let sent = 0;
  const client = async () => {
    while (now() < end && !options.signal?.aborted) {
      const at = now();
      const counted = at >= measureFrom;
      if (counted) sent += 1;
      try {
        await options.send();
        if (counted) latencies.push(now() - at);
      } catch (error) {
        if (counted) {
          const kind = errorKind(error);
          errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
        }
        // An error can come back at once: yield, or this loop would starve timers and I/O.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, client));
  // Requests still running at the end are counted in `sent` and their time in `elapsed`.
  return summarize(latencies, errorKinds, sent, now() - measureFrom, options.durationS * 1000);
}

/**
 * Runs of the same load as one result (the interleaved rows' bursts): the completions over the
 * sum of their measured windows (a run that completed nothing counts its elapsed time). Latency
 * percentiles cannot be combined without the latencies: NaN.
 */
export function combineResults(results: readonly LoadResult[]): LoadResult {
  const sum = (f: (r: LoadResult) => number) => results.reduce((a, r) => a + f(r), 0);
  const errorKinds: Record<string, number> = {};
  for (const r of results) {
    for (const [kind, n] of Object.entries(r.errorKinds)) {
      errorKinds[kind] = (errorKinds[kind] ?? 0) + n;
    }
  }
  const windows = sum((r) => (r.throughput > 0 ? r.ok / r.throughput : r.elapsed));
  const ok = sum((r) => r.ok);
  return {
    sent: sum((r) => r.sent),
    ok,
    errors: sum((r) => r.errors),
    errorKinds,
    throughput: windows > 0 ? ok / windows : 0,
    p50: Number.NaN,
    p99: Number.NaN,
    max: Number.NaN,
    elapsed: sum((r) => r.elapsed),
  };
}
