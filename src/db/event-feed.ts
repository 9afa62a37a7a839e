import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Mode } from '../domain/types';
import { eventRow, type EventRow } from './webhook-deliveries';

/**
 * An application's events as they commit, for `cli webhooks listen`. An event's `created_at` is
 * its transaction's start, so events commit out of that order: a reader re-reads a window
 * behind its last read and skips the ids it has seen, instead of trusting a strict cursor.
 */

export type FeedScope = {
  applicationId: string;
  mode: Mode;
  /** Only these types; null: every type. */
  types: readonly string[] | null;
};

export type FeedRead = {
  /** The database's clock at the read: the next read's window ends `lookbackSeconds` before it. */
  readAt: string;
  events: { id: string; created_at: string }[];
};

/**
 * The ids of the scope's events written within `lookbackSeconds` before `since` (before now
 * when `since` is null) or later, oldest first, and when they were read.
 */
export async function readEventWindow(
  db: CommonQueryMethods,
  scope: FeedScope,
  since: string | null,
  lookbackSeconds: number,
): Promise<FeedRead> {
  const rows = await db.any(sql.type(
    z.object({ read_at: z.string(), id: z.string().nullable(), created_at: z.string().nullable() }),
  )`
    WITH clock AS (SELECT now() AS read_at)
    SELECT clock.read_at, e.id, e.created_at
    FROM clock LEFT JOIN events e
      ON e.application_id = ${scope.applicationId} AND e.mode = ${scope.mode}
     AND e.created_at > coalesce(${since}::timestamptz, clock.read_at)
                        - make_interval(secs => ${lookbackSeconds})
     AND (${scope.types === null}::boolean
          OR e.type = ANY (${sql.array(scope.types ?? [], 'text')}))
    ORDER BY e.created_at, e.id`);
  return {
    readAt: rows[0]!.read_at,
    events: rows.flatMap((r) =>
      r.id && r.created_at ? [{ id: r.id, created_at: r.created_at }] : [],
    ),
  };
}

/** These events, whole, oldest first. */
export async function findEvents(
  db: CommonQueryMethods,
  ids: readonly string[],
): Promise<readonly EventRow[]> {
  if (ids.length === 0) return [];
  return db.any(sql.type(eventRow)`
    SELECT id, application_id, mode, type, data, created_at FROM events
    WHERE id = ANY (${sql.array(ids, 'uuid')})
    ORDER BY created_at, id`);
}
