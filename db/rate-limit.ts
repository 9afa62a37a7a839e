import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

/**
 * Fixed one-minute windows per credential and category, counted in Postgres so that every API
 * process shares them. Returns the count after this request and the seconds left in the window.
 */
export async function hitRateLimit(
  db: CommonQueryMethods,
  credentialId: string,
  category: string,
): Promise<{ count: number; retryAfterSeconds: number }> {
  return db.one(sql.type(z.object({ count: z.number(), retryAfterSeconds: z.number() }))`
    INSERT INTO rate_limit_counters AS c (credential_id, category, window_start, count)
    VALUES (${credentialId}, ${category}, date_trunc('minute', now()), 1)
    ON CONFLICT (credential_id, category, window_start) DO UPDATE SET count = c.count + 1
    RETURNING c.count,
      greatest(1, ceil(extract(epoch FROM (c.window_start + interval '1 minute' - now()))))::int AS "retryAfterSeconds"`);
}
