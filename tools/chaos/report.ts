import type { ChaosReport } from './run';

/** The run's operations, faults with their recovery times, notes and violations. */
export function printReport(report: ChaosReport, write: (line: string) => void): void {
  write('');
  write(
    `seed ${report.seed} (${report.shape} shape): ${report.requests} requests` +
      `${report.requestsByApi.length > 1 ? ` (${report.requestsByApi.join(' + ')} by API)` : ''}, ${report.retries} retries`,
  );
  write('operations (ok / refused 4xx / no definitive answer):');
  for (const [op, t] of Object.entries(report.history.tally)) {
    write(
      `  ${op.padEnd(16)} ${String(t.ok).padStart(6)} ${String(t.refused).padStart(6)} ${String(t.indefinite).padStart(6)}`,
    );
  }
  if (report.history.refusals.size) {
    write('refusals:');
    for (const [what, n] of [...report.history.refusals].sort((a, b) => b[1] - a[1]))
      write(`  ${n} × ${what}`);
  }
  write('faults:');
  for (const f of report.faults) {
    write(
      `  at ${(f.atMs / 1_000).toFixed(1)} s kill -9 ${f.kind} (pid ${f.pid}): ${f.recoveryMs === null ? 'NOT recovered' : `recovered in ${(f.recoveryMs / 1_000).toFixed(1)} s`}`,
    );
  }
  if (report.rolls.length) {
    write(`rolling restarts: ${report.rolls.length}`);
    for (const r of report.rolls) {
      write(
        `  at ${(r.atMs / 1_000).toFixed(1)} s ${r.kind} ${r.pid} -> ${r.newPid}: ${r.up ? `old exited ${r.exitCode} ${((r.stopMs ?? 0) / 1_000).toFixed(1)} s after SIGTERM, ${(r.tookMs / 1_000).toFixed(1)} s in all` : 'replacement NOT up'}`,
      );
    }
  }
  const failed = Object.values(report.failures).reduce((n, count) => n + count, 0);
  write(
    `failed attempts: ${failed}${
      failed
        ? ` (${Object.entries(report.failures)
            .map(([what, n]) => `${n} × ${what}`)
            .join(', ')})`
        : ''
    }`,
  );
  const retried = Object.entries(report.retriedFor);
  if (retried.length)
    write(`retried answers: ${retried.map(([why, n]) => `${n} × ${why}`).join(', ')}`);
  write(
    `longest pause without a definitive answer: ${(report.longestPauseMs / 1_000).toFixed(2)} s, ended ${(report.longestPauseEndedAtMs / 1_000).toFixed(1)} s into the load`,
  );
  for (const note of report.notes) write(`note: ${note}`);
  if (report.violations.length) {
    write(`${report.violations.length} VIOLATIONS:`);
    for (const v of report.violations) write(`  ${v}`);
  } else {
    write(
      'no violations: the books balance, every acknowledged payment applied once, nothing else moved',
    );
  }
}
