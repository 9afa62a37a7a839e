import { coresOver } from '../../tools/bench/cpu';
import { combineResults, type LoadResult } from '../../tools/bench/load';
import { interleavedSchedule } from '../../tools/bench/scenarios';

const burst = (ok: number, throughput: number, extra: Partial<LoadResult> = {}): LoadResult => ({
  sent: ok,
  ok,
  errors: 0,
  errorKinds: {},
  throughput,
  p50: 10,
  p99: 20,
  max: 30,
  elapsed: throughput > 0 ? ok / throughput : 6,
  ...extra,
});

describe("the interleaved rows' bursts as one row (tools/bench/load.ts, tools/bench/cpu.ts)", () => {
  it('rates the completions over the sum of the measured windows, not the mean of the rates', () => {
    // 60 in a 6 s window, 30 in a 10 s window: 90 in 16 s (the mean of the rates would be 6.5).
    const row = combineResults([burst(60, 10), burst(30, 3)]);
    expect(row.ok).toBe(90);
    expect(row.sent).toBe(90);
    expect(row.throughput).toBeCloseTo(90 / 16, 10);
    expect(row.elapsed).toBeCloseTo(16, 10);
    // Percentiles of separate runs do not combine.
    expect(Number.isNaN(row.p50)).toBe(true);
    expect(Number.isNaN(row.p99)).toBe(true);
  });

  it('counts the window of a burst that completed nothing, and adds up the errors by kind', () => {
    const row = combineResults([
      burst(48, 8, { sent: 50, errors: 2, errorKinds: { 'HTTP 503': 2 } }),
      burst(0, 0, { sent: 3, errors: 3, errorKinds: { 'HTTP 503': 1, timeout: 2 }, elapsed: 6 }),
    ]);
    expect(row.throughput).toBeCloseTo(48 / 12, 10);
    expect(row.sent).toBe(53);
    expect(row.errors).toBe(5);
    expect(row.errorKinds).toEqual({ 'HTTP 503': 3, timeout: 2 });
    expect(combineResults([]).throughput).toBe(0);
  });

  it("averages each group's cores over the windows' total length", () => {
    const cpu = (node: number, temporal: number) => ({
      node,
      load: 0.1,
      postgres: 0.5,
      temporal,
      other: 0,
    });
    // 6 s with 4.8 CPU s in node, then 2 s with 0.4: 5.2 CPU s in 8 s.
    const cores = coresOver([
      { cpu: cpu(4.8, 6), seconds: 6 },
      { cpu: cpu(0.4, 2), seconds: 2 },
    ]);
    expect(cores.node).toBeCloseTo(5.2 / 8, 10);
    expect(cores.temporal).toBeCloseTo(1, 10);
    expect(cores.load).toBeCloseTo(0.2 / 8, 10);
    expect(cores.postgres).toBeCloseTo(1 / 8, 10);
    expect(cores.other).toBe(0);
  });
});

describe('the order of the interleaved bursts (tools/bench/scenarios.ts interleavedSchedule)', () => {
  const schedule = interleavedSchedule(3, 6);
  const measured = schedule.filter((burst) => burst.round !== null);

  it('starts with one burst not measured, of the kind that ends the last round', () => {
    expect(schedule[0]).toEqual({ kind: measured[measured.length - 1]!.kind, round: null });
    expect(schedule.filter((burst) => burst.round === null)).toHaveLength(1);
    expect(measured).toHaveLength(18);
  });

  it('puts each kind in each place of a round twice, and after the others alike', () => {
    for (let place = 0; place < 3; place++) {
      const kinds = measured.filter((_, i) => i % 3 === place).map((burst) => burst.kind);
      expect([...kinds].sort()).toEqual([0, 0, 1, 1, 2, 2]);
    }
    const after = new Map<string, number>();
    for (let i = 1; i < schedule.length; i++) {
      const pair = `${schedule[i - 1]!.kind}>${schedule[i]!.kind}`;
      after.set(pair, (after.get(pair) ?? 0) + 1);
    }
    // Within a round 0>1, 1>2 or 2>0; from one round to the next (and from the lead-in), the
    // other way: every kind follows one of the others four times and the other twice.
    expect(Object.fromEntries(after)).toEqual({
      '0>1': 4,
      '1>2': 4,
      '2>0': 4,
      '1>0': 2,
      '2>1': 2,
      '0>2': 2,
    });
  });
});
