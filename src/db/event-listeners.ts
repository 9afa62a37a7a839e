import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Mode } from '../domain/types';

/**
 * The registrations of running `cli webhooks listen` commands (migration 0022): while one is
 * live, every event of its application and mode notifies `LISTENERS_CHANNEL`.
 */

/** The channel the `events` insert trigger notifies for registered listeners (migration 0022). */
export const LISTENERS_CHANNEL = 'event_listeners';

/** The payload of that channel's notifications for an application and mode. */
export const listenersPayload = (applicationId: string, mode: Mode) => `${applicationId}/${mode}`;

/** Registers the listener `id` (again, should its row have been deleted) for `ttlSeconds`. */
export async function renewEventListener(
  db: CommonQueryMethods,
  listener: { id: string; applicationId: string; mode: Mode },
  ttlSeconds: number,
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO event_listeners (id, application_id, mode, expires_at)
    VALUES (${listener.id}, ${listener.applicationId}, ${listener.mode},
            now() + make_interval(secs => ${ttlSeconds}))
    ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at`);
}

export async function removeEventListener(db: CommonQueryMethods, id: string): Promise<void> {
  await db.query(sql.unsafe`DELETE FROM event_listeners WHERE id = ${id}`);
}

/** Deletes the listeners that expired (their command was killed); returns how many. */
export async function pruneEventListeners(db: CommonQueryMethods): Promise<number> {
  return db.oneFirst(sql.type(z.object({ n: z.number() }))`
    WITH gone AS (DELETE FROM event_listeners WHERE expires_at <= now() RETURNING 1)
    SELECT count(*)::int AS n FROM gone`);
}
