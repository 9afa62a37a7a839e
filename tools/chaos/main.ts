import { parseArgs } from 'node:util';
import { balancerMissing } from './balancer';
import { printReport } from './report';
import { faultsOf, runChaos, SHAPES, type Fault, type Shape } from './run';

/**
 * `npm run chaos`: the bank test (see docs/testing.md, "Chaos test"). Exit status 0 when every check
 * held, 1 on a violation, 2 on bad arguments.
 */
const USAGE = `usage: npm run chaos -- [--shape single|split] [--duration SECONDS] [--clients N] [--wallets N] [--seed N] [--faults temporal,postgres,node|none (split: temporal,postgres,api,worker)] [--roll-every SECONDS (split; default 20, 0: no rolling restarts)]`;

const write = (line: string) => process.stdout.write(`${line}\n`);

function options() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '600' },
      clients: { type: 'string', default: '12' },
      wallets: { type: 'string', default: '16' },
      seed: { type: 'string' },
      shape: { type: 'string', default: 'single' },
      faults: { type: 'string' },
      'roll-every': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    write(USAGE);
    process.exit(0);
  }
  const whole = (name: string, text: string, min: number) => {
    if (!/^\d+$/.test(text) || Number(text) < min) {
      process.stderr.write(`--${name} must be a whole number of at least ${min}\n${USAGE}\n`);
      process.exit(2);
    }
    return Number(text);
  };
  if (!(SHAPES as readonly string[]).includes(values.shape)) {
    process.stderr.write(`unknown shape ${values.shape}\n${USAGE}\n`);
    process.exit(2);
  }
  const shape = values.shape as Shape;
  const named = values.faults ?? faultsOf(shape).join(',');
  const faults = named === 'none' ? [] : named.split(',').map((f) => f.trim());
  const unknown = faults.filter((f) => !(faultsOf(shape) as readonly string[]).includes(f));
  if (unknown.length) {
    process.stderr.write(`unknown fault ${unknown.join(', ')} (${shape} shape)\n${USAGE}\n`);
    process.exit(2);
  }
  const rollEvery = values['roll-every'];
  if (rollEvery !== undefined && shape !== 'split' && rollEvery !== '0') {
    process.stderr.write(`--roll-every needs --shape split\n${USAGE}\n`);
    process.exit(2);
  }
  return {
    shape,
    rollEveryMs: shape === 'split' ? whole('roll-every', rollEvery ?? '20', 0) * 1_000 : 0,
    durationMs: whole('duration', values.duration, 1) * 1_000,
    clients: whole('clients', values.clients, 1),
    wallets: whole('wallets', values.wallets, 2),
    seed:
      values.seed === undefined
        ? Math.floor(Math.random() * 1_000_000)
        : whole('seed', values.seed, 0),
    faults: faults as Fault[],
  };
}

async function main(): Promise<void> {
  const chosen = options();
  const missing = chosen.shape === 'split' ? balancerMissing() : null;
  if (missing) {
    process.stderr.write(`${missing}\n`);
    process.exit(1);
  }
  write(
    `bank test (${chosen.shape} shape): ${chosen.durationMs / 1_000} s, ${chosen.clients} clients, ${chosen.wallets} wallets, seed ${chosen.seed}, faults ${chosen.faults.join(',') || 'none'}${chosen.rollEveryMs ? `, a rolling restart every ${chosen.rollEveryMs / 1_000} s` : ''}`,
  );
  const report = await runChaos({ ...chosen, log: write });
  printReport(report, write);
  process.exit(report.violations.length ? 1 : 0);
}

void main();
