import { sql, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { walletFacts, walletFactsRow } from './wallet-facts';
import { prepare } from './pool';
import { factColumns, firstBrokenRule, WALLET_FIELDS, type MoneyStepGuard } from './money-rules';
import { transferRules } from '../domain/money-rules';

const transferWallet = walletFactsRow.extend({
  done: z.boolean(),
  at: z.string(),
});
export type TransferWallet = z.infer<typeof transferWallet>;

/**
 * One round trip: locks both wallets (user wallets only, so by id is the fixed order) and reads
 * what the checks need, whether an earlier attempt wrote this transfer (`done`), and the database
 * transaction's `now()` (`at`, for the payment row written with the ledger's statement).
 */
export async function lockTransferWallets(
  trx: DatabaseTransactionConnection,
  transactionId: string,
  walletIds: readonly string[],
): Promise<readonly TransferWallet[]> {
  return trx.any(
    prepare(sql.type(transferWallet)`
      SELECT ${walletFacts()},
        EXISTS (SELECT 1 FROM transactions t WHERE t.id = ${transactionId}) AS done, now() AS at
      FROM ledger_accounts a JOIN wallets w ON w.id = a.id
        JOIN applications app ON app.id = w.application_id
      WHERE a.id = ANY(${sql.array([...walletIds], 'uuid')})
      ORDER BY a.id
      FOR NO KEY UPDATE OF a`),
  );
}

/**
 * What a transfer written in one statement checks: both wallets locked in `lockTransferWallets`
 * order, then the transfer's compiled rules as its guard. Where it does not hold, the activity runs
 * the usual way, which finds out why (see docs/architecture.md, The transfer path).
 */
export function transferGuard(
  step: { transactionId: string; currency: string } & TransferParams,
): MoneyStepGuard {
  return {
    prelude: sql.fragment`transfer_wallets AS (
      SELECT ${walletFacts()}
      FROM ledger_accounts a JOIN wallets w ON w.id = a.id
        JOIN applications app ON app.id = w.application_id
      WHERE a.id = ANY(${sql.array([step.fromWalletId, step.toWalletId], 'uuid')})
      ORDER BY a.id
      FOR NO KEY UPDATE OF a
    ), transfer_facts AS (
      SELECT ${factColumns('from', 'f', WALLET_FIELDS)}, ${factColumns('to', 't', WALLET_FIELDS)}
      FROM (SELECT) one
        LEFT JOIN transfer_wallets f ON f.id = ${step.fromWalletId}
        LEFT JOIN transfer_wallets t ON t.id = ${step.toWalletId}
    ), transfer_checked AS (
      SELECT ${firstBrokenRule(transferRules, step)} AS declined,
        from_currency = ${step.currency}
          AND NOT EXISTS (SELECT 1 FROM transactions t WHERE t.id = ${step.transactionId}) AS ready
      FROM transfer_facts
    )`,
    guard: sql.fragment`coalesce((SELECT declined IS NULL AND ready FROM transfer_checked), false)`,
    declined: sql.fragment`(SELECT declined FROM transfer_checked)`,
  };
}

/** The parameters of `transferRules`. */
export type TransferParams = {
  applicationId: string;
  mode: string;
  fromWalletId: string;
  toWalletId: string;
  amount: bigint;
};
