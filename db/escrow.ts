import { sql, type DatabaseTransactionConnection, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { transactionColumns, transactionRow, type TransactionRow } from './transactions';
import { joinedWalletState, type WalletState } from './wallets';
import { prepare } from './pool';

const lockedHold = transactionRow.extend({
  step_made: z.boolean(),
  at: z.string(),
  escrow_fee_bps: z.number().int(),
  escrow_fee_fixed: z.bigint(),
  recipient_id: z.string().nullable(),
  recipient_application_id: z.string().nullable(),
  recipient_mode: z.enum(['test', 'live']).nullable(),
  recipient_is_active: z.boolean().nullable(),
  recipient_currency: z.enum(['USD', 'SLE']).nullable(),
});

/** A hold locked for one money step, with what the step reads besides (`lockHold`). */
export type LockedHold = {
  hold: TransactionRow;
  /** The step's own payment row is written already: a retry, answered with that step. */
  stepMade: boolean;
  /** The database transaction's `now()` (for db/money-steps.ts). */
  at: string;
  /** The application's escrow fee, as it is now. */
  fee: { bps: number; fixed: bigint };
  /** The state of the wallet a release pays (undefined: no such wallet, or none asked). */
  recipient: WalletState | undefined;
};

/**
 * The hold, locked for one money step (it must exist), and in the same round trip what the step
 * reads next: whether the step `stepId` is written already, the application's escrow fee, the
 * recipient wallet's state (a release) and the database transaction's `now()`. Every step of a
 * hold locks it first, so the lock orders the steps; a step written by an attempt that
 * committed while this one waited for the lock is not seen by this statement's snapshot, and
 * the step's insert then meets its primary key: a retryable error (db/errors.ts), and the
 * retry answers with that step.
 */
export async function lockHold(
  trx: DatabaseTransactionConnection,
  holdId: string,
  stepId: string,
  recipientId: string | null = null,
): Promise<LockedHold> {
  const row = await trx.maybeOne(
    prepare(sql.type(lockedHold)`
    SELECT t.*, EXISTS (SELECT 1 FROM transactions s WHERE s.id = ${stepId}) AS step_made, now() AS at,
      app.escrow_fee_bps, app.escrow_fee_fixed,
      rw.id AS recipient_id, rw.application_id AS recipient_application_id, rw.mode AS recipient_mode,
      rw.is_active AS recipient_is_active, ra.currency AS recipient_currency
    FROM (
      SELECT ${transactionColumns} FROM transactions
      WHERE id = ${holdId} AND transaction_type = 'escrow_hold'
      FOR NO KEY UPDATE
    ) t
    JOIN applications app ON app.id = t.application_id
    LEFT JOIN wallets rw ON rw.id = ${recipientId}::uuid
    LEFT JOIN ledger_accounts ra ON ra.id = rw.id`),
  );
  if (!row) throw new Error(`escrow hold ${holdId} has no record`);
  const { step_made, at, escrow_fee_bps, escrow_fee_fixed, ...rest } = row;
  const {
    recipient_id: id,
    recipient_application_id: application_id,
    recipient_mode: mode,
    recipient_is_active: is_active,
    recipient_currency: currency,
    ...hold
  } = rest;
  return {
    hold,
    stepMade: step_made,
    at,
    fee: { bps: escrow_fee_bps, fixed: escrow_fee_fixed },
    recipient: joinedWalletState({ id, application_id, mode, is_active, currency }),
  };
}

/**
 * What a hold still holds after a step, as a part of the step's ledger statement (db/ledger.ts
 * `alongside`); when nothing is left it ends with the given status.
 */
export function shrinkHoldPart(
  holdId: string,
  remaining: bigint,
  endStatus: 'completed' | 'reversed',
): FragmentSqlToken {
  return sql.fragment`hold_shrunk AS (
    UPDATE transactions SET escrow_amount = ${remaining.toString()},
      status = CASE WHEN ${remaining.toString()}::bigint = 0 THEN ${endStatus} ELSE status END,
      updated_at = now()
    WHERE id = ${holdId})`;
}
