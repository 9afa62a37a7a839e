import { existsSync, readdirSync } from 'node:fs';
import { commandLine, isAlive } from '../../tools/harness/processes';
import { printReport } from '../../tools/chaos/report';
import { runChaos, SPLIT_FAULTS, type ChaosReport } from '../../tools/chaos/run';

/**
 * The bank test in the split shape, bounded (docs/testing.md "The split shape"): two APIs behind
 * nginx and two workers, one API rolled, then each kind of process SIGKILLed at least once, then
 * tools/chaos/checks.ts. Shorter than chaos-bank.test.ts, which covers every payment kind.
 */
jest.setTimeout(360_000);

let report: ChaosReport;
const lines: string[] = [];

beforeAll(async () => {
  report = await runChaos({
    shape: 'split',
    durationMs: 60_000,
    clients: 6,
    wallets: 8,
    seed: 21,
    faults: SPLIT_FAULTS,
    // One rolling restart, of an API, a second into the load (no second one within the run).
    rollEveryMs: 600_000,
    log: (line) => lines.push(line),
  });
  printReport(report, (line) => lines.push(line));
});

/** The run's output, shown when an assertion fails. */
const explain = () => `\n${lines.join('\n')}`;

describe('the bank test under kill -9, API and worker apart', () => {
  it('finds no violation: no money lost or duplicated, the ledger invariant, API = database', () => {
    expect({
      violations: report.violations,
      log: report.violations.length ? explain() : '',
    }).toEqual({ violations: [], log: '' });
  });

  it('killed an API, a worker, Postgres and the dev server, and each came back', () => {
    for (const kind of SPLIT_FAULTS) {
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

  it('rolled an API without a failed request: the new one up, the old one exited 0 on SIGTERM', () => {
    expect(report.rolls.map(({ kind, up, exitCode }) => ({ kind, up, exitCode }))).toEqual([
      { kind: 'api', up: true, exitCode: 0 },
    ]);
    // Kills drop requests by design; the roll comes before the first of them.
    const firstKill = Math.min(...report.faults.map((fault) => fault.atMs));
    expect(report.rolls[0]!.atMs + report.rolls[0]!.tookMs).toBeLessThanOrEqual(firstKill);
    expect(report.failedAtMs.filter((at) => at < firstKill)).toEqual([]);
  });

  it('sent requests through both APIs, each to a definitive answer, and some were retried', () => {
    expect(report.requestsByApi).toHaveLength(2);
    for (const requests of report.requestsByApi) expect(requests).toBeGreaterThan(0);
    const tally = Object.values(report.history.tally);
    expect(tally.reduce((n, t) => n + t.ok, 0)).toBeGreaterThan(0);
    expect(tally.reduce((n, t) => n + t.indefinite, 0)).toBe(0);
    expect(report.retries).toBeGreaterThan(0);
  });

  it('left no process running and removed its folder', () => {
    const engine = report.processes.filter(
      (pid) => isAlive(pid) && /(api|worker)\/main\.ts|chaos\/servers\.ts/.test(commandLine(pid)),
    );
    expect(engine).toEqual([]);
    const servers = readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => commandLine(Number(pid)).includes(report.dir));
    expect(servers).toEqual([]);
    expect(existsSync(report.dir)).toBe(false);
  });
});
