// TEMPORARY stand-in for recon-sources' db/recon-imports.ts: replaced when that branch merges.
import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { Mode } from '../domain/types';

export type ReconImport = {
  id: string;
  applicationId: string;
  mode: Mode;
  provider: 'mobile_money' | 'card';
  sha256: string;
  rows: number;
  createdAt: string;
};

const importRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  provider: z.enum(['mobile_money', 'card']),
  sha256: z.string(),
  rows: z.number(),
  created_at: z.string(),
});

const toImport = (r: z.infer<typeof importRow>): ReconImport => ({
  id: r.id,
  applicationId: r.application_id,
  mode: r.mode,
  provider: r.provider,
  sha256: r.sha256,
  rows: r.rows,
  createdAt: r.created_at,
});

export async function saveReconImport(
  db: CommonQueryMethods & Pick<DatabaseTransactionConnection, 'transaction'>,
  file: {
    applicationId: string;
    mode: Mode;
    provider: 'mobile_money' | 'card';
    sha256: string;
    rows: number;
    records: readonly {
      providerReference: string;
      bookedAt: string;
      amount: bigint;
      currency: string;
      fee: bigint;
      direction: string;
      status: string;
    }[];
  },
): Promise<{ import: ReconImport; created: boolean }> {
  return db.transaction(async (trx) => {
    const inserted = await trx.maybeOne(sql.type(importRow)`
      INSERT INTO recon_imports (id, application_id, mode, provider, sha256, rows)
      VALUES (${randomUUID()}, ${file.applicationId}, ${file.mode}, ${file.provider},
        ${file.sha256}, ${file.rows})
      ON CONFLICT (application_id, mode, sha256) DO NOTHING
      RETURNING id, application_id, mode, provider, sha256, rows, created_at`);
    if (!inserted) {
      const first = await trx.one(sql.type(importRow)`
        SELECT id, application_id, mode, provider, sha256, rows, created_at FROM recon_imports
        WHERE application_id = ${file.applicationId} AND mode = ${file.mode}
          AND sha256 = ${file.sha256}`);
      return { import: toImport(first), created: false };
    }
    let n = 0;
    for (const r of file.records) {
      n += 1;
      await trx.query(sql.unsafe`
        INSERT INTO recon_import_records (import_id, row_number, provider_reference, booked_at,
          amount, currency, fee, direction, status)
        VALUES (${inserted.id}, ${n}, ${r.providerReference}, ${r.bookedAt},
          ${r.amount.toString()}, ${r.currency}, ${r.fee.toString()}, ${r.direction}, ${r.status})`);
    }
    return { import: toImport(inserted), created: true };
  });
}

export async function findReconImport(
  db: CommonQueryMethods,
  key: { applicationId: string; mode: Mode; id: string },
): Promise<ReconImport | null> {
  const row = await db.maybeOne(sql.type(importRow)`
    SELECT id, application_id, mode, provider, sha256, rows, created_at FROM recon_imports
    WHERE id = ${key.id} AND application_id = ${key.applicationId} AND mode = ${key.mode}`);
  return row ? toImport(row) : null;
}
