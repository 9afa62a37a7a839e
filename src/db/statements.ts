import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { TRANSACTION_TYPES } from '../domain/types';
import { prepare } from './pool';

/**
 * A wallet's statements and balances at an instant, read from its ledger entries by the time
 * the ledger recorded them, to the millisecond as every time of the API: each query is a range
 * of `ledger_entries_by_time_idx` (account, time, id), which carries the amounts to sum.
 */

/** The wallet as these queries need it: its id (its ledger account's) and when it opened. */
export type StatementAccount = { id: string; created_at: string };

/** `from` inclusive, `to` exclusive, both whole milliseconds. */
export type StatementWindow = { from: Date; to: Date };

export type StatementSummary = {
  opening: bigint;
  closing: bigint;
  credits: bigint;
  debits: bigint;
  count: number;
};

export type StatementEntry = {
  transaction_id: string | null;
  transaction_type: (typeof TRANSACTION_TYPES)[number] | null;
  created_at: string;
  amount: bigint;
  balance_after: bigint;
  description: string;
};

const ms = (d: Date) => d.toISOString();

/**
 * The balance of `account` before `at` (`through`: at or before it), as a SQL expression over the
 * entries on the side nearer in time (fewer of them): their sum, or the stored balance less it,
 * read by the one statement it is part of, so in one snapshot.
 */
function balanceBefore(
  account: StatementAccount,
  at: Date,
  now: Date,
  through = false,
): FragmentSqlToken {
  const before = at.getTime() - Date.parse(account.created_at) <= now.getTime() - at.getTime();
  // Added in SQL: the millisecond after the last one written out may be past year 9999.
  const bound = through
    ? sql.fragment`${ms(at)}::timestamptz + interval '1 millisecond'`
    : sql.fragment`${ms(at)}::timestamptz`;
  const side = (condition: FragmentSqlToken) => sql.fragment`(
    SELECT coalesce(sum(amount), 0) FROM ledger_entries
    WHERE account_id = ${account.id} AND ${condition})`;
  return before
    ? sql.fragment`${side(sql.fragment`created_at < ${bound}`)}::int8`
    : sql.fragment`((SELECT balance FROM ledger_accounts WHERE id = ${account.id})
        - ${side(sql.fragment`created_at >= ${bound}`)})::int8`;
}

/** What `account` held at `at`: every entry recorded at or before it (to the millisecond). */
export async function balanceAt(
  db: CommonQueryMethods,
  account: StatementAccount,
  at: Date,
  now: Date = new Date(),
): Promise<bigint> {
  return db.oneFirst(
    prepare(sql.type(z.object({ balance: z.bigint() }))`
      SELECT ${balanceBefore(account, at, now, true)} AS balance`),
  );
}

/** The stored balance and the database's clock, to the millisecond, read together. */
export async function balanceNow(
  db: CommonQueryMethods,
  accountId: string,
): Promise<{ balance: bigint; at: string }> {
  return db.one(
    prepare(sql.type(z.object({ balance: z.bigint(), at: z.string() }))`
      SELECT balance, date_trunc('milliseconds', now()) AS at
      FROM ledger_accounts WHERE id = ${accountId}`),
  );
}

const summaryColumns = {
  opening: z.bigint(),
  credits: z.bigint(),
  debits: z.bigint(),
  count: z.number(),
};

/** The window's totals, its entry count and the balances at its two ends, in one statement. */
function summaryOf(
  account: StatementAccount,
  window: StatementWindow,
  now: Date,
): FragmentSqlToken {
  return sql.fragment`
    SELECT ${balanceBefore(account, window.from, now)} AS opening,
      coalesce(sum(amount) FILTER (WHERE amount > 0), 0)::int8 AS credits,
      coalesce(-sum(amount) FILTER (WHERE amount < 0), 0)::int8 AS debits,
      count(*)::int AS count
    FROM ledger_entries e WHERE ${windowCondition(account.id, window)}`;
}

function summary(row: { opening: bigint; credits: bigint; debits: bigint; count: number }) {
  return {
    opening: row.opening,
    closing: row.opening + row.credits - row.debits,
    credits: row.credits,
    debits: row.debits,
    count: row.count,
  };
}

/** The window's totals, its entry count and the balances at its two ends. */
export async function statementSummary(
  db: CommonQueryMethods,
  account: StatementAccount,
  window: StatementWindow,
  now: Date = new Date(),
): Promise<StatementSummary> {
  return summary(
    await db.one(sql.type(z.object(summaryColumns))`${summaryOf(account, window, now)}`),
  );
}

function windowCondition(accountId: string, window: StatementWindow): FragmentSqlToken {
  return sql.fragment`e.account_id = ${accountId}
    AND e.created_at >= ${ms(window.from)}::timestamptz AND e.created_at < ${ms(window.to)}::timestamptz`;
}

const entryRow = z.object({
  transaction_id: z.string().nullable(),
  transaction_type: z.enum(TRANSACTION_TYPES).nullable(),
  created_at: z.string(),
  exact_at: z.string(),
  id: z.bigint(),
  amount: z.bigint(),
  running: z.bigint(),
  description: z.string(),
});
type EntryRow = z.infer<typeof entryRow>;

/** A summary with one entry of the page, or none (an empty page: the entry's columns null). */
const pageRow = z.object({
  ...summaryColumns,
  transaction_id: z.string().nullable(),
  transaction_type: z.enum(TRANSACTION_TYPES).nullable(),
  created_at: z.string().nullable(),
  exact_at: z.string().nullable(),
  id: z.bigint().nullable(),
  amount: z.bigint().nullable(),
  running: z.bigint().nullable(),
  description: z.string().nullable(),
});

/**
 * The window's summary and its entries from `offset`, oldest first, each with the balance after it
 * (a window function over the rows the page reads anyway). One statement, so one snapshot:
 * opening + entries = closing even while payments commit.
 */
export async function statementPage(
  db: CommonQueryMethods,
  account: StatementAccount,
  window: StatementWindow,
  page: { limit: number; offset: number },
  now: Date = new Date(),
): Promise<{ summary: StatementSummary; entries: StatementEntry[] }> {
  const rows = await db.many(
    prepare(sql.type(pageRow)`
    WITH summary AS (${summaryOf(account, window, now)}),
    page AS (${entriesFrom(sql.fragment`
      SELECT id, ledger_transaction_id, created_at, amount,
        sum(amount) OVER (ORDER BY created_at, id)::int8 AS running
      FROM (
        SELECT e.id, e.ledger_transaction_id, e.created_at, e.amount FROM ledger_entries e
        WHERE ${windowCondition(account.id, window)}
        ORDER BY e.created_at, e.id LIMIT ${page.offset + page.limit}
      ) upto
      ORDER BY created_at, id OFFSET ${page.offset}`)})
    SELECT s.opening, s.credits, s.debits, s.count, p.transaction_id, p.transaction_type,
      p.created_at, p.exact_at, p.id, p.amount, p.running, p.description
    FROM summary s LEFT JOIN page p ON true
    ORDER BY p.created_at, p.id`),
  );
  const first = rows[0]!;
  const entries = rows.flatMap((r) => (r.id === null ? [] : [entry(r as EntryRow, first.opening)]));
  return { summary: summary(first), entries };
}

/**
 * Every entry of the window, oldest first, in batches of `batch` read by keyset (the exact time
 * and id of the last one), each with the balance after it; for the CSV, whatever its length.
 */
export async function* allStatementEntries(
  db: CommonQueryMethods,
  accountId: string,
  window: StatementWindow,
  opening: bigint,
  batch = 5000,
): AsyncGenerator<StatementEntry[]> {
  let before = opening;
  let after: { at: string; id: bigint } | null = null;
  for (;;) {
    const past: FragmentSqlToken = after
      ? sql.fragment`AND (e.created_at, e.id) > (${after.at}::timestamptz, ${after.id.toString()}::int8)`
      : sql.fragment``;
    const rows: readonly EntryRow[] = await db.any(sql.type(entryRow)`
      ${entriesFrom(sql.fragment`
        SELECT id, ledger_transaction_id, created_at, amount,
          sum(amount) OVER (ORDER BY created_at, id)::int8 AS running
        FROM (
          SELECT e.id, e.ledger_transaction_id, e.created_at, e.amount FROM ledger_entries e
          WHERE ${windowCondition(accountId, window)} ${past}
          ORDER BY e.created_at, e.id LIMIT ${batch}
        ) upto`)}`);
    if (rows.length === 0) return;
    yield rows.map((r) => entry(r, before));
    const last = rows[rows.length - 1]!;
    before += last.running;
    after = { at: last.exact_at, id: last.id };
    if (rows.length < batch) return;
  }
}

/** The entries of `ranked` with what the statement shows of their ledger and payment records. */
function entriesFrom(ranked: FragmentSqlToken): FragmentSqlToken {
  // The ledger's description says which leg it is ("…: give back"); the payment's is the
  // client's words, shown where the ledger wrote none.
  return sql.fragment`
    SELECT lt.transaction_id, t.transaction_type, e.created_at, e.created_at::text AS exact_at,
      e.id, e.amount, e.running,
      coalesce(nullif(lt.description, ''), t.description, '') AS description
    FROM (${ranked}) e
    JOIN ledger_transactions lt ON lt.id = e.ledger_transaction_id
    LEFT JOIN transactions t ON t.id = lt.transaction_id
    ORDER BY e.created_at, e.id`;
}

function entry(r: EntryRow, before: bigint): StatementEntry {
  return {
    transaction_id: r.transaction_id,
    transaction_type: r.transaction_type,
    created_at: r.created_at,
    amount: r.amount,
    balance_after: before + r.running,
    description: r.description,
  };
}
