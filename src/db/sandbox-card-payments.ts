import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { CURRENCIES } from '../domain/money';

/** The Test Mode card provider's own store of payments (the sandbox is the provider here). */
export const sandboxCardPaymentRow = z.object({
  id: z.string(),
  reference: z.string(),
  amount: z.bigint(),
  currency: z.enum(CURRENCIES),
  payment_method_id: z.string(),
  status: z.enum(['succeeded', 'requires_action', 'processing', 'failed']),
  decline_message: z.string().nullable(),
});
export type SandboxCardPaymentRow = z.infer<typeof sandboxCardPaymentRow>;

const columns = sql.fragment`id, reference, amount, currency, payment_method_id, status, decline_message`;

/**
 * Stores a new payment once per idempotency key and returns the stored one: a retried call with
 * the same key, even one racing the first, gets the payment the first call created.
 */
export async function insertSandboxCardPayment(
  db: CommonQueryMethods,
  p: {
    id: string;
    idempotencyKey: string;
    reference: string;
    amount: bigint;
    currency: string;
    paymentMethodId: string;
    status: SandboxCardPaymentRow['status'];
    declineMessage: string | null;
  },
): Promise<SandboxCardPaymentRow> {
  await db.query(sql.unsafe`
    INSERT INTO sandbox_card_payments (id, idempotency_key, reference, amount, currency,
      payment_method_id, status, decline_message)
    VALUES (${p.id}, ${p.idempotencyKey}, ${p.reference}, ${p.amount.toString()}, ${p.currency},
      ${p.paymentMethodId}, ${p.status}, ${p.declineMessage})
    ON CONFLICT (idempotency_key) DO NOTHING`);
  return db.one(sql.type(sandboxCardPaymentRow)`
    SELECT ${columns} FROM sandbox_card_payments WHERE idempotency_key = ${p.idempotencyKey}`);
}

export async function findSandboxCardPayment(
  db: CommonQueryMethods,
  id: string,
): Promise<SandboxCardPaymentRow | null> {
  return db.maybeOne(
    sql.type(sandboxCardPaymentRow)`SELECT ${columns} FROM sandbox_card_payments WHERE id = ${id}`,
  );
}

/** Finishes 3-D Secure on a payment awaiting it; a payment in any other state stays as it is. */
export async function authenticateSandboxCardPayment(
  db: CommonQueryMethods,
  id: string,
  outcome: { status: 'succeeded' } | { status: 'failed'; declineMessage: string },
): Promise<void> {
  const declineMessage = outcome.status === 'failed' ? outcome.declineMessage : null;
  await db.query(sql.unsafe`
    UPDATE sandbox_card_payments
    SET status = ${outcome.status}, decline_message = ${declineMessage}, updated_at = now()
    WHERE id = ${id} AND status = 'requires_action'`);
}

/** Cancels a payment not yet charged: awaiting authentication or processing becomes failed. */
export async function cancelSandboxCardPayment(
  db: CommonQueryMethods,
  id: string,
  declineMessage: string,
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE sandbox_card_payments
    SET status = 'failed', decline_message = ${declineMessage}, updated_at = now()
    WHERE id = ${id} AND status IN ('requires_action', 'processing')`);
}
