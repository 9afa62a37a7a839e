import type Koa from 'koa';
import { actorName, recordAudit } from '../db/audit-log';
import type { DatabasePool, DatabaseTransactionConnection } from '../db/pool';
import type { AuditActor, AuditEntry } from '../domain/audit';
import type { Caller } from '../domain/types';
import { sessionOf } from './dashboard/session';

/**
 * The audit log's side of a request (docs/security.md, Audit log): who sent it, and the change
 * it makes recorded in the change's own database transaction.
 */

/** What a route says of its change; the request says who and from where. */
export type AuditNote = Pick<AuditEntry, 'action' | 'target' | 'details'> &
  Partial<Pick<AuditEntry, 'applicationId' | 'mode'>>;

/**
 * Who sent the request: the signed-in dashboard account, else the admin credential, else the
 * application's credential (on a route that takes one).
 */
export async function requestActor(
  pool: DatabasePool,
  ctx: Koa.Context,
  caller: Caller | null | undefined,
): Promise<AuditActor> {
  const session = sessionOf(ctx);
  if (session) return { type: 'dashboard_account', id: session.account_id, name: session.email };
  const admin = (ctx.state as { admin?: { id: string } }).admin;
  if (admin) {
    const name = await actorName(pool, { type: 'admin', id: admin.id });
    return { type: 'admin', id: admin.id, name: name ?? admin.id };
  }
  if (!caller) throw new Error('a change recorded without a caller');
  const name = await actorName(pool, { type: 'application', id: caller.credentialId });
  return { type: 'application', id: caller.credentialId, name: name ?? caller.credentialId };
}

/** Who made a change and where it belongs: an entry's fields that the route does not say. */
type Source = Pick<AuditEntry, 'actor' | 'ip' | 'applicationId' | 'mode'>;

async function requestSource(
  pool: DatabasePool,
  ctx: Koa.Context,
  caller: Caller | null | undefined,
): Promise<Source> {
  return {
    actor: await requestActor(pool, ctx, caller),
    ip: ctx.ip || null,
    applicationId: caller?.applicationId ?? null,
    mode: caller?.mode ?? null,
  };
}

/** The whole entry of a change this request makes, for a workflow to carry to its activity. */
export async function auditEntry(
  pool: DatabasePool,
  ctx: Koa.Context,
  caller: Caller | null | undefined,
  note: AuditNote,
): Promise<AuditEntry> {
  return { ...(await requestSource(pool, ctx, caller)), ...note };
}

/**
 * Makes `change` and records what `note` says of its result (null: nothing changed) in one
 * database transaction: a change that rolls back leaves no entry, and an entry that fails
 * rolls the change back.
 */
export async function audited<T>(
  pool: DatabasePool,
  ctx: Koa.Context,
  caller: Caller | null | undefined,
  change: (trx: DatabaseTransactionConnection) => Promise<T>,
  note: (result: T) => AuditNote | readonly AuditNote[] | null,
): Promise<T> {
  const source = await requestSource(pool, ctx, caller);
  return pool.transaction(async (trx) => {
    const result = await change(trx);
    const said = note(result);
    for (const one of said === null ? [] : Array.isArray(said) ? said : [said]) {
      await recordAudit(trx, { ...source, ...(one as AuditNote) });
    }
    return result;
  });
}
