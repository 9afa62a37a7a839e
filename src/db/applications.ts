import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { Currency } from '../domain/money';
import { currencySwitchRefusal } from '../domain/money-rules';
import { disputeIsOpen } from './disputes';

export const applicationRow = z.object({
  id: z.string(),
  name: z.string(),
  base_currency: z.enum(['USD', 'SLE']),
  escrow_fee_bps: z.number().int(),
  escrow_fee_fixed: z.bigint(),
  fee_bps: z.record(z.string(), z.number().int()),
  rate_limits: z.record(z.string(), z.number().int()),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ApplicationRow = z.infer<typeof applicationRow>;

const columns = sql.fragment`id, name, base_currency, escrow_fee_bps, escrow_fee_fixed, fee_bps, rate_limits, created_at, updated_at`;

export async function createApplication(
  db: CommonQueryMethods,
  input: { name: string; baseCurrency: Currency; escrowFeeBps?: number; escrowFeeFixed?: bigint },
): Promise<ApplicationRow> {
  return db.one(sql.type(applicationRow)`
    INSERT INTO applications (id, name, base_currency, escrow_fee_bps, escrow_fee_fixed)
    VALUES (${randomUUID()}, ${input.name}, ${input.baseCurrency}, ${input.escrowFeeBps ?? 0},
            ${(input.escrowFeeFixed ?? 0n).toString()})
    RETURNING ${columns}`);
}

export async function findApplication(
  db: CommonQueryMethods,
  id: string,
): Promise<ApplicationRow | null> {
  return db.maybeOne(
    sql.type(applicationRow)`SELECT ${columns} FROM applications WHERE id = ${id}`,
  );
}

export type ApplicationUpdate = {
  baseCurrency?: Currency;
  escrowFeeBps?: number;
  escrowFeeFixed?: bigint;
  feeBps?: Record<string, number>;
  rateLimits?: Record<string, number>;
};

/** Applies the given settings; fee and rate-limit maps are merged into what is there. */
export async function updateApplication(
  db: CommonQueryMethods,
  id: string,
  update: ApplicationUpdate,
): Promise<ApplicationRow | null> {
  return db.maybeOne(sql.type(applicationRow)`
    UPDATE applications SET
      base_currency = coalesce(${update.baseCurrency ?? null}, base_currency),
      escrow_fee_bps = coalesce(${update.escrowFeeBps ?? null}::integer, escrow_fee_bps),
      escrow_fee_fixed = coalesce(${update.escrowFeeFixed?.toString() ?? null}::bigint, escrow_fee_fixed),
      fee_bps = fee_bps || ${sql.jsonb(update.feeBps ?? {})},
      rate_limits = rate_limits || ${sql.jsonb(update.rateLimits ?? {})},
      updated_at = now()
    WHERE id = ${id}
    RETURNING ${columns}`);
}

/**
 * Applies the settings as `updateApplication` does, but switches the base currency (and every
 * wallet, in both modes) only while no wallet holds money and no payment or dispute is open, else
 * says why. Wallets are locked first, so the switch and a money step on one (a dispute's too) wait.
 */
export async function updateApplicationSettings(
  pool: CommonQueryMethods & Pick<DatabaseTransactionConnection, 'transaction'>,
  id: string,
  update: ApplicationUpdate,
): Promise<{ application: ApplicationRow } | { refused: string } | null> {
  return pool.transaction(async (trx) => {
    // NO KEY UPDATE: payments inserted meanwhile only key-share the row, and must not deadlock.
    const app = await trx.maybeOne(
      sql.type(
        applicationRow,
      )`SELECT ${columns} FROM applications WHERE id = ${id} FOR NO KEY UPDATE`,
    );
    if (!app) return null;
    const to = update.baseCurrency;
    if (to && to !== app.base_currency) {
      // Every wallet is locked (a count reads them all), not only up to the first with money.
      const funded = await trx.oneFirst(sql.type(z.object({ funded: z.number() }))`
        SELECT count(*) FILTER (WHERE balance <> 0)::int AS funded FROM (
          SELECT balance FROM ledger_accounts
          WHERE application_id = ${id} AND kind = 'user_wallet' ORDER BY id FOR UPDATE
        ) w`);
      const open = await trx.exists(sql.unsafe`
        SELECT 1 FROM transactions WHERE application_id = ${id} AND status IN ('pending', 'held')`);
      const disputed = await trx.exists(sql.unsafe`
        SELECT 1 FROM disputes WHERE application_id = ${id} AND ${disputeIsOpen}`);
      const refused = currencySwitchRefusal({ funded: funded > 0, open, disputed });
      if (refused) return { refused };
      await trx.query(sql.unsafe`
        UPDATE ledger_accounts SET currency = ${to}
        WHERE application_id = ${id} AND kind = 'user_wallet'`);
    }
    const application = await updateApplication(trx, id, update);
    return application && { application };
  });
}
