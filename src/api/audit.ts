import type Koa from 'koa';
import { actorName, withAudit, type AuditNote, type AuditSource } from '../db/audit-log';
import type { DashboardSession } from '../db/dashboard-accounts';
import type { DatabasePool, DatabaseTransactionConnection } from '../db/pool';
import type { AuditActor, AuditEntry } from '../domain/audit';
import type { Caller } from '../domain/types';
import { sessionOf } from './dashboard/guard';

/**
 * The audit log's side of a request (docs/security.md, Audit log): who sent it, and the change
 * it makes recorded in the change's own database transaction.
 */

export type { AuditNote };

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

async function requestSource(
  pool: DatabasePool,
  ctx: Koa.Context,
  caller: Caller | null | undefined,
): Promise<AuditSource> {
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

/** `withAudit` (src/db/audit-log.ts) with this request as the change's source. */
export async function audited<T>(
  pool: DatabasePool,
  ctx: Koa.Context,
  caller: Caller | null | undefined,
  change: (trx: DatabaseTransactionConnection) => Promise<T>,
  note: (result: T) => AuditNote | readonly AuditNote[] | null,
): Promise<T> {
  return withAudit(pool, await requestSource(pool, ctx, caller), change, note);
}

/**
 * `withAudit` for a change a dashboard account makes to its own account or its team, as the
 * session it signed in with (also one still enrolling in two-step sign-in).
 */
export function auditedBySession<T>(
  pool: DatabasePool,
  ctx: Koa.Context,
  session: Pick<DashboardSession, 'account_id' | 'email' | 'application_id'>,
  change: (trx: DatabaseTransactionConnection) => Promise<T>,
  note: (result: T) => AuditNote | null,
): Promise<T> {
  const source = {
    actor: { type: 'dashboard_account' as const, id: session.account_id, name: session.email },
    ip: ctx.ip || null,
    applicationId: session.application_id,
    mode: null,
  };
  return withAudit(pool, source, change, note);
}
