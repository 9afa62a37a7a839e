/**
 * When a webhook delivery tries again (docs/api.md, Webhooks): the first three attempts within one
 * minute, then exponential backoff to at most an hour apart, for at least 72 hours. Pure, so the
 * delivery workflow, its tests and docs/api.md read the same schedule.
 */
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Attempts keep coming until this long after the first; the one at or past it is the last. */
export const WEBHOOK_RETRY_WINDOW_MS = 72 * HOUR;
export const WEBHOOK_MAX_RETRY_INTERVAL_MS = HOUR;

/** The wait after failed attempt `attempt` (1-based): 5 s, 30 s, then 1 min doubling to 1 h. */
export function webhookRetryDelayMs(attempt: number): number {
  if (attempt <= 1) return 5 * SECOND;
  if (attempt === 2) return 30 * SECOND;
  return Math.min(MINUTE * 2 ** (attempt - 3), WEBHOOK_MAX_RETRY_INTERVAL_MS);
}

/**
 * The wait after attempt `attempt`, made `elapsedMs` after the first, should it fail; null when
 * it is the last (the retry window is over).
 */
export function webhookNextRetryMs(attempt: number, elapsedMs: number): number | null {
  return elapsedMs >= WEBHOOK_RETRY_WINDOW_MS ? null : webhookRetryDelayMs(attempt);
}
