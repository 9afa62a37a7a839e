import { existsSync, readdirSync } from 'node:fs';
import { commandLine } from '../../tools/harness/processes';
import { printReport } from '../../tools/chaos/report';
import { FAULTS, runChaos, type ChaosReport } from '../../tools/chaos/run';
import { OPERATIONS } from '../../tools/chaos/workload';

/**
 * The bank test, bounded to what `npm test` can afford: `npm start` on its own ports and
 * data folder, every kind of payment while each process is SIGKILLed at least once, then the checks
 * of tools/chaos/checks.ts. The long run: docs/testing.md "Chaos test".
 */
jest.setTimeout(360_000);

let report: ChaosReport;
const lines: string[] = [];

beforeAll(async () => {
  report = await runChaos({
    durationMs: 70_000,
    clients: 6,
    wallets: 8,
    seed: 12,
    faults: FAULTS,
    log: (line) => lines.push(line),
  });
  printReport(report, (line) => lines.push(line));
});

/** The run's output, shown when an assertion fails. */
const explain = () => `\n${lines.join('\n')}`;

describe('the bank test under kill -9', () => {
  it('finds no violation: books, exactly once, nothing moved for a 4xx, conservation, API = database', () => {
    expect({
      violations: report.violations,
      log: report.violations.length ? explain() : '',
    }).toEqual({
      violations: [],
      log: '',
    });
  });

  it('killed each component at least once, and each came back', () => {
    for (const kind of FAULTS) {
      const kills = report.faults.filter((fault) => fault.kind === kind);
      expect({ kind, killed: kills.length > 0 }).toEqual({ kind, killed: true });
      for (const kill of kills) {
        expect({ kind, recovered: kill.recoveryMs !== null && kill.recoveryMs > 0 }).toEqual({
          kind,
          recovered: true,
        });
      }
    }
  });

  it('moved money by every kind of payment, every request to a definitive answer', () => {
    for (const op of OPERATIONS) {
      expect({ op, acknowledged: report.history.tally[op].ok > 0 }).toEqual({
        op,
        acknowledged: true,
      });
    }
    const indefinite = Object.values(report.history.tally).reduce((n, t) => n + t.indefinite, 0);
    expect(indefinite).toBe(0);
    // The faults were felt: some requests failed and were retried with their key.
    expect(report.retries).toBeGreaterThan(0);
    // Refusals happened too (an amount beyond any balance), and moved nothing (checked above).
    expect([...report.history.refusals.keys()].some((k) => k.startsWith('transfer 400'))).toBe(
      true,
    );
    // And the provider refused cashouts (the sandbox's 4040): reserved, then given back in full,
    // the only 400 whose payment has ledger transactions (two that cancel out).
    expect(
      [...report.history.refusals.keys()].some((k) =>
        k.startsWith('cashout 400 "Provider refused the cashout"'),
      ),
    ).toBe(true);
    expect(report.notes.some((n) => /refused by the provider .*given back in full/.test(n))).toBe(
      true,
    );
    // Card refunds beyond what is left were refused; disputes were both won and lost.
    expect(
      [...report.history.refusals.keys()].some((k) =>
        k.startsWith('card_refund 400 "Refund amount exceeds the refundable amount"'),
      ),
    ).toBe(true);
    const outcomes = new Set([...report.history.disputes.values()].map((d) => d.outcome));
    expect([outcomes.has('won'), outcomes.has('lost')]).toEqual([true, true]);
  });

  it('ran provider reconciliations through the faults and resolved each kind of exception', () => {
    // Their checks (tools/chaos/reconciliation.ts) are among the violations above.
    const note = report.notes.find((n) => n.startsWith('reconciliation: ')) ?? '';
    expect(note).toMatch(
      /^reconciliation: [1-9]\d* runs \([1-9]\d* acknowledged\), 5 exceptions, 3 adjusted and 2 accepted/,
    );
  });

  it('left no process running and removed its folder', () => {
    const ours = readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => commandLine(Number(pid)).includes(report.dir));
    expect(ours).toEqual([]);
    expect(existsSync(report.dir)).toBe(false);
  });
});
