import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';

/**
 * Test Mode: the sandbox changes its own record of a payment, so that the next provider
 * reconciliation finds a disagreement (docs/api.md, Reconciliation).
 */

export const DISCREPANCY_KINDS = ['missing', 'amount', 'status'] as const;
export type DiscrepancyKind = (typeof DISCREPANCY_KINDS)[number];

/** Each sandbox book's table, with its final statuses: the success and the failures. */
const BOOKS = [
  { table: 'sandbox_payment_codes', succeeded: 'completed', failed: ['failed', 'expired'] },
  { table: 'sandbox_card_payments', succeeded: 'succeeded', failed: ['failed'] },
  { table: 'sandbox_mobile_money_payouts', succeeded: 'completed', failed: ['failed'] },
  { table: 'sandbox_connect_payouts', succeeded: 'paid', failed: ['failed'] },
  { table: 'sandbox_card_refunds', succeeded: 'succeeded', failed: ['failed'] },
] as const;

const bookRow = z.object({ status: z.string(), refunds: z.number() });

export type DiscrepancyOutcome =
  { changed: true } | { changed: false; reason: 'no_record' | 'not_final' | 'has_refunds' };

/**
 * Changes the sandbox's record `providerReference` (docs/api.md, Reconciliation); a record still
 * pending, or a card payment the sandbox refunded (`missing`), is left as it is.
 */
export async function simulateProviderDiscrepancy(
  db: CommonQueryMethods & Pick<DatabaseTransactionConnection, 'transaction'>,
  providerReference: string,
  kind: DiscrepancyKind,
): Promise<DiscrepancyOutcome> {
  return db.transaction(async (trx) => {
    for (const book of BOOKS) {
      const table = sql.identifier([book.table]);
      const found = await trx.maybeOne(sql.type(bookRow)`
        SELECT status, (
          SELECT count(*)::int FROM sandbox_card_refunds r
          WHERE ${book.table === 'sandbox_card_payments'} AND r.payment_id = ${providerReference}
        ) AS refunds
        FROM ${table} WHERE id = ${providerReference} FOR UPDATE`);
      if (!found) continue;
      if (kind === 'missing') {
        if (found.refunds > 0) return { changed: false, reason: 'has_refunds' };
        await trx.query(sql.unsafe`DELETE FROM ${table} WHERE id = ${providerReference}`);
        return { changed: true };
      }
      const failed = (book.failed as readonly string[]).includes(found.status);
      if (found.status !== book.succeeded && !failed) {
        return { changed: false, reason: 'not_final' };
      }
      if (kind === 'amount') {
        await trx.query(sql.unsafe`
          UPDATE ${table} SET amount = amount + 1
            ${book.table === 'sandbox_payment_codes' ? sql.fragment`, deposit_amount = deposit_amount + 1` : sql.fragment``}
          WHERE id = ${providerReference}`);
      } else {
        const flipped = failed ? book.succeeded : book.failed[0];
        await trx.query(sql.unsafe`
          UPDATE ${table} SET status = ${flipped} WHERE id = ${providerReference}`);
      }
      return { changed: true };
    }
    return { changed: false, reason: 'no_record' };
  });
}
