import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

/** The records that name the payment they come from: a refund's or a dispute's deposit. */
export const SOURCED_TYPES = ['card_refund', 'dispute_reserve', 'dispute_release'] as const;

/**
 * What the API shows of payments beyond their row, by id: the deposit a refund or a dispute
 * record comes from (its parent), and what a card deposit has refunded (its refunds pending or
 * completed; a failed one counts nothing). One query for a page of records.
 */
export type PaymentLinks = { source_transaction_id?: string | null; amount_refunded?: bigint };

const linkRow = z.object({
  id: z.string(),
  transaction_type: z.string(),
  parent_id: z.string().nullable(),
  refunded: z.bigint().nullable(),
});

export async function paymentLinks(
  db: CommonQueryMethods,
  payments: readonly { id: string; transaction_type: string }[],
): Promise<Map<string, PaymentLinks>> {
  const ids = payments
    .filter(
      (p) =>
        p.transaction_type === 'card_deposit' ||
        (SOURCED_TYPES as readonly string[]).includes(p.transaction_type),
    )
    .map((p) => p.id);
  if (ids.length === 0) return new Map();
  const rows = await db.any(sql.type(linkRow)`
    SELECT t.id, t.transaction_type, t.parent_id,
      CASE WHEN t.transaction_type = 'card_deposit' THEN
        (SELECT coalesce(sum(r.amount), 0)::int8 FROM transactions r
          WHERE r.parent_id = t.id AND r.transaction_type = 'card_refund'
            AND r.status IN ('pending', 'completed'))
      END AS refunded
    FROM transactions t WHERE t.id = ANY(${sql.array([...ids], 'uuid')})`);
  return new Map(
    rows.map((r) => [
      r.id,
      r.transaction_type === 'card_deposit'
        ? { amount_refunded: r.refunded ?? 0n }
        : { source_transaction_id: r.parent_id },
    ]),
  );
}
