import type { TransactionRow } from '../db/transactions';
import { minorToMajorNumber } from '../domain/money';

/**
 * The `data` of an event about a payment: the Transaction record as the API shows it (every
 * field of api/serializers.ts `transactionBody`) and its currency, amounts in the base currency
 * as major-unit numbers (decisions.md, Money on the wire).
 */
export function transactionEventData(t: TransactionRow) {
  return {
    id: t.id,
    wallet_id: t.wallet_id,
    escrow_wallet_id: t.escrow_wallet_id,
    recipient_wallet_id: t.recipient_wallet_id,
    application_wallet_id: t.application_wallet_id,
    amount: minorToMajorNumber(t.amount),
    escrow_amount: minorToMajorNumber(t.escrow_amount),
    application_fee: t.application_fee === null ? null : minorToMajorNumber(t.application_fee),
    transaction_type: t.transaction_type,
    status: t.status,
    currency: t.currency,
    description: t.description,
    created_at: t.created_at,
    updated_at: t.updated_at,
  };
}
