import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { CURRENCIES } from '../domain/money';

/** The Test Mode card provider's own store of refunds (the sandbox is the provider here). */
export const sandboxCardRefundRow = z.object({
  id: z.string(),
  payment_id: z.string(),
  reference: z.string(),
  amount: z.bigint(),
  currency: z.enum(CURRENCIES),
  status: z.enum(['pending', 'succeeded', 'failed']),
});
export type SandboxCardRefundRow = z.infer<typeof sandboxCardRefundRow>;

const columns = sql.fragment`id, payment_id, reference, amount, currency, status`;

/**
 * Stores a new refund once per idempotency key and returns the stored one: a retried call, even
 * one racing the first, gets the refund the first call created. A refund that would take more
 * than the payment has left (its other refunds that did not fail) is not stored: null.
 */
export async function insertSandboxCardRefund(
  db: CommonQueryMethods,
  r: {
    id: string;
    paymentId: string;
    idempotencyKey: string;
    reference: string;
    amount: bigint;
    currency: string;
    /** Accepted then failed after this many milliseconds; null: succeeds at once. */
    failsAfterMs: number | null;
  },
): Promise<SandboxCardRefundRow | null> {
  const status = r.failsAfterMs === null ? 'succeeded' : 'pending';
  const failsAt =
    r.failsAfterMs === null
      ? sql.fragment`NULL`
      : sql.fragment`now() + make_interval(secs => ${r.failsAfterMs / 1000})`;
  // The payment's row is locked so that two refunds racing each other see each other's amount.
  await db.query(sql.unsafe`
    WITH payment AS (
      SELECT id, amount FROM sandbox_card_payments
      WHERE id = ${r.paymentId} AND status = 'succeeded' FOR UPDATE
    )
    INSERT INTO sandbox_card_refunds (id, payment_id, idempotency_key, reference, amount, currency,
      status, fails_at)
    SELECT ${r.id}, payment.id, ${r.idempotencyKey}, ${r.reference}, ${r.amount.toString()},
      ${r.currency}, ${status}, ${failsAt}
    FROM payment
    WHERE payment.amount >= ${r.amount.toString()} + (
      SELECT coalesce(sum(amount), 0) FROM sandbox_card_refunds
      WHERE payment_id = payment.id AND status <> 'failed'
        AND (fails_at IS NULL OR fails_at > now()))
    ON CONFLICT (idempotency_key) DO NOTHING`);
  return db.maybeOne(sql.type(sandboxCardRefundRow)`
    SELECT ${columns} FROM sandbox_card_refunds WHERE idempotency_key = ${r.idempotencyKey}`);
}

/** The refund as it stands now: an accepted refund past its failure time reads failed. */
export async function findSandboxCardRefund(
  db: CommonQueryMethods,
  id: string,
): Promise<SandboxCardRefundRow | null> {
  await db.query(sql.unsafe`
    UPDATE sandbox_card_refunds SET status = 'failed'
    WHERE id = ${id} AND status = 'pending' AND fails_at <= now()`);
  return db.maybeOne(
    sql.type(sandboxCardRefundRow)`SELECT ${columns} FROM sandbox_card_refunds WHERE id = ${id}`,
  );
}

/** The sandbox cancels a refund it has not sent yet (a resolution failed asks it). */
export async function cancelSandboxCardRefund(db: CommonQueryMethods, id: string): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE sandbox_card_refunds SET status = 'failed' WHERE id = ${id} AND status = 'pending'`);
}
