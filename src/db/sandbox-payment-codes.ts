import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

/** The Test Mode provider's own store of payment codes (the sandbox is the provider here). */
export const sandboxCodeRow = z.object({
  id: z.string(),
  reference: z.string(),
  amount: z.bigint(),
  code: z.string(),
  instructions: z.string(),
  status: z.enum(['pending', 'completed', 'failed', 'expired']),
  expires_at: z.string(),
});
export type SandboxCodeRow = z.infer<typeof sandboxCodeRow>;

const columns = sql.fragment`id, reference, amount, code, instructions,
  CASE WHEN status = 'pending' AND expires_at <= now() THEN 'expired' ELSE status END AS status, expires_at`;

/**
 * Stores a new payment code once per idempotency key and returns the stored one: a retried call
 * with the same key gets the code the first call created.
 */
export async function insertSandboxPaymentCode(
  db: CommonQueryMethods,
  c: {
    id: string;
    idempotencyKey: string;
    reference: string;
    name: string;
    amount: bigint;
    depositAmount: bigint;
    code: string;
    instructions: string;
    expiresInSeconds: number;
  },
): Promise<SandboxCodeRow> {
  await db.query(sql.unsafe`
    INSERT INTO sandbox_payment_codes (id, idempotency_key, reference, name, amount, deposit_amount,
      code, instructions, status, expires_at)
    VALUES (${c.id}, ${c.idempotencyKey}, ${c.reference}, ${c.name},
      ${c.amount.toString()}, ${c.depositAmount.toString()}, ${c.code}, ${c.instructions},
      'pending', now() + make_interval(secs => ${c.expiresInSeconds}))
    ON CONFLICT (idempotency_key) DO NOTHING`);
  return db.one(sql.type(sandboxCodeRow)`
    SELECT ${columns} FROM sandbox_payment_codes WHERE idempotency_key = ${c.idempotencyKey}`);
}

export async function findSandboxPaymentCode(
  db: CommonQueryMethods,
  id: string,
): Promise<SandboxCodeRow | null> {
  return db.maybeOne(
    sql.type(sandboxCodeRow)`SELECT ${columns} FROM sandbox_payment_codes WHERE id = ${id}`,
  );
}

/** Settles a pending code that has not expired; any other code stays as it is. */
export async function settleSandboxPaymentCode(
  db: CommonQueryMethods,
  id: string,
  status: 'completed' | 'failed',
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE sandbox_payment_codes SET status = ${status}, updated_at = now()
    WHERE id = ${id} AND status = 'pending' AND expires_at > now()`);
}

/**
 * A test clock moved a deposit's clock forward (POST /api/v1/testing/advance-time): its code's
 * expiry comes as much nearer, so that the provider's clock and the payment's stay one.
 */
export async function advanceSandboxPaymentCode(
  db: CommonQueryMethods,
  id: string,
  seconds: number,
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE sandbox_payment_codes
    SET expires_at = expires_at - make_interval(secs => ${seconds}), updated_at = now()
    WHERE id = ${id} AND status = 'pending'`);
}
