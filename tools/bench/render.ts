/**
 * The benchmark's report and its text: one table, a section a dev server configuration, then the
 * legend and the ledger invariant of each configuration's database.
 */
import type { WorkerOptions } from '@temporalio/worker';
import { fmtMs, fmtRate } from './format';
import type { Shape } from './engine';
import type { Floor, PaymentCost } from './cost';
import type { ProfileReport } from './profile';
import { BARE_WORKFLOW, type Row } from './scenarios';

export type ConfigurationReport = {
  /** `file`: what `npm start` ships; `memory`: the in-memory dev server. */
  name: 'file' | 'memory';
  postgres: string;
  temporal: string;
  /** The engine's shapes measured on its servers, in this order. */
  shapes: Shape[];
  rows: Row[];
  /** The ledger invariant's problems in this configuration's database (none: OK). */
  invariant: string[];
  /** Each shape's floor and each payment kind's cost against it (cost.ts paymentCosts). */
  floors?: Floor[];
  costs?: PaymentCost[];
};

export type Report = {
  environment: {
    cpus: number;
    cpuModel: string;
    node: string;
    tuning: Partial<WorkerOptions>;
  };
  configurations: ConfigurationReport[];
  profile?: ProfileReport;
  seconds: number;
};

const percent = (ratio: number | undefined) =>
  ratio === undefined ? '' : `${(ratio * 100).toFixed(0)}%`;

/** Aligned columns; a shorter row's last cell (a note) runs on without widening its column. */
function table(header: string[], rows: string[][], rightAligned: Set<number>): string {
  const sized = (r: string[], i: number) => r.length === header.length || i < r.length - 1;
  const widths = header.map((_, i) =>
    Math.max(...[header, ...rows].map((r) => (sized(r, i) ? r[i]!.length : 0))),
  );
  const line = (cells: string[]) =>
    cells
      .map((c, i) => {
        if (i === cells.length - 1 && cells.length < header.length) return c;
        return rightAligned.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!);
      })
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

function cells(r: Row): string[] {
  if (!r.result) return [r.id, r.shape ?? '', r.scenario, r.note ?? ''];
  const c = r.cpu;
  return [
    r.id,
    r.shape ?? '',
    r.scenario,
    r.load,
    fmtRate(r.result.throughput),
    fmtMs(r.result.p50),
    fmtMs(r.result.p99),
    `${r.result.errors}/${r.result.sent}`,
    r.ofEmptyWorkflowRange
      ? `${percent(r.ofEmptyWorkflow)} (${r.ofEmptyWorkflowRange.map((x) => (x * 100).toFixed(0)).join('-')})`
      : percent(r.ofEmptyWorkflow),
    percent(r.ofSpreadOut),
    c ? [c.node, c.load, c.postgres, c.temporal, c.other].map((n) => n.toFixed(2)).join('/') : '',
  ];
}

export const sectionTitle = (c: ConfigurationReport) =>
  `${c.name === 'file' ? '[file] ' : '[memory] '}Temporal dev server ${c.temporal}; Postgres ${c.postgres}`;

const LEGEND = [
  'Each [section] is one pair of servers started afresh, measured in the same run: [file] is the',
  'configuration `npm start` ships (Postgres with fsync on, the dev server on a file, WAL);',
  '[memory] the in-memory dev server with Postgres fsync off. Shape: single, the API and the',
  'worker in one process as `npm start` runs them; split, `npm run api` and `npm run worker` as',
  'processes of their own; the shapes run one after the other on the same servers. vs bare:',
  "throughput / the bare workflow rate of the row's shape in its section, started as that shape's",
  'API starts a payment (single: 2d, eager start in-process; split: 2b, a client start to a worker',
  'in another process). vs (3): the hot wallet 3h / row 3 of its section and shape.',
  '(1) one DB transaction per transfer, no Temporal, no HTTP. (2) client.workflow.execute per',
  "workflow, no DB; 2d the same with requestEagerStart (its client shares the worker's",
  'connection). (3)/(4)/(5) real HTTP through the API and the worker; open rows fire at a fixed',
  'arrival rate, latency from the scheduled send time. (3h) 32 clients, every transfer out of',
  'one wallet to one of the 63 others at random; 3hc at half its closed-loop rate.',
  '(2i)/(3i)/(4i) the rows 2b, 3 and 4 at saturation again, in bursts taking turns (drift falls',
  "on all three alike), in each shape (2i as that shape's bare row); 3i and 4i are shown against",
  "2i, in brackets the range of the rounds' ratios.",
  '(6) events delivered per second to a loopback endpoint (in the engine process); latency from',
  'the event written with the money movement to its arrival at the endpoint.',
  '(7) the dashboard analytics, 1 client in a loop, after a million payments (with their ledger',
  'transactions) were seeded in SQL into the application over 90 days; 7a through HTTP, 7b the query.',
  'The load comes from a process of its own (the load generator), but for rows 1, 2d and 7b:',
  "they run in the engine's process (2d's client must share the worker's connection).",
  "Cores: CPU cores busy on average: node, the engine's processes (the benchmark's, with the API",
  'and worker in the single shape; the split API and worker; and the load of 1, 2d, 7b); load, the',
  "load generator's process; Postgres; the Temporal server; other, every other process on the",
  'machine.',
  "Cost per payment: a row's cores of the server, node and Postgres over its rate, in CPU ms; the",
  "floor is its shape's bare workflow (2d or 2b) plus one ledger statement (1a); transfers and",
  'escrow payments (an escrow flow is two: its hold and its release) read from 3i and 4i (3 and 4',
  'without them),',
  'card deposits and refunds from 5 and 5r.',
];

const ms = (r: Row | undefined) => (r?.result ? `${fmtMs(r.result.p99)} ms` : 'n/a');
const share = (r: Row | undefined) => percent(r?.ofEmptyWorkflow) || 'n/a';

/**
 * The targets, per shape: transfers at least 90 % and escrow flows at least 50 % of the
 * shape's bare workflow rate (closed loop, and interleaved), p99 at half load under 100 ms
 * (transfers, 3c) and 200 ms (escrow, 4c).
 */
function targets(c: ConfigurationReport): string[] {
  return c.shapes.map((shape) => {
    const row = (id: string) => c.rows.find((r) => r.id === id && r.shape === shape);
    return (
      `Targets [${c.name}, ${shape}] vs ${BARE_WORKFLOW[shape]}: transfers ${share(row('3'))}` +
      ` (3i ${share(row('3i'))}; >= 90%), escrow ${share(row('4'))} (4i ${share(row('4i'))};` +
      ` >= 50%); p99 at 50%: transfers ${ms(row('3c'))} (< 100), escrow ${ms(row('4c'))} (< 200)`
    );
  });
}

const msCells = (ms: Floor['ms']) =>
  [ms.server, ms.node, ms.postgres, ms.total].map((n) => n.toFixed(2));

/** Each payment kind's CPU per payment beside its shape's floor, per configuration. */
function costs(c: ConfigurationReport): string[] {
  if (!c.costs?.length && !c.floors?.length) return [];
  const rows = c.shapes.flatMap((shape) => {
    const floor = c.floors?.find((f) => f.shape === shape);
    const own = (c.costs ?? []).filter((k) => k.shape === shape);
    return [
      floor
        ? [shape, 'floor', floor.rows.join('+'), ...msCells(floor.ms), '1.00', '']
        : [shape, 'floor', `n/a (needs ${BARE_WORKFLOW[shape]} and 1a)`],
      ...own.map((k) => [
        shape,
        k.kind,
        k.row,
        ...msCells(k.ms),
        k.ofFloor === undefined ? 'n/a' : k.ofFloor.toFixed(2),
        `<= ${k.target.toFixed(2)}`,
      ]),
    ];
  });
  const header = [
    'Shape',
    'Payment',
    'Row',
    'Server',
    'Node',
    'Postgres',
    'Total',
    'x floor',
    'Target',
  ];
  return [
    `Cost per payment [${c.name}], CPU ms per payment (server, node, Postgres) and its multiple of the floor:`,
    table(header, rows, new Set([3, 4, 5, 6, 7])),
    '',
  ];
}

export function render(report: Report): string {
  const header = [
    '#',
    'Shape',
    'Scenario',
    'Load',
    'Throughput',
    'p50 ms',
    'p99 ms',
    'Errors',
    'vs bare',
    'vs (3)',
    'Cores node/load/pg/tmprl/other',
  ];
  const rows = report.configurations.flatMap((c) => [[sectionTitle(c)], ...c.rows.map(cells)]);
  const e = report.environment;
  const measured = report.configurations.flatMap((c) => c.rows).filter((r) => r.cpu);
  const others = measured.reduce((a, r) => a + r.cpu!.other, 0) / Math.max(1, measured.length);
  return [
    `Wallet engine benchmark: ${e.cpus} CPUs (${e.cpuModel}), Node ${e.node}`,
    `Worker tuning: ${JSON.stringify(e.tuning)}`,
    '',
    table(header, rows, new Set([4, 5, 6, 7, 8, 9, 10])),
    '',
    ...report.configurations.flatMap(targets),
    '',
    ...report.configurations.flatMap(costs),
    ...LEGEND,
    ...(others > 0.2
      ? [
          `WARNING: other processes kept ${others.toFixed(2)} cores busy on average: ` +
            'the machine was not idle, figures are low.',
        ]
      : []),
    '',
    ...report.configurations.map(
      (c) =>
        `Ledger invariant [${c.name}], after rows 1 to 6: ` +
        (c.invariant.length === 0 ? 'OK' : `FAIL (${c.invariant.join('; ')})`),
    ),
    `Total time: ${report.seconds.toFixed(0)}s`,
  ].join('\n');
}
