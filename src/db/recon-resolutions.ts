import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { AuditEntry } from '../domain/audit';
import { reconAdjustment } from '../domain/recon-adjustments';
import type { Mode } from '../domain/types';
import { recordAudit } from './audit-log';
import { lockAccounts, postLedgerTransaction, systemAccountId } from './ledger';
import {
  reconExceptionAnswer,
  reconExceptionColumns,
  reconExceptionRow,
  toReconException,
  type ReconException,
} from './recon-exceptions';
import { findTransaction } from './transactions';
import { insertEvent } from './transaction-events';

/** Resolutions of provider-reconciliation exceptions (docs/api.md, Reconciliation). */

export const RECON_RESOLUTIONS = ['accept', 'adjust'] as const;
export type ReconResolution = (typeof RECON_RESOLUTIONS)[number];

/** Who may see an exception: an application in a mode, or a platform admin (any). */
export type ReconScope = { applicationId: string; mode: Mode } | { admin: true };

/** Why a resolution wrote nothing; `id` names the exception. */
export type ReconRefusal =
  | { refused: 'not_found' | 'forbidden' | 'resolved'; id: string }
  | { refused: 'insufficient_funds' | 'not_adjustable'; id: string; detail?: string };

export type ResolvedExceptions = { resolved: ReconException[] } | ReconRefusal;

/** The exceptions, their rows locked in id order (so that two bulk resolutions never deadlock). */
async function lockExceptions(
  trx: DatabaseTransactionConnection,
  ids: readonly string[],
): Promise<ReconException[]> {
  const rows = await trx.any(sql.type(reconExceptionRow)`
    SELECT ${reconExceptionColumns} FROM recon_exceptions
    WHERE id = ANY(${sql.array([...ids], 'uuid')})
    ORDER BY id
    FOR NO KEY UPDATE`);
  return rows.map(toReconException);
}

/** The first of `ids` that is missing, another scope's, or resolved; null when all can be. */
function firstRefused(
  ids: readonly string[],
  found: ReadonlyMap<string, ReconException>,
  scope: ReconScope,
): ReconRefusal | null {
  for (const id of ids) {
    const e = found.get(id);
    if (!e) return { refused: 'not_found', id };
    if (
      'applicationId' in scope &&
      (e.applicationId !== scope.applicationId || e.mode !== scope.mode)
    ) {
      return { refused: 'forbidden', id };
    }
  }
  for (const id of ids) {
    if (found.get(id)!.status === 'resolved') return { refused: 'resolved', id };
  }
  return null;
}

/** Marks a locked exception resolved and writes its `reconciliation.exception.resolved` event. */
async function markResolved(
  trx: DatabaseTransactionConnection,
  id: string,
  resolution: { resolution: ReconResolution; note: string; resolvedBy: string },
): Promise<ReconException> {
  const row = await trx.one(sql.type(reconExceptionRow)`
    UPDATE recon_exceptions
    SET status = 'resolved', resolution = ${resolution.resolution}, note = ${resolution.note},
      resolved_by = ${resolution.resolvedBy}, resolved_at = now(), updated_at = now()
    WHERE id = ${id}
    RETURNING ${reconExceptionColumns}`);
  const resolved = toReconException(row);
  // Not keyed by the payment: one payment may have several exceptions, each resolved once.
  await insertEvent(trx, {
    applicationId: resolved.applicationId,
    mode: resolved.mode,
    type: 'reconciliation.exception.resolved',
    transactionId: null,
    data: reconExceptionAnswer(resolved),
  });
  return resolved;
}

/**
 * Accepts exceptions in one database transaction, all or none: the first id that is unknown,
 * another application's or already resolved refuses the whole request, and nothing is written.
 */
export async function acceptReconExceptions(
  db: CommonQueryMethods & Pick<DatabaseTransactionConnection, 'transaction'>,
  scope: ReconScope,
  ids: readonly string[],
  acceptance: { note: string; resolvedBy: string },
): Promise<ResolvedExceptions> {
  const unique = [...new Set(ids.map((id) => id.toLowerCase()))];
  return db.transaction(async (trx) => {
    const found = new Map((await lockExceptions(trx, unique)).map((e) => [e.id, e]));
    const refused = firstRefused(unique, found, scope);
    if (refused) return refused;
    const resolved: ReconException[] = [];
    for (const id of unique) {
      resolved.push(await markResolved(trx, id, { resolution: 'accept', ...acceptance }));
    }
    return { resolved };
  });
}

export type ReconAdjustmentRow = {
  id: string;
  exceptionId: string;
  ledgerTransactionId: string;
  walletId: string;
  amount: bigint;
  currency: string;
};

/**
 * The `adjust` resolution in one database transaction: the balanced ledger transaction between
 * the payment's wallet and the provider's clearing account, the `recon_adjustments` row, the
 * resolution and its event. A wallet it would take below zero refuses it, and nothing is written.
 */
export async function adjustReconException(
  db: CommonQueryMethods & Pick<DatabaseTransactionConnection, 'transaction'>,
  input: {
    exceptionId: string;
    adjustmentId: string;
    note: string;
    resolvedBy: string;
    audit?: AuditEntry;
  },
): Promise<{ resolved: ReconException; adjustment: ReconAdjustmentRow } | ReconRefusal> {
  const id = input.exceptionId;
  return db.transaction(async (trx) => {
    const [exception] = await lockExceptions(trx, [id]);
    if (!exception) return { refused: 'not_found', id };
    if (exception.status === 'resolved') {
      // A retry of the step that wrote it answers what it wrote.
      const written = await findReconAdjustment(trx, id);
      return written?.id === input.adjustmentId
        ? { resolved: exception, adjustment: written }
        : { refused: 'resolved', id };
    }
    const payment = exception.transactionId
      ? await findTransaction(trx, exception.transactionId)
      : null;
    if (!payment?.wallet_id) {
      return {
        refused: 'not_adjustable',
        id,
        detail: 'The exception names no payment of a wallet: there is no wallet to adjust',
      };
    }
    const { amount, basis, currency } = reconAdjustment({
      type: payment.transaction_type,
      paymentAmount: payment.amount,
      ours: exception.ours,
      theirs: exception.theirs,
    });
    if (basis === 'difference' && currency !== payment.currency) {
      return {
        refused: 'not_adjustable',
        id,
        detail: `The provider counts this payment in ${currency ?? 'two currencies'}, the wallet in ${payment.currency}: the difference cannot be adjusted`,
      };
    }
    if (amount === 0n) {
      return {
        refused: 'not_adjustable',
        id,
        detail: 'The provider and the engine moved the same amount: there is nothing to adjust',
      };
    }
    const walletId = payment.wallet_id;
    const clearing = await systemAccountId(
      trx,
      exception.applicationId,
      exception.mode,
      exception.provider === 'card' ? 'provider_clearing_card' : 'provider_clearing_mobile_money',
      payment.currency,
    );
    const accounts = await lockAccounts(trx, [walletId, clearing]);
    if ((accounts.get(walletId)?.balance ?? 0n) + amount < 0n) {
      return { refused: 'insufficient_funds', id };
    }
    const ledgerTransactionId = await postLedgerTransaction(trx, {
      applicationId: exception.applicationId,
      mode: exception.mode,
      transactionId: payment.id,
      kind: 'recon_adjustment',
      description: `Reconciliation adjustment of exception ${id}`,
      metadata: { recon_exception_id: id },
      postings: [
        { accountId: walletId, currency: payment.currency, amount },
        { accountId: clearing, currency: payment.currency, amount: -amount },
      ],
    });
    const adjustment: ReconAdjustmentRow = {
      id: input.adjustmentId,
      exceptionId: id,
      ledgerTransactionId,
      walletId,
      amount,
      currency: payment.currency,
    };
    await trx.query(sql.unsafe`
      INSERT INTO recon_adjustments (id, exception_id, ledger_transaction_id, wallet_id, amount,
        currency)
      VALUES (${adjustment.id}, ${id}, ${ledgerTransactionId}, ${walletId},
        ${amount.toString()}, ${adjustment.currency})`);
    const resolved = await markResolved(trx, id, {
      resolution: 'adjust',
      note: input.note,
      resolvedBy: input.resolvedBy,
    });
    if (input.audit) {
      const { details, ...entry } = input.audit;
      await recordAudit(trx, {
        ...entry,
        details: { ...details, amount: amount.toString(), currency: adjustment.currency },
      });
    }
    return { resolved, adjustment };
  });
}

const adjustmentRow = z.object({
  id: z.string(),
  exception_id: z.string(),
  ledger_transaction_id: z.string(),
  wallet_id: z.string(),
  amount: z.bigint(),
  currency: z.string(),
});

/** The adjustment an `adjust` resolution wrote for the exception, or null. */
export async function findReconAdjustment(
  db: CommonQueryMethods,
  exceptionId: string,
): Promise<ReconAdjustmentRow | null> {
  const row = await db.maybeOne(sql.type(adjustmentRow)`
    SELECT id, exception_id, ledger_transaction_id, wallet_id, amount, currency
    FROM recon_adjustments WHERE exception_id = ${exceptionId}`);
  return (
    row && {
      id: row.id,
      exceptionId: row.exception_id,
      ledgerTransactionId: row.ledger_transaction_id,
      walletId: row.wallet_id,
      amount: row.amount,
      currency: row.currency,
    }
  );
}

/** The exceptions of a payment, oldest first (its timeline shows them). */
export async function reconExceptionsOfPayment(
  db: CommonQueryMethods,
  transactionId: string,
): Promise<ReconException[]> {
  const rows = await db.any(sql.type(reconExceptionRow)`
    SELECT ${reconExceptionColumns} FROM recon_exceptions
    WHERE transaction_id = ${transactionId}
    ORDER BY created_at, id LIMIT 100`);
  return rows.map(toReconException);
}

/** The application and mode of a run, or null: a read of another's run is 403, not 404. */
export async function reconRunOwner(
  db: CommonQueryMethods,
  id: string,
): Promise<{ application_id: string; mode: Mode } | null> {
  return db.maybeOne(
    sql.type(z.object({ application_id: z.string(), mode: z.enum(['test', 'live']) }))`
      SELECT application_id, mode FROM recon_runs WHERE id = ${id}`,
  );
}
