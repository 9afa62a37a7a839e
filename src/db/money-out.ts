import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { transactionColumns, transactionRow, type TransactionRow } from './transactions';

/** The provider's payout, as the money-out saga last saw it. */
const moneyOutProviderMetadata = z.object({
  id: z.string(),
  status: z.enum(['pending', 'completed', 'failed']),
});
export type MoneyOutProviderMetadata = z.infer<typeof moneyOutProviderMetadata>;

/**
 * What a payout or cashout records of itself beyond its row: minor units as text, in the record's
 * currency but for `provider_amount` and `provider_fee_provider`, in the provider's (SLE for mobile
 * money; the FX rate when they differ). `total` is what the wallet paid into payouts clearing.
 */
export const moneyOutMetadata = z.object({
  kind: z.enum(['cashout', 'payout', 'refund']),
  amount: z.string(),
  provider_fee: z.string(),
  application_fee: z.string(),
  total: z.string(),
  provider_currency: z.enum(['USD', 'SLE']),
  provider_amount: z.string(),
  provider_fee_provider: z.string(),
  fx_sle_per_usd: z.string().nullable(),
  destination: z.record(z.string(), z.string()),
  provider: moneyOutProviderMetadata.nullable(),
  /**
   * A card refund's request metadata as rows written before the merchant's metadata had its own
   * column kept it; read, never written (that is `merchant_metadata` now).
   */
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type MoneyOutMetadata = z.infer<typeof moneyOutMetadata>;

export type MoneyOutRecord = { row: TransactionRow; meta: MoneyOutMetadata };

/** The payment types of the money-out saga. */
export const MONEY_OUT_TYPES = ['mobile_money_cashout', 'card_payout', 'card_refund'] as const;

const moneyOutRow = transactionRow.extend({ metadata: z.unknown() });

const record = (row: z.infer<typeof moneyOutRow>): MoneyOutRecord => ({
  row,
  meta: moneyOutMetadata.parse(row.metadata),
});

/** The payout or cashout written under this id, with its metadata, or null. */
export async function findMoneyOut(
  db: CommonQueryMethods,
  id: string,
): Promise<MoneyOutRecord | null> {
  const row = await db.maybeOne(sql.type(moneyOutRow)`
    SELECT ${transactionColumns}, metadata FROM transactions
    WHERE id = ${id} AND transaction_type = ANY(${sql.array([...MONEY_OUT_TYPES], 'text')})`);
  return row ? record(row) : null;
}

/** The payout or cashout, locked for a step of its saga; it must exist. */
export async function lockMoneyOut(
  trx: DatabaseTransactionConnection,
  id: string,
): Promise<MoneyOutRecord> {
  const row = await trx.maybeOne(sql.type(moneyOutRow)`
    SELECT ${transactionColumns}, metadata FROM transactions
    WHERE id = ${id} AND transaction_type = ANY(${sql.array([...MONEY_OUT_TYPES], 'text')})
    FOR NO KEY UPDATE`);
  if (!row) throw new Error(`payout ${id} has no record`);
  return record(row);
}

/** Records the provider's payout (its id becomes the provider reference) as last seen. */
export async function setMoneyOutProvider(
  db: CommonQueryMethods,
  id: string,
  provider: MoneyOutProviderMetadata,
): Promise<MoneyOutRecord> {
  const row = await db.one(sql.type(moneyOutRow)`
    UPDATE transactions
    SET provider_reference = ${provider.id},
        metadata = jsonb_set(metadata, '{provider}', ${sql.jsonb(provider)}),
        updated_at = now()
    WHERE id = ${id}
    RETURNING ${transactionColumns}, metadata`);
  return record(row);
}
