/**
 * What a payment costs against its floor, in CPU of the server, the engine and Postgres per
 * payment from the rows' recorded cores (docs/benchmarks.md "Cost per payment").
 */
import type { Shape } from './engine';
import { BARE_WORKFLOW, type Row } from './scenarios';

/** CPU milliseconds per payment by group: `server` is the Temporal server. */
export type CostMs = { server: number; node: number; postgres: number; total: number };

export type Floor = {
  shape: Shape;
  /** The rows it adds up: the shape's bare workflow, then the ledger statement. */
  rows: [string, string];
  ms: CostMs;
};

export type PaymentKind = 'transfer' | 'escrow' | 'card deposit' | 'card refund';

export type PaymentCost = {
  shape: Shape;
  kind: PaymentKind;
  /** The row it was read from. */
  row: string;
  ms: CostMs;
  /** The cost over the shape's floor; absent without a floor. */
  ofFloor?: number;
  /** The highest multiple of the floor the kind is meant to cost. */
  target: number;
};

/**
 * Each kind's rows, the first measured taken: the interleaved row (drift bends it as the bare
 * workflow's), else the closed-loop one. An escrow row's completion is two payments (`payments`).
 */
export const PAYMENT_KINDS: readonly {
  kind: PaymentKind;
  rows: string[];
  target: number;
  payments?: number;
}[] = [
  { kind: 'transfer', rows: ['3i', '3'], target: 1.25 },
  { kind: 'escrow', rows: ['4i', '4'], target: 1.25, payments: 2 },
  { kind: 'card deposit', rows: ['5'], target: 2 },
  { kind: 'card refund', rows: ['5r'], target: 2 },
];

/** The ledger statement every payment's floor holds one of. */
export const LEDGER_ROW = '1a';

/** A row's CPU per payment (`payments` in each completion), or undefined when it measured none. */
export function msPer(row: Row | undefined, payments = 1): CostMs | undefined {
  const rate = row?.result?.throughput;
  if (!row?.cpu || !rate || !Number.isFinite(rate)) return undefined;
  const per = (cores: number) => (cores * 1000) / (rate * payments);
  const ms = {
    server: per(row.cpu.temporal),
    node: per(row.cpu.node),
    postgres: per(row.cpu.postgres),
  };
  return { ...ms, total: ms.server + ms.node + ms.postgres };
}

const sum = (a: CostMs, b: CostMs): CostMs => ({
  server: a.server + b.server,
  node: a.node + b.node,
  postgres: a.postgres + b.postgres,
  total: a.total + b.total,
});

/** The floor of `shape` in one configuration's rows, or undefined when a part was not measured. */
export function floorOf(rows: readonly Row[], shape: Shape): Floor | undefined {
  const bareId = BARE_WORKFLOW[shape];
  const bare = msPer(rows.find((r) => r.id === bareId));
  const ledger = msPer(rows.find((r) => r.id === LEDGER_ROW));
  if (!bare || !ledger) return undefined;
  return { shape, rows: [bareId, LEDGER_ROW], ms: sum(bare, ledger) };
}

/** Each payment kind's cost in each shape, in the order of `shapes` then PAYMENT_KINDS. */
export function paymentCosts(
  rows: readonly Row[],
  shapes: readonly Shape[],
): { floors: Floor[]; costs: PaymentCost[] } {
  const floors: Floor[] = [];
  const costs: PaymentCost[] = [];
  for (const shape of shapes) {
    const floor = floorOf(rows, shape);
    if (floor) floors.push(floor);
    for (const { kind, rows: ids, target, payments } of PAYMENT_KINDS) {
      for (const id of ids) {
        const row = rows.find((r) => r.id === id && r.shape === shape);
        const ms = msPer(row, payments);
        if (!ms) continue;
        costs.push({
          shape,
          kind,
          row: id,
          ms,
          ...(floor && floor.ms.total > 0 ? { ofFloor: ms.total / floor.ms.total } : {}),
          target,
        });
        break;
      }
    }
  }
  return { floors, costs };
}
