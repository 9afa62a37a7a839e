import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { Mode } from '../domain/types';

/** What an application may hold at most per mode (config `caps`), and which rows count. */
const CAPPED = {
  credentials: {
    what: 'active credentials',
    free: 'revoke one first',
    counted: sql.fragment`revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
  },
  webhook_subscriptions: {
    what: 'webhook subscriptions',
    free: 'delete one first',
    counted: sql.fragment`true`,
  },
} as const;

/** A creation refused because the application and mode hold as many as they may. */
export class CapReachedError extends Error {
  constructor(table: keyof typeof CAPPED, cap: number, mode: Mode) {
    const { what, free } = CAPPED[table];
    super(`This application already has ${cap} ${what} in ${mode} mode, the most allowed: ${free}`);
    this.name = 'CapReachedError';
  }
}

/**
 * Inserts a row of `table` unless the application and mode hold `cap` of them already
 * (CapReachedError). The count and the insert follow a lock of the application, mode and table,
 * in statements of their own, so that two creations at once cannot both see room for one.
 */
export async function insertWithinCap<T>(
  db: CommonQueryMethods,
  table: keyof typeof CAPPED,
  owner: { applicationId: string; mode: Mode },
  cap: number,
  insert: (trx: DatabaseTransactionConnection) => Promise<T>,
): Promise<T> {
  return db.transaction(async (trx) => {
    await trx.query(sql.unsafe`
      SELECT pg_advisory_xact_lock(hashtextextended(${`cap\n${table}\n${owner.applicationId}\n${owner.mode}`}, 0))`);
    const held = await trx.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM ${sql.identifier([table])}
      WHERE application_id = ${owner.applicationId} AND mode = ${owner.mode}
        AND ${CAPPED[table].counted}`);
    if (held >= cap) throw new CapReachedError(table, cap, owner.mode);
    return insert(trx);
  });
}
