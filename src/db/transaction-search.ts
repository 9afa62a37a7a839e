import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import type { Caller, TransactionStatus, TransactionType } from '../domain/types';
import type { DatabasePool } from './pool';
import { metadataContains } from './metadata';
import { pageTotal, TOTAL_COUNTED_AHEAD } from './pages';
import { transactionColumns, transactionRow, type TransactionRow } from './transactions';

/** The filters of a transaction list (docs/api.md, Metadata). */
export type TransactionFilter = {
  status?: readonly TransactionStatus[] | undefined;
  transaction_type?: readonly TransactionType[] | undefined;
  /** Sender or recipient. */
  wallet_id?: string | undefined;
  /** ISO 8601 instants: `created_gte` inclusive, `created_lt` exclusive. */
  created_gte?: string | undefined;
  created_lt?: string | undefined;
  /** Minor units, both bounds inclusive. */
  amount_gte?: bigint | undefined;
  amount_lte?: bigint | undefined;
  provider_reference?: string | undefined;
  /** `metadata[KEY]=VALUE`: the merchant's metadata holds each pair exactly. */
  metadata?: Readonly<Record<string, string>> | undefined;
};

/** `column` is one of `values`: an equality when one, so an index gives its rows in order. */
function oneOf(column: FragmentSqlToken, values: readonly string[]): FragmentSqlToken {
  return values.length === 1
    ? sql.fragment`${column} = ${values[0]!}`
    : sql.fragment`${column} = ANY(${sql.array([...values], 'text')})`;
}

/** The conditions of `filter` but the wallet's (see `matching`), and the caller's scope. */
function transactionWhere(caller: Caller, filter: TransactionFilter): FragmentSqlToken[] {
  const parts = [sql.fragment`application_id = ${caller.applicationId} AND mode = ${caller.mode}`];
  if (filter.status?.length) parts.push(oneOf(sql.fragment`status`, filter.status));
  if (filter.transaction_type?.length) {
    parts.push(oneOf(sql.fragment`transaction_type`, filter.transaction_type));
  }
  if (filter.created_gte !== undefined) {
    parts.push(sql.fragment`created_at >= ${filter.created_gte}::timestamptz`);
  }
  if (filter.created_lt !== undefined) {
    parts.push(sql.fragment`created_at < ${filter.created_lt}::timestamptz`);
  }
  if (filter.amount_gte !== undefined) {
    parts.push(sql.fragment`amount >= ${filter.amount_gte.toString()}::bigint`);
  }
  if (filter.amount_lte !== undefined) {
    parts.push(sql.fragment`amount <= ${filter.amount_lte.toString()}::bigint`);
  }
  if (filter.provider_reference !== undefined) {
    parts.push(sql.fragment`provider_reference = ${filter.provider_reference}`);
  }
  if (filter.metadata && Object.keys(filter.metadata).length > 0) {
    parts.push(metadataContains(sql.identifier(['merchant_metadata']), filter.metadata));
  }
  return parts;
}

/** Newest first; the id breaks ties, so that a cursor names one place in the order. */
const NEWEST_FIRST = sql.fragment`ORDER BY created_at DESC, id DESC`;

const and = (parts: FragmentSqlToken[]) => sql.fragment`${sql.join(parts, sql.fragment` AND `)}`;

/**
 * The rows that match, as a FROM item, of which the first `first` in the list's order are
 * exact. A wallet's are its sent and its received ones, each read newest first from its own
 * index and merged, so that a busy wallet costs no more than a page (an OR cannot do that).
 */
function matching(
  caller: Caller,
  filter: TransactionFilter,
  more: FragmentSqlToken[],
  first: number,
  columns: FragmentSqlToken = transactionColumns,
): FragmentSqlToken {
  const where = [...transactionWhere(caller, filter), ...more];
  const wallet = filter.wallet_id;
  if (wallet === undefined) {
    return sql.fragment`(SELECT ${columns} FROM transactions WHERE ${and(where)}) AS t`;
  }
  return sql.fragment`(
    (SELECT ${columns} FROM transactions
      WHERE ${and([...where, sql.fragment`wallet_id = ${wallet}::uuid`])}
      ${NEWEST_FIRST} LIMIT ${first})
    UNION ALL
    (SELECT ${columns} FROM transactions
      WHERE ${and([
        ...where,
        sql.fragment`recipient_wallet_id = ${wallet}::uuid`,
        sql.fragment`wallet_id IS DISTINCT FROM ${wallet}::uuid`,
      ])}
      ${NEWEST_FIRST} LIMIT ${first})) AS t`;
}

export async function listTransactions(
  db: CommonQueryMethods,
  caller: Caller,
  filter: TransactionFilter,
  page: { limit: number; offset: number },
): Promise<{ rows: readonly TransactionRow[]; total: number }> {
  const counted = page.offset + page.limit + TOTAL_COUNTED_AHEAD;
  const total = await pageTotal(
    db,
    matching(caller, filter, [], counted),
    sql.fragment`true`,
    page,
    NEWEST_FIRST,
  );
  const rows = await db.any(sql.type(transactionRow)`
    SELECT ${transactionColumns} FROM ${matching(caller, filter, [], page.offset + page.limit)}
    ${NEWEST_FIRST} LIMIT ${page.limit} OFFSET ${page.offset}`);
  return { rows, total };
}

/**
 * The matching transactions older than the cursor, and whether more follow; null when the cursor
 * is not the caller's. A keyset, not an offset: payments made meanwhile are all newer than the
 * cursor, so a walk neither repeats nor skips a row.
 */
export async function listTransactionsAfter(
  db: CommonQueryMethods,
  caller: Caller,
  filter: TransactionFilter,
  cursor: string,
  limit: number,
): Promise<{ rows: readonly TransactionRow[]; hasMore: boolean } | null> {
  const found = await db.maybeOne(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM transactions
    WHERE id = ${cursor} AND application_id = ${caller.applicationId} AND mode = ${caller.mode}`);
  if (!found) return null;
  const after = sql.fragment`(created_at, id) < (
    SELECT created_at, id FROM transactions WHERE id = ${cursor})`;
  const rows = await db.any(sql.type(transactionRow)`
    SELECT ${transactionColumns} FROM ${matching(caller, filter, [after], limit + 1)}
    ${NEWEST_FIRST} LIMIT ${limit + 1}`);
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

/** A row of the transactions export: the record and the provider's fee where it has one. */
export const exportRow = transactionRow.extend({ provider_fee: z.string().nullable() });
export type ExportRow = z.infer<typeof exportRow>;

/** The payment types that record a provider's fee: card deposits and the money-out saga's. */
const exportColumns = sql.fragment`${transactionColumns},
  CASE WHEN transaction_type IN ('card_deposit', 'mobile_money_cashout', 'card_payout', 'card_refund')
    THEN metadata->>'provider_fee' END AS provider_fee`;

/** How many transactions match, counted no further than `limit`. */
export async function countTransactionsUpTo(
  db: CommonQueryMethods,
  caller: Caller,
  filter: TransactionFilter,
  limit: number,
): Promise<number> {
  return db.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM (
      SELECT 1 FROM ${matching(caller, filter, [], limit)} LIMIT ${limit}) AS c`);
}

/**
 * The matching transactions in the list's order, at most `maxRows`, through one database cursor:
 * one snapshot, rows fetched only as the caller takes them, so memory stays flat. Returning early
 * closes the cursor and gives the connection back.
 */
export async function* transactionStream(
  pool: DatabasePool,
  caller: Caller,
  filter: TransactionFilter,
  chunkRows: number,
  maxRows: number,
): AsyncGenerator<readonly ExportRow[]> {
  // Untyped, then each chunk's first row checked against the schema: a drifting column still
  // fails at once, without the cost of a schema copy of every one of up to a million rows.
  const query = sql.unsafe`
    SELECT ${transactionColumns}, provider_fee
    FROM ${matching(caller, filter, [], maxRows, exportColumns)}
    ${NEWEST_FIRST} LIMIT ${maxRows}`;
  let open: (rows: AsyncIterable<{ data: unknown }> & { destroy(): void }) => void = () => {};
  const opened = new Promise<Parameters<typeof open>[0]>((resolve) => (open = resolve));
  const finished = pool.stream(query, (rows) => open(rows));
  // The stream opens once a connection is taken; failing to take one ends `finished` first.
  const rows = await Promise.race([opened, finished.then(() => opened)]);
  let chunk: ExportRow[] = [];
  try {
    for await (const { data } of rows) {
      if (chunk.length === 0) exportRow.parse(data);
      chunk.push(data as ExportRow);
      if (chunk.length === chunkRows) {
        yield chunk;
        chunk = [];
      }
    }
    if (chunk.length > 0) yield chunk;
    await finished;
  } finally {
    rows.destroy();
    await finished.catch(() => undefined);
  }
}
