import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { SessionNeeds } from './dashboard-accounts';

/**
 * A dashboard account's two-step sign-in (TOTP): its secret is kept sealed by the caller (it must
 * be read to check a code), its recovery codes as SHA-256 (random enough for one hash), each
 * accepted once. A secret waits as `pending` until its first valid code turns it on.
 */
const totpRow = z.object({
  secret_sealed: z.string().nullable(),
  pending_sealed: z.string().nullable(),
  last_step: z.coerce.number().nullable(),
});
export type TotpState = z.infer<typeof totpRow>;

export async function readTotp(db: CommonQueryMethods, accountId: string): Promise<TotpState> {
  return db.one(sql.type(totpRow)`
    SELECT totp_secret_sealed AS secret_sealed, totp_pending_sealed AS pending_sealed,
      totp_last_step AS last_step
    FROM dashboard_users WHERE id = ${accountId}`);
}

/** What a session must still do after the password: a code, enrolment (the team wants it), none. */
export async function signInNeeds(
  db: CommonQueryMethods,
  accountId: string,
): Promise<SessionNeeds | null> {
  const row = await db.one(sql.type(z.object({ enabled: z.boolean(), required: z.boolean() }))`
    SELECT u.totp_enabled_at IS NOT NULL AS enabled, a.dashboard_two_step_required AS required
    FROM dashboard_users u JOIN applications a ON a.id = u.application_id
    WHERE u.id = ${accountId}`);
  if (row.enabled) return 'code';
  return row.required ? 'enrolment' : null;
}

export async function setPendingTotp(
  db: CommonQueryMethods,
  accountId: string,
  sealed: string,
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE dashboard_users SET totp_pending_sealed = ${sealed} WHERE id = ${accountId}`);
}

/**
 * Takes a code's time step, once: false when a code of this step or a later one was accepted
 * already, so that a code seen over a shoulder cannot be used again.
 */
export async function takeTotpStep(
  db: CommonQueryMethods,
  accountId: string,
  step: number,
): Promise<boolean> {
  const result = await db.query(sql.unsafe`
    UPDATE dashboard_users SET totp_last_step = ${step}
    WHERE id = ${accountId} AND (totp_last_step IS NULL OR totp_last_step < ${step})`);
  return result.rowCount === 1;
}

/**
 * Turns two-step on with the pending secret its first code matched (still the pending one, so a
 * concurrent new enrolment is not turned on unseen), replacing the recovery codes. False when
 * the pending secret changed meanwhile.
 */
export async function enableTotp(
  db: CommonQueryMethods,
  input: { accountId: string; pending: string; step: number; recoveryHashes: Buffer[] },
): Promise<boolean> {
  return db.transaction(async (trx) => {
    const result = await trx.query(sql.unsafe`
      UPDATE dashboard_users
      SET totp_secret_sealed = totp_pending_sealed, totp_pending_sealed = NULL,
          totp_enabled_at = now(), totp_last_step = ${input.step}
      WHERE id = ${input.accountId} AND totp_pending_sealed = ${input.pending}`);
    if (result.rowCount !== 1) return false;
    await trx.query(sql.unsafe`
      DELETE FROM dashboard_recovery_codes WHERE dashboard_user_id = ${input.accountId}`);
    const rows = input.recoveryHashes.map(
      (hash) => sql.fragment`(${randomUUID()}, ${input.accountId}, ${sql.binary(hash)})`,
    );
    await trx.query(sql.unsafe`
      INSERT INTO dashboard_recovery_codes (id, dashboard_user_id, code_hash)
      VALUES ${sql.join(rows, sql.fragment`, `)}`);
    return true;
  });
}

/** Turns two-step off and forgets its secret and recovery codes. */
export async function disableTotp(db: CommonQueryMethods, accountId: string): Promise<void> {
  await db.transaction(async (trx) => {
    await trx.query(sql.unsafe`
      UPDATE dashboard_users
      SET totp_secret_sealed = NULL, totp_enabled_at = NULL, totp_pending_sealed = NULL,
          totp_last_step = NULL
      WHERE id = ${accountId}`);
    await trx.query(sql.unsafe`
      DELETE FROM dashboard_recovery_codes WHERE dashboard_user_id = ${accountId}`);
  });
}

/** Uses a recovery code: true once for each code, false for any other or a used one. */
export async function useRecoveryCode(
  db: CommonQueryMethods,
  accountId: string,
  codeHash: Buffer,
): Promise<boolean> {
  const result = await db.query(sql.unsafe`
    UPDATE dashboard_recovery_codes SET used_at = now()
    WHERE dashboard_user_id = ${accountId} AND code_hash = ${sql.binary(codeHash)}
      AND used_at IS NULL`);
  return result.rowCount === 1;
}

export async function recoveryCodesLeft(
  db: CommonQueryMethods,
  accountId: string,
): Promise<number> {
  return db.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM dashboard_recovery_codes
    WHERE dashboard_user_id = ${accountId} AND used_at IS NULL`);
}
