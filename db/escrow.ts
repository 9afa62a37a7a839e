import { sql, type DatabaseTransactionConnection } from 'slonik';
import { transactionColumns, transactionRow, type TransactionRow } from './transactions';

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
