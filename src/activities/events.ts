import { transactionAnswer, type TransactionRow } from '../db/transactions';

/**
 * The `data` of an event about a payment: the Transaction record as the API shows it (every
 * field of src/api/serializers.ts `transactionBody`) and its currency, amounts in the base currency
 * as major-unit numbers (docs/api.md, API conventions).
 */
export function transactionEventData(t: TransactionRow) {
  const { description, created_at, updated_at, ...head } = transactionAnswer(t);
  return { ...head, currency: t.currency, description, created_at, updated_at };
}
