import { sql, type DatabaseTransactionConnection, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { transactionColumns, transactionRow, type TransactionRow } from './transactions';
import {
  holdFacts,
  joinedWalletState,
  joinedWalletStateShape,
  walletFacts,
  type WalletState,
} from './wallet-facts';
import { prepare } from './pool';
import {
  factColumns,
  firstBrokenRule,
  HOLD_FIELDS,
  WALLET_FIELDS,
  type MoneyStepGuard,
} from './money-rules';
import { holdRules, releaseRules } from '../domain/money-rules';

const lockedHold = transactionRow.extend({
  step_made: z.boolean(),
  at: z.string(),
  escrow_fee_bps: z.number().int(),
  escrow_fee_fixed: z.bigint(),
  ...joinedWalletStateShape('recipient_'),
});
const TRANSACTION_FIELDS = Object.keys(transactionRow.shape) as (keyof TransactionRow)[];

/** A hold locked for one money step, with what the step reads besides (`lockHold`). */
export type LockedHold = {
  hold: TransactionRow;
  /** The step's own payment row is written already: a retry, answered with that step. */
  stepMade: boolean;
  /** The database transaction's `now()` (for src/db/money-steps.ts). */
  at: string;
  /** The application's escrow fee, as it is now. */
  fee: { bps: number; fixed: bigint };
  /** The state of the wallet a release pays (undefined: no such wallet, or none asked). */
  recipient: WalletState | undefined;
};

/**
 * The hold (it must exist), locked for one money step, with what the step reads next. The lock
 * orders a hold's steps; one committed while this waited is not in this snapshot, so the insert
 * meets its primary key: a retryable error (src/db/errors.ts), whose retry answers with that step.
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
      ${walletFacts(RECIPIENT_TABLES, { prefix: 'recipient_', omit: ['balance'] })}
    FROM (
      SELECT ${transactionColumns} FROM transactions
      WHERE id = ${holdId} AND transaction_type = 'escrow_hold'
      FOR NO KEY UPDATE
    ) t
    JOIN applications app ON app.id = t.application_id
    LEFT JOIN wallets rw ON rw.id = ${recipientId}::uuid
    LEFT JOIN ledger_accounts ra ON ra.id = rw.id
    LEFT JOIN applications rapp ON rapp.id = rw.application_id`),
  );
  if (!row) throw new Error(`escrow hold ${holdId} has no record`);
  // The hold's own columns, picked: one of them (`recipient_wallet_id`) shares the prefix.
  const hold = Object.fromEntries(TRANSACTION_FIELDS.map((f) => [f, row[f]])) as TransactionRow;
  return {
    hold,
    stepMade: row.step_made,
    at: row.at,
    fee: { bps: row.escrow_fee_bps, fixed: row.escrow_fee_fixed },
    recipient: joinedWalletState(row, 'recipient_'),
  };
}

/** The tables `lockHold` reads its recipient's facts from (`app` is the hold's application). */
const RECIPIENT_TABLES = { wallet: 'rw', account: 'ra', application: 'rapp' };

/**
 * What a hold still holds after a step, as a part of the step's ledger statement (src/db/ledger.ts
 * `alongside`); when nothing is left it ends with the given status.
 */
export function shrinkHoldPart(
  holdId: string,
  remaining: bigint,
  endStatus: 'completed' | 'reversed',
  guard?: FragmentSqlToken,
): FragmentSqlToken {
  return sql.fragment`hold_shrunk AS (
    UPDATE transactions SET escrow_amount = ${remaining.toString()},
      status = CASE WHEN ${remaining.toString()}::bigint = 0 THEN ${endStatus} ELSE status END,
      updated_at = now()
    WHERE id = ${holdId}${guard ? sql.fragment` AND ${guard}` : sql.fragment``})`;
}

/**
 * A hold as this process last saw it committed (a hold, release or refund step of its own):
 * its row, `escrow_amount` what it held then. All but the amount and the status never change.
 */
export type HoldMemory = Map<string, TransactionRow>;

/** An application's escrow fee as this process last read it (by application id). */
export type EscrowFeeMemory = Map<string, { bps: number; fixed: bigint }>;

/**
 * What a release written in one statement checks, given the hold and fee as remembered (see
 * docs/architecture.md, The escrow path). The hold is locked first, as `lockHold` does: the
 * accounts' lock reads it as an init plan, run before any of their rows is locked.
 */
export function releaseGuard(step: {
  releaseId: string;
  hold: TransactionRow;
  recipientWalletId: string;
  amount: bigint | null;
  feeAccountId: string | null;
  fee: { bps: number; fixed: bigint };
}): MoneyStepGuard {
  const { hold } = step;
  const system = [hold.escrow_wallet_id!, ...(step.feeAccountId ? [step.feeAccountId] : [])];
  const rules = firstBrokenRule(releaseRules, {
    applicationId: hold.application_id,
    mode: hold.mode,
    recipientWalletId: step.recipientWalletId,
    amount: step.amount,
  });
  return {
    prelude: sql.fragment`release_hold AS (
      SELECT ${holdFacts} FROM transactions
      WHERE id = ${hold.id} AND transaction_type = 'escrow_hold' AND status = 'held'
        AND escrow_amount = ${hold.escrow_amount.toString()}::int8
      FOR NO KEY UPDATE
    ), release_accounts AS (
      SELECT ${walletFacts({ scope: 'account' }, { omit: ['balance'] })}, a.kind,
        w.id AS wallet_id
      FROM ledger_accounts a LEFT JOIN wallets w ON w.id = a.id
        JOIN applications app ON app.id = a.application_id
      WHERE a.id = ANY(${sql.array([step.recipientWalletId, ...system], 'uuid')})
        AND EXISTS (SELECT 1 FROM release_hold)
      ORDER BY (a.kind <> 'user_wallet'), a.id
      FOR NO KEY UPDATE OF a
    ), release_facts AS (
      SELECT ${factColumns('hold', 'h', HOLD_FIELDS)},
        r.wallet_id AS recipient_id, ${factColumns('recipient', 'r', RECIPIENT_FIELDS)}
      FROM (SELECT) one
        LEFT JOIN release_hold h ON true
        LEFT JOIN release_accounts r ON r.id = ${step.recipientWalletId} AND r.wallet_id IS NOT NULL
    ), release_checked AS (
      SELECT ${rules} AS declined,
        (SELECT count(*) FROM release_accounts WHERE kind <> 'user_wallet'
          AND application_id = ${hold.application_id} AND mode = ${hold.mode}
          AND currency = ${hold.currency}
          AND CASE WHEN id = ${hold.escrow_wallet_id}::uuid THEN kind = 'escrow'
            ELSE kind = 'application_fees' END) = ${system.length}
        AND EXISTS (SELECT 1 FROM applications app WHERE app.id = ${hold.application_id}
          AND app.escrow_fee_bps = ${step.fee.bps} AND app.escrow_fee_fixed = ${step.fee.fixed.toString()}::int8)
        AND NOT EXISTS (SELECT 1 FROM transactions t WHERE t.id = ${step.releaseId}) AS ready
      FROM release_facts
    )`,
    guard: sql.fragment`coalesce((SELECT declined IS NULL AND ready FROM release_checked), false)`,
    declined: sql.fragment`(SELECT declined FROM release_checked)`,
  };
}

/** A recipient's fields but its id (the wallet's, `wallet_id`, read apart). */
const RECIPIENT_FIELDS = WALLET_FIELDS.filter((f) => f !== 'id' && f !== 'balance');

/**
 * What a hold written in one statement checks (src/db/money-steps.ts `recordMoneyStepAtOnce`): it locks
 * the sender's wallet and the escrow account in `lockAccounts` order, and writes only where the
 * hold's compiled rules hold. See docs/architecture.md, The escrow path.
 */
export function holdGuard(step: {
  holdId: string;
  applicationId: string;
  mode: string;
  walletId: string;
  escrowAccountId: string;
  recipientWalletId: string | null;
  currency: string;
  amount: bigint;
}): MoneyStepGuard {
  return {
    prelude: sql.fragment`hold_accounts AS (
      SELECT ${walletFacts({ scope: 'account' })}, a.kind, w.id AS wallet_id
      FROM ledger_accounts a LEFT JOIN wallets w ON w.id = a.id
        JOIN applications app ON app.id = a.application_id
      WHERE a.id = ANY(${sql.array([step.walletId, step.escrowAccountId], 'uuid')})
      ORDER BY (a.kind <> 'user_wallet'), a.id
      FOR NO KEY UPDATE OF a
    ), hold_recipient AS (
      SELECT ${walletFacts({ account: 'ra', application: 'rapp' }, { omit: ['balance'] })}
      FROM wallets w JOIN ledger_accounts ra ON ra.id = w.id
        JOIN applications rapp ON rapp.id = w.application_id
      WHERE w.id = ${step.recipientWalletId}::uuid
    ), hold_facts AS (
      SELECT s.wallet_id AS sender_id, ${factColumns('sender', 's', SENDER_FIELDS)},
        ${factColumns('recipient', 'r', HOLD_RECIPIENT_FIELDS)}
      FROM (SELECT) one
        LEFT JOIN hold_accounts s ON s.id = ${step.walletId} AND s.wallet_id IS NOT NULL
        LEFT JOIN hold_recipient r ON true
    ), hold_checked AS (
      SELECT ${firstBrokenRule(holdRules, step)} AS declined,
        sender_currency = ${step.currency}
          AND EXISTS (SELECT 1 FROM hold_accounts WHERE id = ${step.escrowAccountId}
            AND kind = 'escrow' AND application_id = ${step.applicationId} AND mode = ${step.mode}
            AND currency = ${step.currency})
          AND NOT EXISTS (SELECT 1 FROM transactions t WHERE t.id = ${step.holdId}) AS ready
      FROM hold_facts
    )`,
    guard: sql.fragment`coalesce((SELECT declined IS NULL AND ready FROM hold_checked), false)`,
    declined: sql.fragment`(SELECT declined FROM hold_checked)`,
  };
}

const SENDER_FIELDS = WALLET_FIELDS.filter((f) => f !== 'id');
const HOLD_RECIPIENT_FIELDS = WALLET_FIELDS.filter((f) => f !== 'balance');
