import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { transactionColumns, transactionRow, type TransactionRow } from './transactions';
import type { Mode } from '../domain/types';

/** The provider's payment, as the card deposit last saw it. */
const cardPaymentMetadata = z.object({
  id: z.string(),
  status: z.enum(['succeeded', 'requires_action', 'processing', 'failed']),
  next_action_url: z.string().nullable(),
  decline_message: z.string().nullable(),
});
export type CardPaymentMetadata = z.infer<typeof cardPaymentMetadata>;

/**
 * What a card deposit records of itself beyond the transaction row: the card the fee rule read,
 * the fees (minor units of the base currency, as text), and the provider's payment once created.
 */
export const cardDepositMetadata = z.object({
  payment_method_id: z.string(),
  card: z.object({
    brand: z.string(),
    country: z.string(),
    funding: z.string(),
    last4: z.string().nullable(),
  }),
  international: z.boolean(),
  provider_fee: z.string(),
  application_fee: z.string(),
  total_amount_paid: z.string(),
  /** When a payment still waiting for the payer expires (ISO time). */
  expires_at: z.string(),
  payment: cardPaymentMetadata.nullable(),
});
export type CardDepositMetadata = z.infer<typeof cardDepositMetadata>;

export type CardDepositRecord = { row: TransactionRow; meta: CardDepositMetadata };

const cardDepositRow = transactionRow.extend({ metadata: z.unknown() });

const record = (row: z.infer<typeof cardDepositRow>): CardDepositRecord => ({
  row,
  meta: cardDepositMetadata.parse(row.metadata),
});

/** The card deposit written under this id, with its metadata, or null. */
export async function findCardDeposit(
  db: CommonQueryMethods,
  id: string,
): Promise<CardDepositRecord | null> {
  const row = await db.maybeOne(sql.type(cardDepositRow)`
    SELECT ${transactionColumns}, metadata FROM transactions
    WHERE id = ${id} AND transaction_type = 'card_deposit'`);
  return row ? record(row) : null;
}

/** The card deposit, locked for a change of its state; it must exist. */
export async function lockCardDeposit(
  trx: DatabaseTransactionConnection,
  id: string,
): Promise<CardDepositRecord> {
  const row = await trx.maybeOne(sql.type(cardDepositRow)`
    SELECT ${transactionColumns}, metadata FROM transactions
    WHERE id = ${id} AND transaction_type = 'card_deposit' FOR NO KEY UPDATE`);
  if (!row) throw new Error(`card deposit ${id} has no record`);
  return record(row);
}

/** Records the provider's payment on the deposit: its reference and what it last said. */
export async function setCardPayment(
  db: CommonQueryMethods,
  id: string,
  payment: CardPaymentMetadata,
): Promise<CardDepositRecord> {
  const row = await db.one(sql.type(cardDepositRow)`
    UPDATE transactions
    SET provider_reference = ${payment.id},
        metadata = jsonb_set(metadata, '{payment}', ${sql.jsonb(payment)}),
        updated_at = now()
    WHERE id = ${id} AND transaction_type = 'card_deposit'
    RETURNING ${transactionColumns}, metadata`);
  return record(row);
}

/** The card deposit paid through this provider payment, or null (the authentication page). */
export async function findCardDepositByPayment(
  db: CommonQueryMethods,
  paymentId: string,
  mode: Mode,
): Promise<TransactionRow | null> {
  return db.maybeOne(cardDepositByPaymentQuery(paymentId, mode));
}

/** By transactions_provider_reference_idx: the page knows no application, only the mode. */
export function cardDepositByPaymentQuery(paymentId: string, mode: Mode) {
  return sql.type(transactionRow)`
    SELECT ${transactionColumns} FROM transactions
    WHERE provider_reference = ${paymentId} AND transaction_type = 'card_deposit'
      AND mode = ${mode}
    LIMIT 1`;
}
