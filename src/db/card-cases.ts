import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { DepositFacts } from '../domain/money-rules';
import { transactionColumns, transactionRow, type TransactionRow } from './transactions';

/**
 * What refunds and disputes read of the card deposit they concern. `refunded` sums its refunds
 * that did not fail (pending and completed); `disputed` its disputes not won (open and lost);
 * what is left to refund or to dispute is the same: `amount - refunded - disputed`.
 */
export type CardCaseFacts = {
  deposit: TransactionRow;
  refunded: bigint;
  disputed: bigint;
  left: bigint;
};

const factsRow = transactionRow.extend({ refunded: z.bigint(), disputed: z.bigint() });

const factsOf = (row: z.infer<typeof factsRow>): CardCaseFacts => {
  const { refunded, disputed, ...deposit } = row;
  return { deposit, refunded, disputed, left: deposit.amount - refunded - disputed };
};

const select = (id: string) => sql.type(factsRow)`
  SELECT ${transactionColumns},
    (SELECT coalesce(sum(r.amount), 0)::int8 FROM transactions r
      WHERE r.parent_id = t.id AND r.transaction_type = 'card_refund'
        AND r.status IN ('pending', 'completed')) AS refunded,
    (SELECT coalesce(sum(d.amount), 0)::int8 FROM disputes d
      WHERE d.transaction_id = t.id AND d.status <> 'won') AS disputed
  FROM transactions t
  WHERE t.id = ${id}`;

/**
 * The deposit's facts, its row locked: every refund and every dispute of one deposit takes
 * this lock before it decides, so two of them racing never both take what is left.
 */
export async function lockCardCase(
  trx: DatabaseTransactionConnection,
  depositId: string,
): Promise<CardCaseFacts | null> {
  // The lock first, then the facts in a statement of their own: a statement that waited for
  // the lock still reads the sums as of its start, without the refund its holder committed.
  const locked = await trx.maybeOne(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM transactions WHERE id = ${depositId} FOR NO KEY UPDATE`);
  if (!locked) return null;
  const row = await trx.maybeOne(select(depositId));
  return row ? factsOf(row) : null;
}

/** The deposit's facts as they stand, without a lock (the API's early answers, the record). */
export async function readCardCase(
  db: CommonQueryMethods,
  depositId: string,
): Promise<CardCaseFacts | null> {
  const row = await db.maybeOne(select(depositId));
  return row ? factsOf(row) : null;
}

/** A card deposit's facts as the refund and dispute rules read them (src/domain/money-rules.ts). */
export function depositFacts({ deposit, left }: CardCaseFacts): DepositFacts {
  return {
    id: deposit.id,
    application_id: deposit.application_id,
    mode: deposit.mode,
    transaction_type: deposit.transaction_type,
    status: deposit.status,
    currency: deposit.currency,
    left,
  };
}
