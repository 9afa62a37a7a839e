import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { Mode } from '../domain/types';

/**
 * Settlement files an application uploaded (docs/api.md, Reconciliation): the import and its
 * records, written together; the same file again (same SHA-256, application and mode) is the
 * first import.
 */

const reconImportRow = z.object({
  id: z.string(),
  provider: z.enum(['mobile_money', 'card']),
  rows: z.number(),
  sha256: z.string(),
  createdAt: z.string(),
});
export type ReconImport = z.infer<typeof reconImportRow>;

/** A record of the file in minor units: the shape of src/providers/books.ts' ProviderRecord. */
export type ReconImportRecord = {
  providerReference: string;
  bookedAt: string;
  amount: bigint;
  currency: string;
  fee: bigint;
  direction: 'in' | 'out';
  status: 'succeeded' | 'failed' | 'reversed';
};

const columns = sql.fragment`id, provider, rows, sha256, created_at AS "createdAt"`;

/**
 * A provider's records as the column arrays `unnest` reads, in the order provider_reference,
 * booked_at, amount, currency, fee, direction, status: one statement however many records.
 */
export function recordArrays(records: readonly ReconImportRecord[]) {
  const column = <T>(pick: (r: ReconImportRecord) => T) => records.map(pick);
  return sql.join(
    [
      sql.array(
        column((r) => r.providerReference),
        'text',
      ),
      sql.array(
        column((r) => r.bookedAt),
        'timestamptz',
      ),
      sql.array(
        column((r) => r.amount.toString()),
        'int8',
      ),
      sql.array(
        column((r) => r.currency),
        'text',
      ),
      sql.array(
        column((r) => r.fee.toString()),
        'int8',
      ),
      sql.array(
        column((r) => r.direction),
        'text',
      ),
      sql.array(
        column((r) => r.status),
        'text',
      ),
    ],
    sql.fragment`, `,
  );
}

/**
 * Records per INSERT, one statement of column arrays: small enough that a batch is collected
 * young, never promoted to V8's old generation while its statement runs.
 */
const BATCH = 2_000;

/**
 * Inserts the import and its records in one transaction; `row_number` is a record's place in the
 * file, 1 for the first data row. A file already imported answers that import, `created` false
 * (a concurrent upload of the same file waits for the first and answers it too).
 */
export async function saveReconImport(
  db: CommonQueryMethods,
  input: {
    id: string;
    applicationId: string;
    mode: Mode;
    provider: ReconImport['provider'];
    sha256: string;
    /** An array, or anything that gives its records a slice at a time. */
    records: {
      readonly length: number;
      slice(start: number, end: number): readonly ReconImportRecord[];
    };
  },
): Promise<{ import: ReconImport; created: boolean }> {
  return db.transaction(async (trx) => {
    const inserted = await trx.maybeOne(sql.type(reconImportRow)`
      INSERT INTO recon_imports (id, application_id, mode, provider, sha256, rows)
      VALUES (${input.id}, ${input.applicationId}, ${input.mode}, ${input.provider},
              ${input.sha256}, ${input.records.length})
      ON CONFLICT (application_id, mode, sha256) DO NOTHING
      RETURNING ${columns}`);
    if (!inserted) {
      const existing = await trx.one(sql.type(reconImportRow)`
        SELECT ${columns} FROM recon_imports
        WHERE application_id = ${input.applicationId} AND mode = ${input.mode}
          AND sha256 = ${input.sha256}`);
      return { import: existing, created: false };
    }
    for (let start = 0; start < input.records.length; start += BATCH) {
      await insertRecords(trx, input.id, start, input.records.slice(start, start + BATCH));
    }
    return { import: inserted, created: true };
  });
}

async function insertRecords(
  trx: DatabaseTransactionConnection,
  importId: string,
  offset: number,
  records: readonly ReconImportRecord[],
): Promise<void> {
  await trx.query(sql.unsafe`
    INSERT INTO recon_import_records
      (import_id, row_number, provider_reference, booked_at, amount, currency, fee, direction,
       status)
    SELECT ${importId}, ${offset} + r.ordinality, r.provider_reference, r.booked_at, r.amount,
           r.currency, r.fee, r.direction, r.status
    FROM unnest(${recordArrays(records)}) WITH ORDINALITY
      AS r(provider_reference, booked_at, amount, currency, fee, direction, status, ordinality)`);
}

/** An import of the application and mode, or null (another application's is not found). */
export async function findReconImport(
  db: CommonQueryMethods,
  input: { applicationId: string; mode: Mode; id: string },
): Promise<ReconImport | null> {
  return db.maybeOne(sql.type(reconImportRow)`
    SELECT ${columns} FROM recon_imports
    WHERE id = ${input.id} AND application_id = ${input.applicationId} AND mode = ${input.mode}`);
}
