import { readFileSync } from 'node:fs';
import path from 'node:path';
import { floorOf, msPer, paymentCosts } from '../../tools/bench/cost';
import { historyCounts } from '../../tools/bench/history-counts';
import type { CpuGroups } from '../../tools/bench/cpu';
import type { LoadResult } from '../../tools/bench/load';
import { render, type Report } from '../../tools/bench/render';
import type { Row } from '../../tools/bench/scenarios';
import { historyFromJSON } from '../support/history-json';

const rated = (throughput: number): LoadResult => ({
  sent: throughput,
  ok: throughput,
  errors: 0,
  errorKinds: {},
  throughput,
  p50: 10,
  p99: 20,
  max: 30,
  elapsed: 1,
});

/** Cores of the server, node and Postgres; the load generator and the rest are not counted. */
const cores = (temporal: number, node: number, postgres: number): CpuGroups => ({
  node,
  load: 0.7,
  postgres,
  temporal,
  other: 0.3,
});

const row = (id: string, throughput: number, cpu: CpuGroups, shape?: Row['shape']): Row => ({
  id,
  scenario: id,
  load: '-',
  result: rated(throughput),
  cpu,
  ...(shape ? { shape } : {}),
});

describe('cost per payment against its floor (tools/bench/cost.ts)', () => {
  // 1a: 500/s on 0 + 0.5 + 1 cores = 0 / 1 / 2 ms. 2d: 200/s on 1 + 0.6 + 0.2 = 5 / 3 / 1 ms.
  // 2b: 100/s on 1 + 0.4 + 0.1 = 10 / 4 / 1 ms.
  const rows: Row[] = [
    row('1a', 500, cores(0, 0.5, 1)),
    row('1b', 50, cores(0, 1, 1)),
    row('2b', 100, cores(1, 0.4, 0.1), 'split'),
    row('2d', 200, cores(1, 0.6, 0.2), 'single'),
    row('3', 100, cores(0.5, 0.5, 0.5), 'single'),
    row('3i', 125, cores(1, 0.75, 0.25), 'single'),
    row('4', 40, cores(0.4, 0.6, 0.2), 'single'),
    row('5', 50, cores(0.6, 0.5, 0.4), 'single'),
    row('5r', 20, cores(0.4, 0.4, 0.2), 'single'),
    row('3', 50, cores(0.75, 0.5, 0.25), 'split'),
    row('4i', 25, cores(0.5, 0.5, 0.25), 'split'),
  ];

  it("divides a row's cores of each group by its rate, leaving out the load and the rest", () => {
    expect(msPer(rows[0])).toEqual({ server: 0, node: 1, postgres: 2, total: 3 });
    expect(msPer({ ...rows[0]!, result: rated(0) })).toBeUndefined();
    expect(msPer({ ...rows[0]!, cpu: undefined })).toBeUndefined();
    expect(msPer({ ...rows[0]!, result: null })).toBeUndefined();
  });

  it("adds the shape's bare workflow (2d single, 2b split) and one ledger statement (1a)", () => {
    expect(floorOf(rows, 'single')).toEqual({
      shape: 'single',
      rows: ['2d', '1a'],
      ms: { server: 5, node: 4, postgres: 3, total: 12 },
    });
    const split = floorOf(rows, 'split')!;
    expect(split.rows).toEqual(['2b', '1a']);
    expect(split.ms.server).toBeCloseTo(10, 10);
    expect(split.ms.node).toBeCloseTo(5, 10);
    expect(split.ms.postgres).toBeCloseTo(3, 10);
    expect(floorOf(rows.slice(1), 'single')).toBeUndefined();
  });

  it('reads each kind from its interleaved row where measured, else its closed-loop row', () => {
    const { floors, costs } = paymentCosts(rows, ['single', 'split']);
    expect(floors.map((f) => f.shape)).toEqual(['single', 'split']);
    const summary = costs.map((c) => [c.shape, c.kind, c.row, c.ms.total, c.ofFloor, c.target]);
    // single: 3i is 8 / 6 / 2 ms = 16 against 12; split: 3 is 15 / 10 / 5 = 30 against 18. An
    // escrow row's completion is a hold and its release, two payments: half its CPU each.
    expect(summary).toEqual([
      ['single', 'transfer', '3i', 16, 16 / 12, 1.25],
      ['single', 'escrow', '4', 15, 15 / 12, 1.25],
      ['single', 'card deposit', '5', 30, 30 / 12, 2],
      ['single', 'card refund', '5r', 50, 50 / 12, 2],
      ['split', 'transfer', '3', 30, expect.closeTo(30 / 18, 10), 1.25],
      ['split', 'escrow', '4i', 25, expect.closeTo(25 / 18, 10), 1.25],
    ]);
    expect(costs[0]!.ms).toEqual({ server: 8, node: 6, postgres: 2, total: 16 });
  });

  it('keeps the costs without a multiple when the floor was not measured', () => {
    const { floors, costs } = paymentCosts(
      rows.filter((r) => r.id !== '1a'),
      ['single'],
    );
    expect(floors).toEqual([]);
    expect(costs).toHaveLength(4);
    expect(costs.every((c) => c.ofFloor === undefined)).toBe(true);
  });

  it('prints the floor and each cost beside its target, and writes both in the JSON', () => {
    const report: Report = {
      environment: { cpus: 2, cpuModel: 'test', node: 'v0', tuning: {} },
      configurations: [
        {
          name: 'file',
          postgres: 'fsync on',
          temporal: 'on a file (WAL)',
          shapes: ['single'],
          rows,
          invariant: [],
          ...paymentCosts(rows, ['single']),
        },
      ],
      seconds: 1,
    };
    const lines = render(report).split('\n');
    const line = (start: RegExp) => lines.find((l) => start.test(l))?.split(/\s{2,}/);
    expect(line(/^single\s+floor/)).toEqual([
      'single',
      'floor',
      '2d+1a',
      '5.00',
      '4.00',
      '3.00',
      '12.00',
      '1.00',
    ]);
    expect(line(/^single\s+transfer/)).toEqual([
      'single',
      'transfer',
      '3i',
      '8.00',
      '6.00',
      '2.00',
      '16.00',
      '1.33',
      '<= 1.25',
    ]);
    expect(line(/^single\s+card refund/)?.slice(-2)).toEqual(['4.17', '<= 2.00']);
    const json = JSON.parse(JSON.stringify(report)) as Report;
    expect(json.configurations[0]!.floors![0]!.ms.total).toBe(12);
    expect(json.configurations[0]!.costs!.map((c) => c.kind)).toEqual([
      'transfer',
      'escrow',
      'card deposit',
      'card refund',
    ]);
  });
});

describe("a payment's history counted (tools/bench/history-counts.ts)", () => {
  const recorded = (name: string) =>
    historyCounts(
      historyFromJSON(
        JSON.parse(
          readFileSync(path.join(__dirname, '../fixtures/histories', `${name}.json`), 'utf8'),
        ),
      ).events ?? [],
    );

  it('counts the tasks, the local activities and the upserts of a transfer as it runs now', () => {
    const counts = recorded('transfer-completed');
    expect(counts).toMatchObject({
      events: 7,
      workflowTasks: 1,
      activityTasks: 0,
      localActivities: 1,
      patches: 0,
      upserts: 1,
      upserted: ['PaymentStatus'],
      updates: 0,
    });
    // The input, the four search attributes, the step's marker, the upsert and the result.
    expect(counts.payloadBytes).toBe(296 + 55 + 100 + 27 + 26 + 66 + 219 + 28 + 87);
    expect(counts.historyBytes).toBeGreaterThan(counts.payloadBytes);
  });

  it('tells an activity task and a patch from a local activity', () => {
    expect(recorded('transfer-completed-remote-activity')).toMatchObject({
      events: 12,
      workflowTasks: 2,
      activityTasks: 1,
      localActivities: 0,
      upserts: 1,
    });
    expect(recorded('escrow-release-to-another-wallet')).toMatchObject({
      events: 19,
      workflowTasks: 2,
      activityTasks: 0,
      localActivities: 2,
      patches: 1,
      upserted: ['PaymentStatus', 'TemporalChangeVersion', 'WalletId', 'PaymentStatus'],
      updates: 2,
    });
  });
});
