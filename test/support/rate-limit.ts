import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

/** Seconds left in the current one-minute rate-limit window, by the database clock. */
export async function secondsLeftInWindow(pool: DatabasePool): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ left: z.number() }))`
    SELECT extract(epoch FROM date_trunc('minute', now()) + interval '1 minute' - now())::float8 AS left`);
}

/**
 * Windows are fixed minutes (src/db/rate-limit.ts): a burst that straddles a minute boundary would be
 * counted in two windows, and a test expecting the limit would see a request get through. Wait
 * for the next minute when too little of this one is left for the burst.
 */
export async function awaitRoomInWindow(pool: DatabasePool, seconds = 20): Promise<void> {
  const left = await secondsLeftInWindow(pool);
  if (left < seconds) await sleep(left * 1000 + 250);
}
