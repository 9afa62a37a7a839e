import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';

/** A record of a provider's books as stored here (src/providers/books.ts `ProviderRecord`). */
export type BookedRecord = {
  providerReference: string;
  bookedAt: string;
  amount: bigint;
  currency: string;
  fee: bigint;
  direction: 'in' | 'out';
  status: 'succeeded' | 'failed' | 'reversed';
};
type BookPage = { records: BookedRecord[]; cursor: string | null };
type BookWindow = { applicationId: string; from: string; to: string };

const recordRow = z.object({
  provider_reference: z.string(),
  booked_at: z.string(),
  amount: z.bigint(),
  currency: z.string(),
  fee: z.bigint(),
  direction: z.enum(['in', 'out']),
  status: z.enum(['succeeded', 'failed', 'reversed']),
  /** Where the next page starts after this record. */
  position: z.string(),
});

function toRecord(r: z.infer<typeof recordRow>): BookedRecord {
  return {
    providerReference: r.provider_reference,
    bookedAt: r.booked_at,
    amount: r.amount,
    currency: r.currency,
    fee: r.fee,
    direction: r.direction,
    status: r.status,
  };
}

function page(rows: ReadonlyArray<z.infer<typeof recordRow>>, limit: number): BookPage {
  const last = rows.at(-1);
  return {
    records: rows.map(toRecord),
    cursor: rows.length < limit || !last ? null : last.position,
  };
}

/** A sandbox row's `reference` as the transaction id it names (null for anything else). */
const named = (reference: FragmentSqlToken) => sql.fragment`CASE
  WHEN ${reference} ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
  THEN ${reference}::uuid END`;

/**
 * One of the sandbox's tables as records: its rows that are booked (no longer pending), of the
 * window, whose `reference` names a Test Mode payment of the application.
 */
function sandboxTable(
  w: BookWindow,
  table: string,
  bookedAt: string,
  direction: 'in' | 'out',
  statuses: { succeeded: string; failed: readonly string[] },
): FragmentSqlToken {
  const s = sql.identifier(['s']);
  const at = sql.identifier(['s', bookedAt]);
  return sql.fragment`
    SELECT s.id AS provider_reference, ${at} AS booked_at, s.amount, s.currency,
      0::bigint AS fee, ${direction}::text AS direction,
      CASE WHEN s.status = ${statuses.succeeded} THEN 'succeeded' ELSE 'failed' END AS status
    FROM ${sql.identifier([table])} AS ${s}
    JOIN transactions t ON t.id = ${named(sql.fragment`s.reference`)}
    WHERE t.application_id = ${w.applicationId} AND t.mode = 'test'
      AND s.status = ANY(${sql.array([statuses.succeeded, ...statuses.failed], 'text')})
      AND ${at} >= ${w.from}::timestamptz AND ${at} < ${w.to}::timestamptz`;
}

/** The sandbox's tables that keep each provider's books, with their booked statuses. */
function sandboxTables(w: BookWindow, provider: 'mobile_money' | 'card'): FragmentSqlToken[] {
  if (provider === 'mobile_money') {
    return [
      sandboxTable(w, 'sandbox_payment_codes', 'updated_at', 'in', {
        succeeded: 'completed',
        failed: ['failed', 'expired'],
      }),
      sandboxTable(w, 'sandbox_mobile_money_payouts', 'updated_at', 'out', {
        succeeded: 'completed',
        failed: ['failed'],
      }),
    ];
  }
  return [
    sandboxTable(w, 'sandbox_card_payments', 'updated_at', 'in', {
      succeeded: 'succeeded',
      failed: ['failed'],
    }),
    sandboxTable(w, 'sandbox_connect_payouts', 'created_at', 'out', {
      succeeded: 'paid',
      failed: ['failed'],
    }),
    sandboxTable(w, 'sandbox_card_refunds', 'created_at', 'out', {
      succeeded: 'succeeded',
      failed: ['failed'],
    }),
  ];
}

/**
 * A page of the sandbox's books of `provider` for the window, by (booked_at, id); the cursor is
 * the last record's place.
 */
export async function readSandboxBooks(
  db: CommonQueryMethods,
  provider: 'mobile_money' | 'card',
  w: BookWindow,
  cursor: string | null,
  limit: number,
): Promise<BookPage> {
  const after = cursor ? (JSON.parse(cursor) as { at: string; id: string }) : null;
  const rows = await db.any(sql.type(recordRow)`
    SELECT provider_reference, booked_at, amount, currency, fee, direction, status,
      json_build_object('at', booked_at, 'id', provider_reference)::text AS position
    FROM (${sql.join(sandboxTables(w, provider), sql.fragment` UNION ALL `)}) AS books
    WHERE (${after?.at ?? null}::timestamptz IS NULL
      OR (booked_at, provider_reference) > (${after?.at ?? null}::timestamptz, ${after?.id ?? ''}))
    ORDER BY booked_at, provider_reference
    LIMIT ${limit}`);
  return page(rows, limit);
}

/**
 * A page of an imported file's records of the window after `cursor`, in the file's order, each
 * with its `position` (its row number); reading and copying a page go by the same rule.
 */
function importedPage(
  importId: string,
  w: BookWindow,
  cursor: string | null,
  limit: number,
): FragmentSqlToken {
  const after = cursor === null ? 0 : Number(cursor);
  return sql.fragment`
    SELECT provider_reference, booked_at, amount, currency, fee, direction, status,
      row_number AS position
    FROM recon_import_records
    WHERE import_id = ${importId} AND row_number > ${after}
      AND booked_at >= ${w.from}::timestamptz AND booked_at < ${w.to}::timestamptz
    ORDER BY row_number
    LIMIT ${limit}`;
}

/** A page of an imported file's records of the window, in the file's order. */
export async function readImportedBooks(
  db: CommonQueryMethods,
  importId: string,
  w: BookWindow,
  cursor: string | null,
  limit: number,
): Promise<BookPage> {
  const rows = await db.any(sql.type(recordRow)`
    SELECT provider_reference, booked_at, amount, currency, fee, direction, status,
      position::text AS position
    FROM (${importedPage(importId, w, cursor, limit)}) AS p
    ORDER BY p.position`);
  return page(rows, limit);
}

const copiedRow = z.object({ copied: z.number(), last: z.number().nullable() });

/**
 * Copies the page `readImportedBooks` would read into the run's staging rows from `firstSeq`
 * (as `insertRunRecords` writes them), in one statement: the rows never pass through the worker.
 * Answers how many and where the next page starts.
 */
export async function copyImportedRecords(
  db: CommonQueryMethods,
  importId: string,
  w: BookWindow,
  cursor: string | null,
  limit: number,
  into: { runId: string; firstSeq: number },
): Promise<{ copied: number; cursor: string | null }> {
  const { copied, last } = await db.one(sql.type(copiedRow)`
    WITH page AS (
      SELECT p.*, row_number() OVER (ORDER BY p.position) AS n
      FROM (${importedPage(importId, w, cursor, limit)}) AS p
    ), stored AS (
      INSERT INTO recon_run_records (run_id, seq, provider_reference, booked_at, amount, currency,
        fee, direction, status)
      SELECT ${into.runId}, ${into.firstSeq} + n - 1, provider_reference, booked_at, amount,
        currency, fee, direction, status
      FROM page
      ON CONFLICT (run_id, seq) DO NOTHING
    )
    SELECT count(*)::int AS copied, max(position) AS last FROM page`);
  return { copied, cursor: copied < limit || last === null ? null : String(last) };
}
