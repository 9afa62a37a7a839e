import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

/**
 * The Test Mode provider's own store of mobile-money payouts (the sandbox is the provider
 * here). A pending payout past its expiry reads as failed: the provider gave up on it.
 */
export const sandboxPayoutRow = z.object({
  id: z.string(),
  reference: z.string(),
  amount: z.bigint(),
  phone_number: z.string(),
  status: z.enum(['pending', 'completed', 'failed']),
  calls: z.number().int(),
});
export type SandboxPayoutRow = z.infer<typeof sandboxPayoutRow>;

const columns = sql.fragment`id, reference, amount, phone_number,
  CASE WHEN status = 'pending' AND expires_at <= now() THEN 'failed' ELSE status END AS status, calls`;

/**
 * Stores a new payout once per idempotency key and returns the stored one: a retried call with
 * the same key gets the payout the first call created (and counts the call).
 */
export async function insertSandboxPayout(
  db: CommonQueryMethods,
  p: {
    id: string;
    idempotencyKey: string;
    reference: string;
    amount: bigint;
    phoneNumber: string;
    expiresInSeconds: number;
  },
): Promise<SandboxPayoutRow> {
  return db.one(sql.type(sandboxPayoutRow)`
    WITH stored AS (
      INSERT INTO sandbox_mobile_money_payouts (id, idempotency_key, reference, amount,
        phone_number, status, expires_at)
      VALUES (${p.id}, ${p.idempotencyKey}, ${p.reference}, ${p.amount.toString()},
        ${p.phoneNumber}, 'pending', now() + make_interval(secs => ${p.expiresInSeconds}))
      ON CONFLICT (idempotency_key) DO UPDATE
        SET calls = sandbox_mobile_money_payouts.calls + 1, updated_at = now()
      RETURNING *
    )
    SELECT ${columns} FROM stored`);
}

export async function findSandboxPayout(
  db: CommonQueryMethods,
  id: string,
): Promise<SandboxPayoutRow | null> {
  return db.maybeOne(
    sql.type(
      sandboxPayoutRow,
    )`SELECT ${columns} FROM sandbox_mobile_money_payouts WHERE id = ${id}`,
  );
}

/** Settles a pending payout that has not expired; any other payout stays as it is. */
export async function settleSandboxPayout(
  db: CommonQueryMethods,
  id: string,
  status: 'completed' | 'failed',
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE sandbox_mobile_money_payouts SET status = ${status}, updated_at = now()
    WHERE id = ${id} AND status = 'pending' AND expires_at > now()`);
}
