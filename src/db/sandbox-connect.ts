import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { CURRENCIES } from '../domain/money';

/** The Test Mode card provider's own store of connected accounts and payouts. */
export const sandboxConnectAccountRow = z.object({
  id: z.string(),
  verification: z.enum(['verified', 'document_due', 'document_pending']),
  external_account_id: z.string().nullable(),
  external_account_token: z.string().nullable(),
  external_account_last4: z.string().nullable(),
});
export type SandboxConnectAccountRow = z.infer<typeof sandboxConnectAccountRow>;
export type SandboxVerification = SandboxConnectAccountRow['verification'];

const accountColumns = sql.fragment`id, verification, external_account_id,
  external_account_token, external_account_last4`;

/** Creates the account once per idempotency key; a retry gets the account the first created. */
export async function insertSandboxConnectAccount(
  db: CommonQueryMethods,
  p: { id: string; idempotencyKey: string; verification: SandboxVerification },
): Promise<SandboxConnectAccountRow> {
  await db.query(sql.unsafe`
    INSERT INTO sandbox_connect_accounts (id, idempotency_key, verification)
    VALUES (${p.id}, ${p.idempotencyKey}, ${p.verification})
    ON CONFLICT (idempotency_key) DO NOTHING`);
  return db.one(sql.type(sandboxConnectAccountRow)`
    SELECT ${accountColumns} FROM sandbox_connect_accounts WHERE idempotency_key = ${p.idempotencyKey}`);
}

export async function findSandboxConnectAccount(
  db: CommonQueryMethods,
  id: string,
): Promise<SandboxConnectAccountRow | null> {
  return db.maybeOne(sql.type(sandboxConnectAccountRow)`
    SELECT ${accountColumns} FROM sandbox_connect_accounts WHERE id = ${id}`);
}

/** Moves verification on, only from one of the states given (a no-op otherwise). */
export async function setSandboxVerification(
  db: CommonQueryMethods,
  id: string,
  to: SandboxVerification,
  from: readonly SandboxVerification[],
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE sandbox_connect_accounts SET verification = ${to}, updated_at = now()
    WHERE id = ${id} AND verification = ANY(${sql.array([...from], 'text')})`);
}

export async function setSandboxExternalAccount(
  db: CommonQueryMethods,
  id: string,
  card: { id: string; token: string; last4: string },
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE sandbox_connect_accounts
    SET external_account_id = ${card.id}, external_account_token = ${card.token},
      external_account_last4 = ${card.last4}, updated_at = now()
    WHERE id = ${id}`);
}

export const sandboxConnectPayoutRow = z.object({
  id: z.string(),
  account_id: z.string(),
  amount: z.bigint(),
  currency: z.enum(CURRENCIES),
  status: z.enum(['paid', 'pending', 'failed']),
  fails_later: z.boolean(),
});
export type SandboxConnectPayoutRow = z.infer<typeof sandboxConnectPayoutRow>;

const payoutColumns = sql.fragment`id, account_id, amount, currency, status, fails_later`;

/** Records a payout once per idempotency key; a retry gets the payout the first call made. */
export async function insertSandboxConnectPayout(
  db: CommonQueryMethods,
  p: {
    id: string;
    idempotencyKey: string;
    accountId: string;
    reference: string;
    amount: bigint;
    currency: string;
    status: SandboxConnectPayoutRow['status'];
    failsLater: boolean;
  },
): Promise<SandboxConnectPayoutRow> {
  await db.query(sql.unsafe`
    INSERT INTO sandbox_connect_payouts (id, idempotency_key, account_id, reference, amount,
      currency, status, fails_later)
    VALUES (${p.id}, ${p.idempotencyKey}, ${p.accountId}, ${p.reference}, ${p.amount.toString()},
      ${p.currency}, ${p.status}, ${p.failsLater})
    ON CONFLICT (idempotency_key) DO NOTHING`);
  return db.one(sql.type(sandboxConnectPayoutRow)`
    SELECT ${payoutColumns} FROM sandbox_connect_payouts WHERE idempotency_key = ${p.idempotencyKey}`);
}

/** A payout that was accepted and fails later reads failed from the next look on. */
export async function findSandboxConnectPayout(
  db: CommonQueryMethods,
  id: string,
): Promise<SandboxConnectPayoutRow | null> {
  await db.query(sql.unsafe`
    UPDATE sandbox_connect_payouts SET status = 'failed'
    WHERE id = ${id} AND fails_later AND status = 'pending'`);
  return db.maybeOne(sql.type(sandboxConnectPayoutRow)`
    SELECT ${payoutColumns} FROM sandbox_connect_payouts WHERE id = ${id}`);
}

/** The sandbox cancels a payout it has not paid yet (a resolution failed asks it). */
export async function cancelSandboxConnectPayout(
  db: CommonQueryMethods,
  id: string,
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE sandbox_connect_payouts SET status = 'failed' WHERE id = ${id} AND status = 'pending'`);
}
