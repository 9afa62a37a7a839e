import { randomUUID } from 'node:crypto';
import { mkdtemp, chmod, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'slonik';
import { z } from 'zod';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool';
import { copyImportedRecords, readImportedBooks } from '../../src/db/recon-books';
import { matchRun } from '../../src/db/recon-matching';
import { getReconRun, insertReconRun } from '../../src/db/recon-runs';
import { freePort } from '../../src/worker/ports';
import { createFixtureApplication } from '../../tools/harness/fixtures';
import { startMigratedPostgres, type EmbeddedDatabase } from '../../tools/harness/postgres';
import { expectedReconCounts, seedRecon } from '../../tools/bench/recon-seed';

// A Postgres of its own, started and migrated on a shared machine.
jest.setTimeout(180_000);

let dir: string;
let server: EmbeddedDatabase | undefined;
let pool: DatabasePool;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-bench-recon-'));
  await chmod(dir, 0o755);
  const started = await startMigratedPostgres({
    dir,
    port: await freePort(),
    database: 'recon',
    fast: true,
  });
  server = started.server;
  pool = await createDatabasePool(started.url, { maximumPoolSize: 2 });
});
afterAll(async () => {
  await pool?.end();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("row 9a's seed (tools/bench/recon-seed.ts)", () => {
  it('expects one in a hundred of each kind and the rest matched but the unbooked', () => {
    expect(expectedReconCounts(1_000_000)).toEqual({
      matched: 950_000,
      missingInternal: 10_000,
      missingExternal: 10_000,
      amountMismatch: 10_000,
      statusMismatch: 10_000,
      duplicate: 10_000,
    });
  });

  it('refuses a size that is not a whole number of hundreds', async () => {
    await expect(
      seedRecon(pool, { applicationId: randomUUID(), mode: 'test', payments: 1_050 }),
    ).rejects.toThrow(/whole number of hundreds/);
  });

  it('seeds payments and a file whose match finds exactly the seeded exceptions', async () => {
    const app = await createFixtureApplication(pool, { modes: ['test'] });
    const seed = await seedRecon(pool, { applicationId: app.id, mode: 'test', payments: 1_000 });
    const stored = await pool.one(sql.type(z.object({ payments: z.number(), records: z.number() }))`
      SELECT (SELECT count(*) FROM transactions WHERE application_id = ${app.id})::int AS payments,
        (SELECT count(*) FROM recon_import_records WHERE import_id = ${seed.importId})::int
          AS records`);
    expect(stored).toEqual({ payments: 1_000, records: 1_000 });
    expect(seed.records).toBe(1_000);

    // What the run's activities do (src/activities/provider-reconciliation.ts), page by page.
    const created = await insertReconRun(pool, {
      id: randomUUID(),
      applicationId: app.id,
      mode: 'test',
      provider: 'mobile_money',
      from: seed.from,
      to: seed.to,
      importId: seed.importId,
      origin: 'api',
    });
    const window = { applicationId: app.id, mode: 'test' as const, from: seed.from, to: seed.to };
    let loaded = 0;
    for (let cursor: string | null = null; ;) {
      const page = await copyImportedRecords(pool, seed.importId, window, cursor, 300, {
        runId: created!.id,
        firstSeq: loaded,
      });
      loaded += page.copied;
      cursor = page.cursor;
      if (cursor === null) break;
    }
    expect(loaded).toBe(1_000);
    // A page copied again (a retried load) writes nothing twice, and reads as the file does.
    const again = await copyImportedRecords(pool, seed.importId, window, null, 300, {
      runId: created!.id,
      firstSeq: 0,
    });
    const read = await readImportedBooks(pool, seed.importId, window, null, 300);
    expect(again).toEqual({ copied: 300, cursor: read.cursor });
    const staged = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM recon_run_records WHERE run_id = ${created!.id}`);
    expect(staged).toBe(1_000);
    const counts = await pool.transaction(async (trx) =>
      matchRun(trx, await getReconRun(trx, created!.id), 60),
    );
    expect(counts).toEqual(seed.expected);
    expect(counts).toEqual({
      matched: 950,
      missingInternal: 10,
      missingExternal: 10,
      amountMismatch: 10,
      statusMismatch: 10,
      duplicate: 10,
    });

    const kinds = await pool.any(sql.type(z.object({ kind: z.string(), n: z.number() }))`
      SELECT kind, count(*)::int AS n FROM recon_exceptions
      WHERE application_id = ${app.id} AND run_id = ${created!.id}
      GROUP BY kind ORDER BY kind`);
    expect(kinds).toEqual([
      { kind: 'amount_mismatch', n: 10 },
      { kind: 'duplicate', n: 10 },
      { kind: 'missing_external', n: 10 },
      { kind: 'missing_internal', n: 10 },
      { kind: 'status_mismatch', n: 10 },
    ]);
  });
});
