import { randomUUID } from 'node:crypto';
import { isSqlToken, sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { minorToMajorNumber, type Currency } from '../domain/money';
import {
  TRANSACTION_STATUSES,
  TRANSACTION_TYPES,
  type Caller,
  type Mode,
  type TransactionStatus,
  type TransactionType,
} from '../domain/types';
import type { TransactionRecord } from '../workflows/shared';
import { jsonbValue, prepare, type DatabasePool } from './pool';
import { compileRules } from './money-rules';
import { walletFacts } from './wallet-facts';
import { depositRules } from '../domain/money-rules';
import { metadataContains, metadataMerge } from './metadata';
import { pageTotal, TOTAL_COUNTED_AHEAD } from './pages';

export const transactionRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  transaction_type: z.enum(TRANSACTION_TYPES),
  status: z.enum(TRANSACTION_STATUSES),
  wallet_id: z.string().nullable(),
  recipient_wallet_id: z.string().nullable(),
  escrow_wallet_id: z.string().nullable(),
  application_wallet_id: z.string().nullable(),
  currency: z.enum(['USD', 'SLE']),
  amount: z.bigint(),
  escrow_amount: z.bigint(),
  application_fee: z.bigint().nullable(),
  description: z.string(),
  provider_reference: z.string().nullable(),
  workflow_id: z.string().nullable(),
  /** The merchant's metadata; `metadata` is the engine's own provider facts, never shown as it. */
  merchant_metadata: z.record(z.string(), z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});
export type TransactionRow = z.infer<typeof transactionRow>;

/** A payment row as JSON, for a workflow result (workflows/shared.ts `TransactionRecord`). */
export function transactionRecord(row: TransactionRow): TransactionRecord {
  return {
    ...row,
    amount: row.amount.toString(),
    escrow_amount: row.escrow_amount.toString(),
    application_fee: row.application_fee?.toString() ?? null,
  };
}

/** The row back from its JSON form. */
export function transactionFromRecord(record: TransactionRecord): TransactionRow {
  return {
    ...record,
    amount: BigInt(record.amount),
    escrow_amount: BigInt(record.escrow_amount),
    application_fee: record.application_fee === null ? null : BigInt(record.application_fee),
    // Absent from records of results recorded before payments carried it.
    merchant_metadata: record.merchant_metadata ?? {},
  };
}

/** The columns of `transactionRow`, for queries elsewhere that read or return a payment row. */
export const transactionColumns = sql.fragment`id, application_id, mode, transaction_type, status, wallet_id,
  recipient_wallet_id, escrow_wallet_id, application_wallet_id, currency, amount, escrow_amount,
  application_fee, description, provider_reference, workflow_id, merchant_metadata, created_at,
  updated_at`;

export type NewTransaction = {
  id: string;
  applicationId: string;
  mode: Mode;
  type: TransactionType;
  status: TransactionStatus;
  currency: Currency;
  amount: bigint;
  walletId?: string | null;
  recipientWalletId?: string | null;
  escrowWalletId?: string | null;
  applicationWalletId?: string | null;
  escrowAmount?: bigint;
  applicationFee?: bigint | null;
  description?: string;
  providerReference?: string | null;
  workflowId?: string | null;
  parentId?: string | null;
  metadata?: Record<string, unknown>;
  /** The merchant's metadata (api/schemas.ts `Metadata`), written with the row. */
  merchantMetadata?: Readonly<Record<string, string>> | undefined;
};

export async function insertTransaction(
  db: CommonQueryMethods,
  t: NewTransaction,
): Promise<TransactionRow> {
  return db.one(
    prepare(sql.type(transactionRow)`
      INSERT INTO transactions ${transactionValues(t)} RETURNING ${transactionColumns}`),
  );
}

/**
 * `insertTransaction` of a deposit, only while the deposit's compiled rules hold of its wallet in
 * the payment's currency; the account's key-share lock makes a currency switch (db/applications.ts)
 * wait for it, or it for the switch. Null when they do not hold (the caller's check says why).
 */
export async function insertTransactionInCurrency(
  db: CommonQueryMethods,
  t: NewTransaction & { walletId: string },
): Promise<TransactionRow | null> {
  const rules = compileRules(depositRules, {
    applicationId: t.applicationId,
    mode: t.mode,
    currency: t.currency,
    credited: t.amount,
  });
  return db.maybeOne(
    prepare(sql.type(transactionRow)`
      WITH deposit_account AS (
        SELECT id, currency FROM ledger_accounts WHERE id = ${t.walletId} FOR KEY SHARE
      ), deposit_facts AS (
        SELECT ${walletFacts({}, { prefix: 'wallet_', omit: ['balance'] })}
        FROM (SELECT) one
          LEFT JOIN (deposit_account a JOIN wallets w ON w.id = a.id
            JOIN applications app ON app.id = w.application_id) ON true
      )
      INSERT INTO transactions ${transactionValues(
        t,
        sql.fragment`coalesce((SELECT ${rules} FROM deposit_facts), false)`,
      )}
      RETURNING ${transactionColumns}`),
  );
}

/**
 * `insertTransaction` as a part of another statement's WITH (db/ledger.ts `alongside`); the row
 * it writes is `writtenTransaction(t, at)`.
 */
export function transactionInsertPart(
  t: NewTransaction,
  guard?: FragmentSqlToken,
): FragmentSqlToken {
  return sql.fragment`payment_written AS (INSERT INTO transactions ${transactionValues(t, guard)})`;
}

/**
 * The values of an insert: `VALUES (...)`, or, given a `guard` (a boolean SQL expression), the
 * same values selected only where the guard holds, so that a statement whose guard fails inserts
 * nothing (db/money-steps.ts `recordMoneyStepAtOnce`).
 */
export function insertedValues(
  values: FragmentSqlToken,
  guard: FragmentSqlToken | undefined,
): FragmentSqlToken {
  return guard ? sql.fragment`SELECT ${values} WHERE ${guard}` : sql.fragment`VALUES (${values})`;
}

/**
 * The row `insertTransaction` writes, as it reads back, in a database transaction whose `now()`
 * is `at` (every timestamp default is `now()`, the transaction's start, the same for each of
 * its statements; no trigger changes the row).
 */
export function writtenTransaction(t: NewTransaction, at: string): TransactionRow {
  return {
    id: t.id,
    application_id: t.applicationId,
    mode: t.mode,
    transaction_type: t.type,
    status: t.status,
    wallet_id: t.walletId ?? null,
    recipient_wallet_id: t.recipientWalletId ?? null,
    escrow_wallet_id: t.escrowWalletId ?? null,
    application_wallet_id: t.applicationWalletId ?? null,
    currency: t.currency,
    amount: t.amount,
    escrow_amount: t.escrowAmount ?? 0n,
    application_fee: t.applicationFee ?? null,
    description: t.description ?? '',
    provider_reference: t.providerReference ?? null,
    workflow_id: t.workflowId ?? null,
    merchant_metadata: { ...t.merchantMetadata },
    created_at: at,
    updated_at: at,
  };
}

/** A column of an insert: its name, its type (as a row read from JSON is cast) and its value. */
type WrittenColumn = readonly [
  name: string,
  type: 'uuid' | 'text' | 'int8' | 'jsonb',
  value: unknown,
];

/** The columns a new payment row is written with (the rest take their defaults), in order. */
function writtenColumns(t: NewTransaction): readonly WrittenColumn[] {
  return [
    ['id', 'uuid', t.id],
    ['application_id', 'uuid', t.applicationId],
    ['mode', 'text', t.mode],
    ['transaction_type', 'text', t.type],
    ['status', 'text', t.status],
    ['currency', 'text', t.currency],
    ['amount', 'int8', t.amount.toString()],
    ['wallet_id', 'uuid', t.walletId ?? null],
    ['recipient_wallet_id', 'uuid', t.recipientWalletId ?? null],
    ['escrow_wallet_id', 'uuid', t.escrowWalletId ?? null],
    ['application_wallet_id', 'uuid', t.applicationWalletId ?? null],
    ['escrow_amount', 'int8', (t.escrowAmount ?? 0n).toString()],
    ['application_fee', 'int8', t.applicationFee?.toString() ?? null],
    ['description', 'text', t.description ?? ''],
    ['provider_reference', 'text', t.providerReference ?? null],
    ['workflow_id', 'text', t.workflowId ?? null],
    ['parent_id', 'uuid', t.parentId ?? null],
    ['metadata', 'jsonb', JSON.parse(JSON.stringify(t.metadata ?? {}))],
    ['merchant_metadata', 'jsonb', { ...t.merchantMetadata }],
  ];
}

const columnNames = (columns: readonly WrittenColumn[]) =>
  sql.join(
    columns.map(([name]) => sql.identifier([name])),
    sql.fragment`, `,
  );

/** `(columns) VALUES (...)` of one row, or, given a `guard`, selected only where it holds. */
function oneRow(columns: readonly WrittenColumn[], guard?: FragmentSqlToken): FragmentSqlToken {
  const values = sql.join(
    columns.map(([, type, value]) =>
      type === 'jsonb' ? jsonbValue(value) : (value as string | null),
    ),
    sql.fragment`, `,
  );
  return sql.fragment`(${columnNames(columns)}) ${insertedValues(sql.fragment`${values}`, guard)}`;
}

/**
 * `(columns) SELECT ...` of many rows of the same columns in one parameter (a JSON array read
 * back by `jsonb_to_recordset`), so that a thousand rows are one statement's work.
 */
function manyRows(rows: readonly (readonly WrittenColumn[])[]): FragmentSqlToken {
  const first = rows[0];
  if (first === undefined) throw new Error('an insert of many rows needs one at least');
  const json = rows.map((columns) => Object.fromEntries(columns.map(([name, , v]) => [name, v])));
  const shape = sql.join(
    first.map(([name, type]) => sql.fragment`${sql.identifier([name])} ${sql.identifier([type])}`),
    sql.fragment`, `,
  );
  return sql.fragment`(${columnNames(first)})
    SELECT ${columnNames(first)} FROM jsonb_to_recordset(${sql.jsonb(json)}) AS r (${shape})`;
}

function transactionValues(t: NewTransaction, guard?: FragmentSqlToken): FragmentSqlToken {
  return oneRow(writtenColumns(t), guard);
}

/**
 * `insertTransaction` of many new rows as one part of another statement's WITH (db/ledger.ts
 * `alongside`), each row written as the one alone would be: in a database transaction whose
 * `now()` is `at`, each reads back as `writtenTransaction(t, at)`.
 */
export function transactionsInsertPart(ts: readonly NewTransaction[]): FragmentSqlToken {
  return sql.fragment`payments_written AS (
    INSERT INTO transactions ${manyRows(ts.map(writtenColumns))})`;
}

export async function findTransaction(
  db: CommonQueryMethods,
  id: string,
): Promise<TransactionRow | null> {
  // Prepared: an escrow release or refund reads its hold with it when the API has not seen it.
  return db.maybeOne(
    prepare(
      sql.type(transactionRow)`SELECT ${transactionColumns} FROM transactions WHERE id = ${id}`,
    ),
  );
}

/**
 * The row of a payment step a workflow answered as made: carried by the answer, read only when
 * the answer lacks it (a step found already made on a retry, or an answer recorded before rows
 * travelled with it).
 */
export async function madeStepRow(
  db: CommonQueryMethods,
  made: { transactionId: string; transaction?: TransactionRecord },
): Promise<TransactionRow> {
  const row = made.transaction
    ? transactionFromRecord(made.transaction)
    : await findTransaction(db, made.transactionId);
  if (!row) throw new Error(`payment step ${made.transactionId} answered without a record`);
  return row;
}

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

/**
 * A payment as the API answers it (api/serializers.ts `TransactionBody`): amounts as major-unit
 * numbers (docs/api.md, API conventions). Here, so that a money step can store it as the
 * answer of the request that asked for it (db/money-steps.ts `answer`).
 */
export function transactionAnswer(t: TransactionRow) {
  return {
    id: t.id,
    wallet_id: t.wallet_id,
    escrow_wallet_id: t.escrow_wallet_id,
    recipient_wallet_id: t.recipient_wallet_id,
    application_wallet_id: t.application_wallet_id,
    amount: minorToMajorNumber(t.amount),
    escrow_amount: minorToMajorNumber(t.escrow_amount),
    application_fee: t.application_fee === null ? null : minorToMajorNumber(t.application_fee),
    transaction_type: t.transaction_type,
    status: t.status,
    description: t.description,
    metadata: t.merchant_metadata,
    created_at: t.created_at,
    updated_at: t.updated_at,
  };
}

/** An event for the outbox (insertEvent, eventInsertPart). */
export type NewEvent = {
  applicationId: string;
  mode: Mode;
  type: string;
  transactionId: string | null;
  /** For `eventInsertPart`, also a jsonb expression the statement computes (`jsonbValue`). */
  data: unknown;
};

/** Writes an event to the outbox; call it in the transaction of the movement it describes. */
export async function insertEvent(db: CommonQueryMethods, e: NewEvent): Promise<string> {
  const id = randomUUID();
  await db.query(prepare(sql.unsafe`INSERT INTO events ${eventValues(id, e)}`));
  return id;
}

/** An event's insert as a part of another statement's WITH (db/ledger.ts `alongside`). */
export function eventInsertPart(e: NewEvent, guard?: FragmentSqlToken): FragmentSqlToken {
  return sql.fragment`event_written AS (INSERT INTO events ${eventValues(randomUUID(), e, guard)})`;
}

/** The columns an event is written with, in order. */
function eventColumns(id: string, e: NewEvent): readonly WrittenColumn[] {
  return [
    ['id', 'uuid', id],
    ['application_id', 'uuid', e.applicationId],
    ['mode', 'text', e.mode],
    ['type', 'text', e.type],
    ['transaction_id', 'uuid', e.transactionId],
    ['data', 'jsonb', isSqlToken(e.data) ? e.data : JSON.parse(JSON.stringify(e.data))],
  ];
}

function eventValues(id: string, e: NewEvent, guard?: FragmentSqlToken): FragmentSqlToken {
  return oneRow(eventColumns(id, e), guard);
}

/** `insertEvent` of many events as one part of another statement's WITH, each as alone. */
export function eventsInsertPart(es: readonly NewEvent[]): FragmentSqlToken {
  return sql.fragment`events_written AS (
    INSERT INTO events ${manyRows(es.map((e) => eventColumns(randomUUID(), e)))})`;
}

/**
 * Merges `patch` into the payment's merchant metadata in one statement (db/metadata.ts); null
 * when the payment is gone or the merged metadata would break the key limit.
 */
export async function mergeTransactionMetadata(
  db: CommonQueryMethods,
  id: string,
  patch: Readonly<Record<string, string | null>>,
): Promise<TransactionRow | null> {
  const merge = metadataMerge(patch, sql.identifier(['merchant_metadata']));
  return db.maybeOne(sql.type(transactionRow)`
    UPDATE transactions SET merchant_metadata = ${merge.set}, updated_at = now()
    WHERE id = ${id} AND ${merge.fits}
    RETURNING ${transactionColumns}`);
}

/** Moves a payment to a new status; returns the row as it now is. */
export async function setTransactionStatus(
  db: CommonQueryMethods,
  id: string,
  status: TransactionStatus,
): Promise<TransactionRow> {
  return db.one(
    prepare(sql.type(transactionRow)`
      UPDATE transactions SET status = ${status}, updated_at = now() WHERE id = ${id}
      RETURNING ${transactionColumns}`),
  );
}

/** A transaction of the caller's by our id or by the provider's reference, or null. */
export async function findTransactionByReference(
  db: CommonQueryMethods,
  caller: Caller,
  reference: string,
): Promise<TransactionRow | null> {
  return db.maybeOne(sql.type(transactionRow)`
    SELECT ${transactionColumns}
    FROM transactions
    WHERE application_id = ${caller.applicationId} AND mode = ${caller.mode}
      AND (provider_reference = ${reference} OR id::text = ${reference.toLowerCase()})
    LIMIT 1`);
}
