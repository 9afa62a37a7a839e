import { sql, type DatabaseTransactionConnection, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { walletState } from './wallets';
import { prepare } from './pool';

const transferWallet = walletState.extend({
  balance: z.bigint(),
  done: z.boolean(),
  at: z.string(),
});
export type TransferWallet = z.infer<typeof transferWallet>;

/**
 * One round trip: locks both wallets (user wallets only, so by id is the fixed order), reads
 * what the checks need, whether a previous attempt already wrote this transfer (`done`), and
 * the database transaction's `now()` (`at`: db/money-steps.ts writes the payment row with the
 * ledger's statement).
 */
export async function lockTransferWallets(
  trx: DatabaseTransactionConnection,
  transactionId: string,
  walletIds: readonly [string, string],
): Promise<readonly TransferWallet[]> {
  return trx.any(
    prepare(sql.type(transferWallet)`
      SELECT a.id, w.application_id, w.mode, w.is_active, a.currency, app.base_currency, a.balance,
        EXISTS (SELECT 1 FROM transactions t WHERE t.id = ${transactionId}) AS done, now() AS at
      FROM ledger_accounts a JOIN wallets w ON w.id = a.id
        JOIN applications app ON app.id = w.application_id
      WHERE a.id = ANY(${sql.array([...walletIds], 'uuid')})
      ORDER BY a.id
      FOR NO KEY UPDATE OF a`),
  );
}

/**
 * What a transfer written in one statement checks (db/money-steps.ts `recordMoneyStepAtOnce`):
 * the WITH parts that lock both wallets, in the same order as `lockTransferWallets`, and the
 * guard that holds only when `checkWallet`, the currency check and the balance check of the
 * transfer activity would all pass and the transfer is not written yet. Where it does not hold,
 * the activity runs the usual way, which finds out why.
 */
export function transferGuard(step: {
  transactionId: string;
  applicationId: string;
  mode: string;
  fromWalletId: string;
  toWalletId: string;
  currency: string;
  amount: bigint;
}): { prelude: FragmentSqlToken; guard: FragmentSqlToken } {
  return {
    prelude: sql.fragment`transfer_wallets AS (
      SELECT a.id, w.application_id, w.mode, w.is_active, a.currency, app.base_currency, a.balance
      FROM ledger_accounts a JOIN wallets w ON w.id = a.id
        JOIN applications app ON app.id = w.application_id
      WHERE a.id = ANY(${sql.array([step.fromWalletId, step.toWalletId], 'uuid')})
      ORDER BY a.id
      FOR NO KEY UPDATE OF a
    ), transfer_checked AS (
      SELECT count(*) = 2
        AND bool_and(application_id = ${step.applicationId} AND mode = ${step.mode} AND is_active
          AND currency = ${step.currency} AND currency = base_currency)
        AND bool_and(id <> ${step.fromWalletId} OR balance >= ${step.amount.toString()}::int8)
        AND NOT EXISTS (SELECT 1 FROM transactions t WHERE t.id = ${step.transactionId}) AS ok
      FROM transfer_wallets
    )`,
    guard: sql.fragment`coalesce((SELECT ok FROM transfer_checked), false)`,
  };
}
