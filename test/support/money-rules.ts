import { sql } from 'slonik';
import { z } from 'zod';
import { AppError } from '../../src/api/errors';
import type { MoneyStepGuard } from '../../src/db/money-rules';
import type { DatabasePool } from '../../src/db/pool';
import type { MoneyStep } from '../../src/domain/money-rules';
import { asDeclined } from '../../src/workflows/declines';
import type { Reply } from './http';

/** What a caller reads of a decline: its status and `detail`. */
export type Answer = { status: number; detail: string };

/** The answer of an HTTP reply. */
export const answerOfReply = (reply: Reply): Answer => ({
  status: reply.status,
  detail: (reply.body as { detail?: string } | undefined)?.detail ?? `(no detail: ${reply.status})`,
});

/** A code and detail as the API's edge answers them (src/api/errors.ts `unlessDeclined`). */
const answerOfCode = (code: AppError['code'], detail?: string | null): Answer => {
  const error = new AppError(code, detail);
  return { status: error.status, detail: error.detail };
};

/**
 * The answer an activity's failure becomes once it crosses the workflow (src/workflows/declines.ts
 * `asDeclined`) and the API's edge; a step that did not decline (or failed otherwise) throws.
 */
export async function answerOfActivity(run: Promise<unknown>): Promise<Answer> {
  const error = await run.then(
    () => new Error('the step was made, not declined'),
    (e: unknown) => e,
  );
  const declined = asDeclined(error);
  if (!declined) throw error;
  return answerOfCode(declined.code, declined.detail);
}

/**
 * The answer a one-statement guard gives on its own (`MoneyStepGuard.declined`, the index of the
 * step's first rule that does not hold), read without writing anything; null when every rule
 * holds. `ok` is whether the whole guard holds.
 */
export async function answerOfGuard(
  pool: DatabasePool,
  step: MoneyStep<string, string>,
  guard: MoneyStepGuard,
): Promise<{ answer: Answer | null; ok: boolean }> {
  const row = await pool.one(sql.type(
    z.object({ declined: z.number().nullable(), ok: z.boolean() }),
  )`
    WITH ${guard.prelude} SELECT ${guard.declined} AS declined, ${guard.guard} AS ok`);
  const rule = row.declined === null ? undefined : step.rules[row.declined];
  return { answer: rule ? answerOfCode(rule.code, rule.detail) : null, ok: row.ok };
}

/**
 * Everything a declined money step could have written, for the whole database: payment rows,
 * ledger transactions and entries, events (a bulk payment's own end is not the step's), the
 * sandbox providers' records, and the balances of `accounts`.
 */
export async function writtenState(
  pool: DatabasePool,
  accounts: readonly string[],
): Promise<Record<string, unknown>> {
  const counts = await pool.one(sql.type(
    z.object({
      transactions: z.number(),
      ledger: z.number(),
      entries: z.number(),
      events: z.number(),
      codes: z.number(),
      cards: z.number(),
      payouts: z.number(),
      connect: z.number(),
      refunds: z.number(),
    }),
  )`
    SELECT (SELECT count(*)::int FROM transactions) AS transactions,
      (SELECT count(*)::int FROM ledger_transactions) AS ledger,
      (SELECT count(*)::int FROM ledger_entries) AS entries,
      (SELECT count(*)::int FROM events WHERE type <> 'batch.completed') AS events,
      (SELECT count(*)::int FROM sandbox_payment_codes) AS codes,
      (SELECT count(*)::int FROM sandbox_card_payments) AS cards,
      (SELECT count(*)::int FROM sandbox_mobile_money_payouts) AS payouts,
      (SELECT count(*)::int FROM sandbox_connect_payouts) AS connect,
      (SELECT count(*)::int FROM sandbox_card_refunds) AS refunds`);
  const balances = await pool.any(sql.type(z.object({ id: z.string(), balance: z.bigint() }))`
    SELECT id, balance FROM ledger_accounts WHERE id = ANY(${sql.array([...accounts], 'uuid')})
    ORDER BY id`);
  return { ...counts, balances: balances.map((b) => `${b.id}:${b.balance}`) };
}
