import type { LoadResult } from '../../tools/bench/load';
import { addRatios, type Row } from '../../tools/bench/scenarios';

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

const row = (id: string, throughput: number, shape?: Row['shape']): Row => ({
  id,
  scenario: id,
  load: '-',
  result: rated(throughput),
  ...(shape ? { shape } : {}),
});

describe("the API rows held against their own shape's bare workflow (tools/bench/scenarios.ts)", () => {
  it('compares the single shape with the eager start (2d), the split one with a client start (2b)', () => {
    const rows = [
      row('2', 40),
      row('2b', 50, 'split'),
      row('2d', 100, 'single'),
      row('3', 90, 'single'),
      row('4', 40, 'single'),
      row('3h', 45, 'single'),
      row('3', 45, 'split'),
      row('5', 25, 'split'),
      row('3h', 9, 'split'),
    ];
    addRatios(rows);
    const ratios = rows.map((r) => [r.id, r.shape, r.ofEmptyWorkflow, r.ofSpreadOut]);
    expect(ratios).toEqual([
      ['2', undefined, undefined, undefined],
      ['2b', 'split', undefined, undefined],
      ['2d', 'single', undefined, undefined],
      ['3', 'single', 0.9, undefined],
      ['4', 'single', 0.4, undefined],
      ['3h', 'single', 0.45, 0.5],
      ['3', 'split', 0.9, undefined],
      ['5', 'split', 0.5, undefined],
      ['3h', 'split', 0.18, 0.2],
    ]);
  });

  it("leaves a shape's rows without a ratio when its bare row was not measured", () => {
    const rows = [row('2d', 100, 'single'), row('3', 45, 'split'), row('3h', 9, 'split')];
    addRatios(rows);
    expect(rows.map((r) => r.ofEmptyWorkflow)).toEqual([undefined, undefined, undefined]);
    expect(rows[2]!.ofSpreadOut).toBe(0.2);
  });
});
