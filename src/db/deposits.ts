import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { transactionColumns, transactionRow, type TransactionRow } from './transactions';

/** What a deposit records of itself beyond the transaction row: the SLE side and the FX. */
export const depositMetadata = z.object({
  sle_amount: z.string(),
  provider_fee: z.string(),
  application_fee: z.string(),
  total_amount_paid: z.string(),
  fx_sle_per_usd: z.string().nullable(),
  payment_code: z.object({
    id: z.string(),
    code: z.string(),
    amount: z.string(),
    instructions: z.string(),
    status: z.string(),
    expires_at: z.string(),
  }),
});
export type DepositMetadata = z.infer<typeof depositMetadata>;

export type DepositRecord = { row: TransactionRow; meta: DepositMetadata };

const depositRow = transactionRow.extend({ metadata: z.unknown() });

const record = (row: z.infer<typeof depositRow>): DepositRecord => ({
  row,
  meta: depositMetadata.parse(row.metadata),
});

/** The deposit written under this id, with its metadata, or null. */
export async function findDeposit(
  db: CommonQueryMethods,
  id: string,
): Promise<DepositRecord | null> {
  const row = await db.maybeOne(sql.type(depositRow)`
    SELECT ${transactionColumns}, metadata FROM transactions WHERE id = ${id}`);
  return row ? record(row) : null;
}

/** The deposit, locked for its settlement; it must exist. */
export async function lockDeposit(
  trx: DatabaseTransactionConnection,
  id: string,
): Promise<DepositRecord> {
  const row = await trx.maybeOne(sql.type(depositRow)`
    SELECT ${transactionColumns}, metadata FROM transactions
    WHERE id = ${id} AND transaction_type = 'mobile_money_deposit' FOR NO KEY UPDATE`);
  if (!row) throw new Error(`deposit ${id} has no record`);
  return record(row);
}
