import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../../src/db/pool';
import { insertPayoutAccount, payoutAccountIds } from '../../src/db/payout-accounts';
import { findReconImport, saveReconImport } from '../../src/db/recon-imports';
import type { ProviderRecord } from '../../src/providers/books';
import { parseSettlementFile, SETTLEMENT_FILE_HEADER } from '../../src/providers/settlement-file';
import { createCaller, createTestDatabase, insertFundedWallet } from '../support/database';

/**
 * What the provider reconciliation stores and reads itself: an uploaded settlement file (its
 * import and records together, a file twice once) and the connected accounts whose books it reads.
 */

let pool: DatabasePool;
let appId: string;
let otherAppId: string;

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  appId = (await createCaller(pool, 'imports')).applicationId;
  otherAppId = (await createCaller(pool, 'other')).applicationId;
});

afterAll(async () => pool?.end());

const storedRow = z.object({
  row_number: z.number(),
  provider_reference: z.string(),
  booked_at: z.string(),
  amount: z.bigint(),
  currency: z.string(),
  fee: z.bigint(),
  direction: z.string(),
  status: z.string(),
});

const storedRecords = (importId: string) =>
  pool.any(sql.type(storedRow)`
    SELECT row_number, provider_reference, booked_at, amount, currency, fee, direction, status
    FROM recon_import_records WHERE import_id = ${importId} ORDER BY row_number`);

const importCount = async () =>
  pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM recon_imports`,
  );

const record = (i: number): ProviderRecord => ({
  providerReference: `pi_${i}`,
  bookedAt: new Date(Date.UTC(2026, 2, 1, 0, 0, i % 60)).toISOString(),
  amount: BigInt(i) * 100n + 1n,
  currency: i % 2 ? 'USD' : 'SLE',
  fee: BigInt(i % 7),
  direction: i % 3 ? 'in' : 'out',
  status: (['succeeded', 'failed', 'reversed'] as const)[i % 3]!,
});

describe('saveReconImport', () => {
  it('stores a parsed file: the import and every record in file order, in minor units', async () => {
    const text =
      `${SETTLEMENT_FILE_HEADER.join(',')}\n` +
      'pi_A,2026-03-01T10:00:00+02:00,12.50,USD,0.36,in,succeeded\n' +
      're_B,2026-03-01T11:00:00Z,3,USD,0,out,reversed\n';
    const file = await parseSettlementFile(Readable.from([Buffer.from(text)]));
    const id = randomUUID();
    const saved = await saveReconImport(pool, {
      id,
      applicationId: appId,
      mode: 'test',
      provider: 'card',
      sha256: file.sha256,
      records: file.records,
    });
    expect(saved).toEqual({
      created: true,
      import: { id, provider: 'card', rows: 2, sha256: file.sha256, createdAt: expect.any(String) },
    });
    expect(await storedRecords(id)).toEqual([
      {
        row_number: 1,
        provider_reference: 'pi_A',
        booked_at: '2026-03-01T08:00:00.000Z',
        amount: 1250n,
        currency: 'USD',
        fee: 36n,
        direction: 'in',
        status: 'succeeded',
      },
      {
        row_number: 2,
        provider_reference: 're_B',
        booked_at: '2026-03-01T11:00:00.000Z',
        amount: 300n,
        currency: 'USD',
        fee: 0n,
        direction: 'out',
        status: 'reversed',
      },
    ]);
    expect(await findReconImport(pool, { applicationId: appId, mode: 'test', id })).toEqual(
      saved.import,
    );
  });

  it('answers the first import for the same file again, writing nothing', async () => {
    const sha256 = 'a'.repeat(64);
    const first = await saveReconImport(pool, {
      id: randomUUID(),
      applicationId: appId,
      mode: 'test',
      provider: 'mobile_money',
      sha256,
      records: [record(1), record(2)],
    });
    const before = await importCount();
    const again = await saveReconImport(pool, {
      id: randomUUID(),
      applicationId: appId,
      mode: 'test',
      provider: 'mobile_money',
      sha256,
      records: [record(1), record(2), record(3)],
    });
    expect(again).toEqual({ import: first.import, created: false });
    expect(await importCount()).toBe(before);
    expect(await storedRecords(first.import.id)).toHaveLength(2);
  });

  it('keeps the same file apart per mode and per application', async () => {
    const sha256 = 'b'.repeat(64);
    const save = (applicationId: string, mode: 'test' | 'live') =>
      saveReconImport(pool, {
        id: randomUUID(),
        applicationId,
        mode,
        provider: 'card',
        sha256,
        records: [record(5)],
      });
    const results = [
      await save(appId, 'test'),
      await save(appId, 'live'),
      await save(otherAppId, 'test'),
    ];
    expect(results.map((r) => r.created)).toEqual([true, true, true]);
    expect(new Set(results.map((r) => r.import.id)).size).toBe(3);
    const [test, live] = results;
    expect(
      await findReconImport(pool, { applicationId: appId, mode: 'live', id: test!.import.id }),
    ).toBeNull();
    expect(
      await findReconImport(pool, { applicationId: otherAppId, mode: 'live', id: live!.import.id }),
    ).toBeNull();
  });

  it('answers one import to two uploads of the same file at once', async () => {
    const sha256 = 'c'.repeat(64);
    const records = Array.from({ length: 500 }, (_, i) => record(i));
    const results = await Promise.all(
      [0, 1, 2].map(() =>
        saveReconImport(pool, {
          id: randomUUID(),
          applicationId: appId,
          mode: 'test',
          provider: 'card',
          sha256,
          records,
        }),
      ),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.import.id)).size).toBe(1);
    expect(await storedRecords(results[0]!.import.id)).toHaveLength(500);
  });

  it('writes a file of several batches whole, numbered across batches', async () => {
    const records = Array.from({ length: 25_001 }, (_, i) => record(i));
    const { import: saved } = await saveReconImport(pool, {
      id: randomUUID(),
      applicationId: appId,
      mode: 'live',
      provider: 'card',
      sha256: 'd'.repeat(64),
      records,
    });
    const stored = await storedRecords(saved.id);
    expect(saved.rows).toBe(25_001);
    expect(stored).toHaveLength(25_001);
    expect(stored[10_000]).toMatchObject({ row_number: 10_001, provider_reference: 'pi_10000' });
    expect(stored[25_000]).toMatchObject({
      row_number: 25_001,
      provider_reference: 'pi_25000',
      amount: 2_500_001n,
    });
  });

  it('writes nothing when a record is refused: the import goes with its records', async () => {
    const before = await importCount();
    const bad = { ...record(2), amount: -1n };
    await expect(
      saveReconImport(pool, {
        id: randomUUID(),
        applicationId: appId,
        mode: 'test',
        provider: 'card',
        sha256: 'e'.repeat(64),
        records: [record(1), bad],
      }),
    ).rejects.toThrow();
    expect(await importCount()).toBe(before);
  });
});

describe('payoutAccountIds', () => {
  it('answers the connected accounts of the application and mode, by id', async () => {
    const accountOf = async (applicationId: string, mode: 'test' | 'live', accountId: string) => {
      const caller = { applicationId, mode, credentialId: randomUUID() };
      const walletId = await insertFundedWallet(pool, caller, 'USD', 0n);
      await insertPayoutAccount(pool, {
        applicationId,
        mode,
        walletId,
        provider: 'stripe',
        accountId,
        state: {
          payoutsEnabled: true,
          externalAccountId: null,
          externalAccountLast4: null,
          requirements: { currently_due: [], pending_verification: [], disabled_reason: null },
        },
        tos: { ip: '203.0.113.7', acceptedAt: '2026-03-01T00:00:00Z' },
      });
    };
    await accountOf(appId, 'live', 'acct_live_b');
    await accountOf(appId, 'live', 'acct_live_a');
    await accountOf(appId, 'test', 'acct_test');
    await accountOf(otherAppId, 'live', 'acct_other');
    expect(await payoutAccountIds(pool, { applicationId: appId, mode: 'live' })).toEqual([
      'acct_live_a',
      'acct_live_b',
    ]);
    expect(await payoutAccountIds(pool, { applicationId: otherAppId, mode: 'test' })).toEqual([]);
  });
});
