import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import {
  AUDIT_ACTOR_TYPES,
  withoutSecrets,
  type AuditActor,
  type AuditEntry,
  type AuditValue,
} from '../domain/audit';

/**
 * The audit log (docs/security.md, Audit log). `recordAudit` is the one way an entry is written:
 * on the connection of the change it records, so that both commit or roll back together, with
 * its details filtered through `withoutSecrets`. The table refuses UPDATE, DELETE and TRUNCATE.
 */

/** Writes one entry in `db`'s transaction (the change's own); answers the entry's id. */
export async function recordAudit(db: CommonQueryMethods, entry: AuditEntry): Promise<string> {
  const id = randomUUID();
  await db.query(sql.unsafe`
    INSERT INTO audit_log (id, actor_type, actor_id, actor_name, action, target_type, target_id,
                           ip, details, application_id, mode)
    VALUES (${id}, ${entry.actor.type}, ${entry.actor.id}, ${entry.actor.name.slice(0, 254)},
            ${entry.action}, ${entry.target.type}, ${entry.target.id}, ${entry.ip},
            ${sql.jsonb(withoutSecrets(entry.details))}, ${entry.applicationId},
            ${entry.mode ?? null})`);
  return id;
}

/** What a change says of itself; who made it and where it belongs come from its source. */
export type AuditNote = Pick<AuditEntry, 'action' | 'target' | 'details'> &
  Partial<Pick<AuditEntry, 'applicationId' | 'mode'>>;

/** Who makes a change and where it belongs: an entry's fields that the change does not say. */
export type AuditSource = Pick<AuditEntry, 'actor' | 'ip' | 'applicationId' | 'mode'>;

/**
 * Makes `change` and records what `note` says of its result (null: nothing changed) in one
 * database transaction: a change that rolls back leaves no entry, and an entry that fails
 * rolls the change back.
 */
export async function withAudit<T>(
  db: Pick<DatabaseTransactionConnection, 'transaction'>,
  source: AuditSource,
  change: (trx: DatabaseTransactionConnection) => Promise<T>,
  note: (result: T) => AuditNote | readonly AuditNote[] | null,
): Promise<T> {
  return db.transaction(async (trx) => {
    const result = await change(trx);
    const said = note(result);
    const notes: readonly AuditNote[] = said === null ? [] : Array.isArray(said) ? said : [said];
    for (const one of notes) await recordAudit(trx, { ...source, ...one });
    return result;
  });
}

const auditRow = z.object({
  id: z.string(),
  at: z.string(),
  actor_type: z.enum(AUDIT_ACTOR_TYPES),
  actor_id: z.string(),
  actor_name: z.string(),
  action: z.string(),
  target_type: z.string(),
  target_id: z.string().nullable(),
  ip: z.string().nullable(),
  details: z.record(z.string(), z.custom<AuditValue>()),
  application_id: z.string().nullable(),
  mode: z.enum(['test', 'live']).nullable(),
});
export type AuditRow = z.infer<typeof auditRow>;

const columns = sql.fragment`id, at, actor_type, actor_id, actor_name, action, target_type,
  target_id, ip, details, application_id, mode`;

export type AuditFilter = {
  /** One application's entries; absent: every entry (admins). */
  applicationId?: string;
  action?: string;
  actorId?: string;
  atGte?: string;
  atLt?: string;
};

/**
 * A cursor page of entries, newest first: those after `startingAfter` (an entry the filter's
 * application may see) in that order; null when that entry is not one it may see.
 */
export async function listAuditLog(
  db: CommonQueryMethods,
  filter: AuditFilter,
  page: { startingAfter?: string; limit: number },
): Promise<{ rows: readonly AuditRow[]; hasMore: boolean } | null> {
  const where = [sql.fragment`TRUE`];
  if (filter.applicationId !== undefined) {
    where.push(sql.fragment`application_id = ${filter.applicationId}`);
  }
  if (filter.action !== undefined) where.push(sql.fragment`action = ${filter.action}`);
  if (filter.actorId !== undefined) where.push(sql.fragment`actor_id = ${filter.actorId}`);
  if (filter.atGte !== undefined) where.push(sql.fragment`at >= ${filter.atGte}::timestamptz`);
  if (filter.atLt !== undefined) where.push(sql.fragment`at < ${filter.atLt}::timestamptz`);
  if (page.startingAfter !== undefined) {
    const scope =
      filter.applicationId === undefined
        ? sql.fragment`TRUE`
        : sql.fragment`application_id = ${filter.applicationId}`;
    const cursor = await db.maybeOne(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM audit_log WHERE id = ${page.startingAfter} AND ${scope}`);
    if (!cursor) return null;
    where.push(sql.fragment`(at, id) < (SELECT at, id FROM audit_log WHERE id = ${cursor.id})`);
  }
  const rows = await db.any(sql.type(auditRow)`
    SELECT ${columns} FROM audit_log WHERE ${sql.join(where, sql.fragment` AND `)}
    ORDER BY at DESC, id DESC LIMIT ${page.limit + 1}`);
  return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}

/** The names an actor is shown by: an admin's name, a credential's API key hint. */
export async function actorName(
  db: CommonQueryMethods,
  actor: Pick<AuditActor, 'type' | 'id'>,
): Promise<string | null> {
  if (actor.type === 'admin') {
    return db.maybeOneFirst(sql.type(z.object({ name: z.string() }))`
      SELECT name FROM admins WHERE id = ${actor.id}`);
  }
  if (actor.type === 'application') {
    return db.maybeOneFirst(sql.type(z.object({ name: z.string() }))`
      SELECT api_key_hint AS name FROM credentials WHERE id = ${actor.id}`);
  }
  return null;
}
