import { sql } from 'slonik';
import { z } from 'zod';
import { ledgerInvariantProblems } from '../../src/db/ledger-audit';
import {
  atomicBatchScenario,
  batchScenario,
  batchSizes,
  BATCH_ITEMS,
  ATOMIC_ITEMS,
} from '../../tools/bench/batches';
import {
  setUp,
  startServers,
  startShape,
  type Engine,
  type Fixture,
  type Servers,
} from '../../tools/bench/engine';
import { createFixtureApplication } from '../../tools/harness/fixtures';
import { httpClient } from '../../tools/bench/senders';
import { quietTemporalRuntime } from '../support/engine';

// Throwaway servers, the workflows bundled and an engine started, on a shared machine.
jest.setTimeout(240_000);

let servers: Servers | undefined;
let engine: Engine | undefined;
let fixture: Fixture;
beforeAll(async () => {
  quietTemporalRuntime();
  servers = await startServers({ durable: false, temporalFile: false, ledgerClients: 2 });
  engine = await startShape(servers, 'single', {});
  fixture = await setUp(engine);
});
afterAll(async () => {
  await engine?.close();
  await servers?.close();
});

const totalBalance = () =>
  engine!.pool.oneFirst(sql.type(z.object({ n: z.string() }))`
    SELECT coalesce(sum(balance), 0)::text AS n FROM ledger_accounts
    WHERE id = ANY(${sql.array(fixture.wallets, 'uuid')})`);

const batchesOf = (applicationId: string) =>
  engine!.pool.any(
    sql.type(z.object({ atomic: z.boolean(), status: z.string(), succeeded: z.number() }))`
      SELECT atomic, status, succeeded FROM batches WHERE application_id = ${applicationId}
      ORDER BY created_at`,
  );

describe('rows 10 and 10a, bulk payments (tools/bench/batches.ts)', () => {
  it('takes its sizes from BENCH_BATCH_ITEMS, else the most a batch and an atomic one hold', () => {
    expect(batchSizes({})).toEqual({ items: BATCH_ITEMS, atomic: ATOMIC_ITEMS });
    expect(batchSizes({ BENCH_BATCH_ITEMS: '2_000' })).toEqual({ items: 2_000, atomic: 1_000 });
    expect(batchSizes({ BENCH_BATCH_ITEMS: '30' })).toEqual({ items: 30, atomic: 30 });
    expect(() => batchSizes({ BENCH_BATCH_ITEMS: '0' })).toThrow(/from 1 to 10000/);
    expect(() => batchSizes({ BENCH_BATCH_ITEMS: '10001' })).toThrow(/from 1 to 10000/);
  });

  it('pays a batch of transfers, then an atomic one, and prints each with its targets', async () => {
    const before = await totalBalance();
    const row = await batchScenario({ engine: engine!, fixture }, 1_000, 30);
    expect(row).toMatchObject({ id: '10', load: 'one batch', result: null });
    expect(row.scenario).toBe('bulk payment, 30 transfers, until completed');
    expect(row.note).toMatch(
      /^[\d.]+ s, [\d.]+ items\/s, \d+% of \(3\)'s 1000\.0\/s \((at least|UNDER) 90%\); worker RSS \d+ MB before, \+\d+ MB at most \((under|OVER) 100 MB\)(; main heap \d+ MB before, \+\d+ MB at most)?; CPU ms an item: node [\d.]+, Postgres [\d.]+, Temporal [\d.]+$/,
    );
    const unrated = await batchScenario({ engine: engine!, fixture }, undefined, 5);
    expect(unrated.note).toContain('(3) not measured in this shape');

    const atomic = await atomicBatchScenario({ engine: engine!, fixture }, 10);
    expect(atomic).toMatchObject({ id: '10a', load: 'one batch', result: null });
    expect(atomic.note).toMatch(/^[\d.]+ s to completed \((under|OVER) 2 s\)$/);

    expect(await batchesOf(fixture.applicationId)).toEqual([
      { atomic: false, status: 'completed', succeeded: 30 },
      { atomic: false, status: 'completed', succeeded: 5 },
      { atomic: true, status: 'completed', succeeded: 10 },
    ]);
    const paid = await engine!.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions
      WHERE application_id = ${fixture.applicationId} AND transaction_type = 'transfer'
        AND status = 'completed'`);
    expect(paid).toBe(45);
    // Transfers between the fixture's wallets: their total is what it was.
    expect(await totalBalance()).toBe(before);
    expect(await ledgerInvariantProblems(engine!.pool)).toEqual([]);
  });

  it('throws when the batch did not pay every item, rather than print a figure', async () => {
    const app = await createFixtureApplication(engine!.pool, { name: 'empty', modes: ['test'] });
    const { apiKey, secretKey } = app.credentials.test;
    const headers = { 'api-key': apiKey, 'secret-key': secretKey };
    const api = httpClient(engine!.apiUrl, headers);
    const wallets: string[] = [];
    try {
      for (const i of [1, 2]) {
        const user = await api.post('/api/v1/users/create/', {
          app_user_id: `empty-${i}`,
          name: `E ${i}`,
          phone_number: '+23276000000',
        });
        const wallet = await api.post(
          `/api/v1/wallets/create/${(user.body as { id: string }).id}/`,
        );
        wallets.push((wallet.body as { id: string }).id);
      }
    } finally {
      api.close();
    }
    // Unfunded wallets: every transfer declines, and the batch ends failed.
    const empty = { applicationId: app.id, headers, wallets };
    await expect(batchScenario({ engine: engine!, fixture: empty }, 1_000, 4)).rejects.toThrow(
      /^10: batch [0-9a-f-]+ failed, 0 of 4 succeeded, 0 completed transfers$/,
    );
    await expect(atomicBatchScenario({ engine: engine!, fixture: empty }, 3)).rejects.toThrow(
      /^10a: batch [0-9a-f-]+ failed, 0 of 3 succeeded, 0 completed transfers$/,
    );
    expect(await batchesOf(app.id)).toEqual([
      { atomic: false, status: 'failed', succeeded: 0 },
      { atomic: true, status: 'failed', succeeded: 0 },
    ]);
    expect(await ledgerInvariantProblems(engine!.pool)).toEqual([]);
  });
});
