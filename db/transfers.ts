import { sql, type DatabaseTransactionConnection } from 'slonik';
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
      SELECT a.id, w.application_id, w.mode, w.is_active, a.currency, a.balance,
        EXISTS (SELECT 1 FROM transactions t WHERE t.id = ${transactionId}) AS done, now() AS at
      FROM ledger_accounts a JOIN wallets w ON w.id = a.id
      WHERE a.id = ANY(${sql.array([...walletIds], 'uuid')})
      ORDER BY a.id
      FOR NO KEY UPDATE OF a`),
  );
}
