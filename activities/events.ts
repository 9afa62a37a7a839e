import type { TransactionRow } from '../db/transactions';
import { minorToMajorNumber } from '../domain/money';

/**
 * The `data` of an event about a payment: the transaction as the API shows it, amounts in the
 * base currency as major-unit numbers (decisions.md, Money on the wire).
 */
export function transactionEventData(t: TransactionRow) {
  return {
    id: t.id,
    transaction_type: t.transaction_type,
    status: t.status,
    wallet_id: t.wallet_id,
    recipient_wallet_id: t.recipient_wallet_id,
    amount: minorToMajorNumber(t.amount),
    currency: t.currency,
    description: t.description,
    created_at: t.created_at,
  };
}
