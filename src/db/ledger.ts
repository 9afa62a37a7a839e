import { randomUUID } from 'node:crypto';
import {
  sql,
  type CommonQueryMethods,
  type DatabaseTransactionConnection,
  type FragmentSqlToken,
} from 'slonik';
import { z } from 'zod';
import { assertBalanced, lockOrder, type Posting } from '../domain/ledger';
import type { Currency } from '../domain/money';
import type { Mode } from '../domain/types';
import { ledgerTransactionDuration } from '../observability/metrics';
import { remember } from '../cache/bounded';
import { afterCommit, nowAsRead, prepare } from './pool';
import { insertedValues } from './insert-values';

export type SystemAccountKind =
  | 'escrow'
  | 'application_fees'
  | 'provider_clearing_mobile_money'
  | 'provider_clearing_card'
  | 'payouts'
  | 'fx'
  | 'dispute_reserve';

const lockedAccount = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  kind: z.string(),
  currency: z.enum(['USD', 'SLE']),
  balance: z.bigint(),
});
export type LockedAccount = z.infer<typeof lockedAccount>;

/**
 * Locks the accounts a ledger transaction will touch, in the one fixed order of
 * `src/domain/ledger.lockOrder`; call it first. `FOR NO KEY UPDATE`, not `FOR UPDATE`, lets the
 * foreign keys' key-share locks through (see docs/architecture.md, The ledger).
 */
export async function lockAccounts(
  trx: DatabaseTransactionConnection,
  ids: readonly string[],
): Promise<Map<string, LockedAccount>> {
  const unique = [...new Set(ids)];
  const rows = await trx.any(
    prepare(sql.type(lockedAccount)`
      SELECT id, application_id, mode, kind, currency, balance
      FROM ledger_accounts
      WHERE id = ANY(${sql.array(unique, 'uuid')})
      ORDER BY (kind <> 'user_wallet'), id
      FOR NO KEY UPDATE`),
  );
  const ordered = lockOrder(rows);
  return new Map(ordered.map((r) => [r.id, r]));
}

/**
 * Writes one balanced ledger transaction, the accounts locked already; triggers and a check keep
 * the balances (see docs/architecture.md, The ledger). `alongside` are more writes for the same
 * statement, as `name AS (INSERT ...)` parts of its WITH.
 */
export async function postLedgerTransaction(
  trx: DatabaseTransactionConnection,
  input: LedgerTransactionInput,
  alongside: readonly FragmentSqlToken[] = [],
): Promise<string> {
  const id = randomUUID();
  await timed(input.kind, () => trx.query(prepare(ledgerStatement(id, input, alongside))));
  return id;
}

/**
 * `postLedgerTransaction` as a statement of its own, written (`alongside` too) only where `guard`
 * holds, which its `prelude` locks and reads for. Answers the time of all it wrote (its `now()`,
 * src/db/pool.ts `nowAsRead`), or null: nothing written, the locks let go with the statement.
 */
export async function postGuardedLedgerTransaction(
  db: CommonQueryMethods,
  input: LedgerTransactionInput,
  guarded: { prelude: FragmentSqlToken; guard: FragmentSqlToken },
  alongside: readonly FragmentSqlToken[] = [],
): Promise<string | null> {
  const statement = ledgerStatement(randomUUID(), input, alongside, guarded);
  const { written, at } = await timed(input.kind, () => db.one(prepare(statement)));
  return written ? at : null;
}

type LedgerTransactionInput = {
  applicationId: string;
  mode: Mode;
  transactionId: string | null;
  kind: string;
  description?: string;
  metadata?: Record<string, string | number | boolean | null>;
  postings: readonly Posting[];
};

/** What a ledger statement answers: whether it wrote (a guarded one may not), and when. */
const writtenRow = z.object({ written: z.boolean(), at: z.string() });

async function timed<T>(kind: string, run: () => Promise<T>): Promise<T> {
  const started = process.hrtime.bigint();
  const result = await run();
  ledgerTransactionDuration.observe({ kind }, Number(process.hrtime.bigint() - started) / 1e9);
  return result;
}

function ledgerStatement(
  id: string,
  input: LedgerTransactionInput,
  alongside: readonly FragmentSqlToken[],
  guarded?: { prelude: FragmentSqlToken; guard: FragmentSqlToken },
) {
  assertBalanced(input.postings);
  const guard = guarded?.guard;
  const parts = [
    ...(guarded ? [guarded.prelude] : []),
    sql.fragment`ledger_transaction AS (
      INSERT INTO ledger_transactions (id, application_id, mode, transaction_id, kind, description, metadata)
      ${insertedValues(
        sql.fragment`${id}, ${input.applicationId}, ${input.mode}, ${input.transactionId}, ${input.kind},
              ${input.description ?? ''}, ${sql.jsonb(input.metadata ?? {})}`,
        guard,
      )}
      RETURNING id
    )`,
    sql.fragment`ledger_entries_written AS (
      INSERT INTO ledger_entries (ledger_transaction_id, account_id, currency, amount)
      SELECT (SELECT id FROM ledger_transaction), account_id, currency, amount
      FROM ${sql.unnest(
        input.postings.map((p) => [p.accountId, p.currency, p.amount.toString()]),
        ['uuid', 'text', 'int8'],
      )} AS p(account_id, currency, amount)${guard ? sql.fragment` WHERE ${guard}` : sql.fragment``}
    )`,
    ...alongside,
  ];
  return sql.type(writtenRow)`
    WITH ${sql.join(parts, sql.fragment`, `)}
    SELECT ${guard ?? sql.fragment`true`} AS written, ${nowAsRead} AS at`;
}

/**
 * System account ids as a process has seen them committed, by application, mode, kind and
 * currency. A system account, once committed, never changes its id and never goes (an
 * application that has accounts cannot be deleted), so memory needs no confirmation.
 */
export type SystemAccountMemory = Map<string, string>;

/** Past this many system accounts the memory starts over (it never grows without bound). */
const MAX_REMEMBERED_SYSTEM_ACCOUNTS = 10_000;

/**
 * The system account of an application, mode, kind and currency, opened on first use. An id is
 * remembered only once the transaction that read it commits (a first use rolled back takes its
 * account with it).
 */
export async function systemAccountId(
  db: CommonQueryMethods,
  applicationId: string,
  mode: Mode,
  kind: SystemAccountKind,
  currency: Currency,
  memory?: SystemAccountMemory,
): Promise<string> {
  const key = systemAccountKey(applicationId, mode, kind, currency);
  const remembered = memory?.get(key);
  if (remembered !== undefined) return remembered;
  const find = () =>
    db.maybeOneFirst(
      prepare(sql.type(z.object({ id: z.string() }))`
        SELECT id FROM ledger_accounts
        WHERE application_id = ${applicationId} AND mode = ${mode} AND kind = ${kind} AND currency = ${currency}`),
    );
  let id = await find();
  if (id === null) {
    await db.query(sql.unsafe`
      INSERT INTO ledger_accounts (id, application_id, mode, kind, currency)
      VALUES (${randomUUID()}, ${applicationId}, ${mode}, ${kind}, ${currency})
      ON CONFLICT (application_id, mode, kind, currency) WHERE kind <> 'user_wallet' DO NOTHING`);
    id = await find();
    if (id === null) throw new Error(`system account ${kind} ${currency} could not be opened`);
  }
  if (memory) {
    const found = id;
    afterCommit(db, () => remember(memory, key, found, MAX_REMEMBERED_SYSTEM_ACCOUNTS));
  }
  return id;
}

const systemAccountKey = (
  applicationId: string,
  mode: Mode,
  kind: SystemAccountKind,
  currency: Currency,
) => `${applicationId}/${mode}/${kind}/${currency}`;

/** The id of a system account `memory` has seen committed, without asking the database. */
export function rememberedSystemAccount(
  memory: SystemAccountMemory,
  applicationId: string,
  mode: Mode,
  kind: SystemAccountKind,
  currency: Currency,
): string | undefined {
  return memory.get(systemAccountKey(applicationId, mode, kind, currency));
}

/** `systemAccountId` bound to one memory (a new one when none is given): what money steps call. */
export function systemAccountsIn(memory: SystemAccountMemory = new Map()) {
  return (
    db: CommonQueryMethods,
    applicationId: string,
    mode: Mode,
    kind: SystemAccountKind,
    currency: Currency,
  ): Promise<string> => systemAccountId(db, applicationId, mode, kind, currency, memory);
}

/** The application and mode of a ledger account (a wallet or a system account), or null. */
export async function findAccountOwner(
  db: CommonQueryMethods,
  id: string,
): Promise<{ application_id: string; mode: Mode } | null> {
  return db.maybeOne(
    sql.type(
      z.object({ application_id: z.string(), mode: z.enum(['test', 'live']) }),
    )`SELECT application_id, mode FROM ledger_accounts WHERE id = ${id}`,
  );
}
