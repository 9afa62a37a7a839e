import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { transactionColumns, transactionRow, type TransactionRow } from './transactions';

const walletState = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  is_active: z.boolean(),
  currency: z.enum(['USD', 'SLE']),
});
export type WalletState = z.infer<typeof walletState>;

/** What a money step checks of wallets (scope, active, currency), by id, without locking. */
export async function walletStates(
  db: CommonQueryMethods,
  ids: readonly string[],
): Promise<Map<string, WalletState>> {
  const rows = await db.any(sql.type(walletState)`
    SELECT w.id, w.application_id, w.mode, w.is_active, a.currency
    FROM wallets w JOIN ledger_accounts a ON a.id = w.id
    WHERE w.id = ANY(${sql.array([...ids], 'uuid')})`);
  return new Map(rows.map((r) => [r.id, r]));
}

/** The hold, locked for one money step; it must exist. */
export async function lockHold(
  trx: DatabaseTransactionConnection,
  holdId: string,
): Promise<TransactionRow> {
  const hold = await trx.maybeOne(sql.type(transactionRow)`
    SELECT ${transactionColumns}
    FROM transactions WHERE id = ${holdId} AND transaction_type = 'escrow_hold' FOR NO KEY UPDATE`);
  if (!hold) throw new Error(`escrow hold ${holdId} has no record`);
  return hold;
}

/** What a hold still holds; when nothing is left it ends with the given status. */
export async function shrinkHold(
  trx: DatabaseTransactionConnection,
  holdId: string,
  remaining: bigint,
  endStatus: 'completed' | 'reversed',
): Promise<void> {
  await trx.query(sql.unsafe`
    UPDATE transactions SET escrow_amount = ${remaining.toString()},
      status = CASE WHEN ${remaining.toString()}::bigint = 0 THEN ${endStatus} ELSE status END,
      updated_at = now()
    WHERE id = ${holdId}`);
}
