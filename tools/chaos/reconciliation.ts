import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../../src/db/pool';
import { majorNumberToMinor } from '../../src/domain/money';
import type { ChaosClient, Outcome } from './http';
import { Wire } from './wire';
import { newHistory, PATHS, recordDeposit, setUpWallets, simulate, type History } from './workload';

/**
 * Provider reconciliation under the faults (docs/testing.md "Chaos test"): a file with one
 * disagreement of each kind, imported and run again and again while the faults go on.
 */

const KINDS = [
  'missing_internal',
  'missing_external',
  'amount_mismatch',
  'status_mismatch',
  'duplicate',
] as const;
type Kind = (typeof KINDS)[number];

/** What each run of the file must count (two payments agree, one disagreement of each kind). */
const EXPECTED = {
  matched: 2,
  missing_internal: 1,
  missing_external: 1,
  amount_mismatch: 1,
  status_mismatch: 1,
  duplicate: 1,
};
/** How each kind is resolved: an adjustment moves money, an acceptance nothing. */
const RESOLUTION: Record<Kind, 'accept' | 'adjust'> = {
  missing_internal: 'accept',
  duplicate: 'accept',
  missing_external: 'adjust',
  amount_mismatch: 'adjust',
  status_mismatch: 'adjust',
};
/** How long a run may take to end once started, and the pause between two runs. */
const RUN_LIMIT_MS = 90_000;
const RUN_GAP_MS = 2_000;

const RUN = z.object({
  id: z.string(),
  status: z.string(),
  counts: z.record(z.string(), z.number()),
});
const EXCEPTIONS = z.object({
  data: z.array(z.object({ id: z.string(), kind: z.string(), status: z.string() })),
});

export type ReconLane = {
  applicationId: string;
  /** The window's bounds and the settlement file's text. */
  from: string;
  to: string;
  csv: string;
  /** Runs whose start was acknowledged, with the status last read. */
  runs: Map<string, string>;
  importId: string | null;
  /** Exceptions whose resolution was acknowledged (200), with it. */
  resolved: Map<string, 'accept' | 'adjust'>;
  /** Requests of the lane that never had a definitive answer, and 4xx answers by detail. */
  indefinite: number;
  refusals: Map<string, number>;
  /** The application's deposits (set-up). */
  history: History;
  /** Each wallet's balance once set up (minor units): only adjustments move it after. */
  balances: Map<string, bigint>;
};

/**
 * The lane's application's set-up, before the load: two funded wallets, two deposits paid, one
 * failed and a cashout paid; then the file saying what the provider booked, with a disagreement
 * of each kind, and the window that holds the payments.
 */
export async function setUpReconLane(options: {
  api: ChaosClient;
  pool: DatabasePool;
  applicationId: string;
  runId: string;
}): Promise<ReconLane> {
  const { api, pool, applicationId, runId } = options;
  const history = newHistory();
  const wallets = await setUpWallets({ api, history, count: 2, payable: 0, runId });
  const [first, second] = wallets.all as [string, string];
  const deposit = async (wallet: string, status: 'successful' | 'failed', key: string) => {
    const outcome = await api.post(PATHS.deposit, { wallet_id: wallet, amount: 40_000 }, key);
    if (outcome.kind !== 'ok') throw new Error(`recon set-up deposit: ${JSON.stringify(outcome)}`);
    const id = recordDeposit(history, wallet, outcome.body);
    await simulate(api, history, id, status);
  };
  await deposit(first, 'successful', `${runId}-d3`);
  await deposit(second, 'successful', `${runId}-d4`);
  await deposit(second, 'failed', `${runId}-d5`);
  const cashout = await api.post(
    PATHS.cashout,
    { wallet_id: first, amount: 10_000, phone_number: '+23276123456' },
    `${runId}-c1`,
  );
  if (cashout.kind !== 'ok') throw new Error(`recon set-up cashout: ${JSON.stringify(cashout)}`);
  const cashoutId = Wire.moneyOut.parse(cashout.body).id;
  history.acknowledged.set(cashoutId, 'cashout');
  await simulate(api, history, cashoutId, 'successful');

  const rows = await pool.any(sql.type(
    z.object({
      id: z.string(),
      type: z.string(),
      status: z.string(),
      reference: z.string().nullable(),
      theirs: z.bigint(),
      at: z.string(),
    }),
  )`SELECT id, transaction_type AS type, status, provider_reference AS reference,
      coalesce(CASE WHEN transaction_type = 'mobile_money_deposit'
        THEN (metadata->>'total_amount_paid')::bigint
        ELSE (metadata->>'provider_amount')::bigint END, amount) AS theirs,
      to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at
    FROM transactions WHERE application_id = ${applicationId} ORDER BY created_at, id`);
  const deposits = rows.filter((r) => r.type === 'mobile_money_deposit');
  const paid = deposits.filter((r) => r.status === 'completed');
  const failed = deposits.filter((r) => r.status === 'failed');
  const out = rows.filter((r) => r.type === 'mobile_money_cashout' && r.status === 'completed');
  if (paid.length !== 4 || failed.length !== 1 || out.length !== 1 || rows.length !== 6) {
    throw new Error(`recon set-up: payments ${JSON.stringify(rows, big)}`);
  }
  if (rows.some((r) => r.reference === null)) {
    throw new Error(`recon set-up: a payment without a provider reference`);
  }
  // The fourth paid deposit is left out of the file: the provider has nothing of it.
  const [matched, amount, duplicate] = [paid[0]!, paid[1]!, paid[2]!];
  const line = (r: Row, money: bigint, direction: 'in' | 'out', reference = r.reference!) =>
    `${reference},${r.at},${major(money)},SLE,0,${direction},succeeded`;
  const csv = [
    'provider_reference,booked_at,amount,currency,fee,direction,status',
    line(matched, matched.theirs, 'in'),
    line(amount, amount.theirs + 1n, 'in'),
    line(duplicate, duplicate.theirs, 'in'),
    line(duplicate, duplicate.theirs, 'in'),
    line(failed[0]!, failed[0]!.theirs, 'in'),
    line(out[0]!, out[0]!.theirs, 'out'),
    line(matched, 1_000n, 'in', `${runId}-unknown`),
    '',
  ].join('\n');
  const times = rows.map((r) => Date.parse(r.at));
  const from = new Date(Math.min(...times) - 1_000).toISOString();
  const to = new Date(Math.max(...times) + 1_000).toISOString();
  const listed = await api.get('/api/v1/wallets/?per_page=100');
  if (listed.kind !== 'ok') throw new Error(`recon set-up wallets: ${JSON.stringify(listed)}`);
  const balances = new Map(
    Wire.wallets.parse(listed.body).map((w) => [w.id, majorNumberToMinor(w.balance)!] as const),
  );
  // The window must be over before a run may read it.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(to) - Date.now())));
  return {
    applicationId,
    from,
    to,
    csv,
    runs: new Map(),
    importId: null,
    resolved: new Map(),
    indefinite: 0,
    refusals: new Map(),
    history,
    balances,
  };
}

type Row = { id: string; reference: string | null; theirs: bigint; at: string };

const major = (minor: bigint) => `${minor / 100n}.${String(minor % 100n).padStart(2, '0')}`;
const big = (_key: string, value: unknown) =>
  typeof value === 'bigint' ? value.toString() : value;

/**
 * The lane during the load: the file imported, then a run after another until `endAt`, each
 * waited for; the exceptions the first run opened resolved while the others go on.
 */
export async function runReconLane(options: {
  lane: ReconLane;
  api: ChaosClient;
  admin: ChaosClient;
  endAt: number;
  runId: string;
}): Promise<void> {
  const { lane, api, admin, endAt, runId } = options;
  const definite = (
    what: string,
    outcome: Outcome,
  ): outcome is Exclude<Outcome, { kind: 'indefinite' }> => {
    if (outcome.kind === 'indefinite') lane.indefinite += 1;
    if (outcome.kind === 'refused') {
      const key = `${what} ${outcome.status} ${JSON.stringify(Wire.refusal.safeParse(outcome.body).data?.detail ?? '').slice(0, 80)}`;
      lane.refusals.set(key, (lane.refusals.get(key) ?? 0) + 1);
    }
    return outcome.kind !== 'indefinite';
  };
  const form = new FormData();
  form.append('provider', 'mobile_money');
  form.append('file', new Blob([lane.csv], { type: 'text/csv' }), 'settlement.csv');
  const imported = await api.post('/api/v1/reconciliation/imports', form);
  if (!definite('import', imported) || imported.kind !== 'ok') return;
  lane.importId = Wire.id.parse(imported.body).id;

  let resolving: Promise<void> | null = null;
  for (let n = 0; Date.now() < endAt; n++) {
    const started = await api.post(
      '/api/v1/reconciliation/runs',
      { provider: 'mobile_money', from: lane.from, to: lane.to, import_id: lane.importId },
      `${runId}-run-${n}`,
    );
    if (!definite('run', started) || started.kind !== 'ok') continue;
    const run = RUN.parse(started.body);
    lane.runs.set(run.id, run.status);
    const status = await waitForRun(api, run.id, Date.now() + RUN_LIMIT_MS);
    lane.runs.set(run.id, status);
    // Resolved once the first run found them, while the later runs go on.
    if (status === 'completed' && !resolving) {
      resolving = resolveAll({ lane, api, admin, runId, definite });
    }
    await new Promise((resolve) => setTimeout(resolve, RUN_GAP_MS));
  }
  await resolving;
}

async function waitForRun(api: ChaosClient, id: string, deadline: number): Promise<string> {
  let status = 'running';
  while (status === 'running' && Date.now() < deadline) {
    const read = await api.get(`/api/v1/reconciliation/runs/${id}`);
    if (read.kind === 'ok') status = RUN.parse(read.body).status;
    if (status === 'running') await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return status;
}

async function resolveAll(options: {
  lane: ReconLane;
  api: ChaosClient;
  admin: ChaosClient;
  runId: string;
  definite: (what: string, outcome: Outcome) => boolean;
}): Promise<void> {
  const { lane, api, admin, runId, definite } = options;
  const listed = await api.get('/api/v1/reconciliation/exceptions?per_page=100');
  if (!definite('exceptions', listed) || listed.kind !== 'ok') return;
  for (const e of EXCEPTIONS.parse(listed.body).data) {
    const action = RESOLUTION[e.kind as Kind];
    if (!action || e.status !== 'open') continue;
    const by = action === 'adjust' ? admin : api;
    const outcome = await by.post(
      `/api/v1/reconciliation/exceptions/${e.id}/resolve`,
      { action, note: `Chaos: ${e.kind} ${action}` },
      `${runId}-resolve-${e.id}`,
    );
    if (definite(`resolve ${action}`, outcome) && outcome.kind === 'ok') {
      lane.resolved.set(e.id, action);
    }
  }
}

/**
 * The lane's checks once the load has stopped (docs/testing.md "Chaos test"): runs completed
 * once with the file's counts, exceptions unduplicated, adjustments applied once.
 */
export async function checkReconLane(options: {
  pool: DatabasePool;
  api: ChaosClient;
  lane: ReconLane;
  notes: string[];
}): Promise<string[]> {
  const { pool, api, lane, notes } = options;
  const violations: string[] = [];
  const fail = (message: string) => violations.push(`reconciliation: ${message}`);
  const app = lane.applicationId;
  if (lane.importId === null) fail('the settlement file was never imported');
  // Runs still going when the load stopped are given their time.
  for (const [id, status] of lane.runs) {
    if (status === 'running')
      lane.runs.set(id, await waitForRun(api, id, Date.now() + RUN_LIMIT_MS));
  }
  const runs = await pool.any(sql.type(
    z.object({
      id: z.string(),
      status: z.string(),
      counts: z.record(z.string(), z.number()),
      completed_events: z.number(),
    }),
  )`SELECT r.id, r.status, json_build_object('matched', r.matched,
      'missing_internal', r.missing_internal, 'missing_external', r.missing_external,
      'amount_mismatch', r.amount_mismatch, 'status_mismatch', r.status_mismatch,
      'duplicate', r.duplicate) AS counts,
      (SELECT count(*) FROM events e WHERE e.application_id = r.application_id
        AND e.type = 'reconciliation.run.completed' AND e.data->>'id' = r.id::text)::int
        AS completed_events
    FROM recon_runs r WHERE r.application_id = ${app}`);
  for (const id of lane.runs.keys()) {
    if (!runs.some((r) => r.id === id)) fail(`acknowledged run ${id} has no row`);
  }
  for (const run of runs) {
    if (!lane.runs.has(run.id) && lane.indefinite === 0)
      fail(`run ${run.id} was never acknowledged`);
    if (run.status !== 'completed') fail(`run ${run.id} is ${run.status}`);
    if (JSON.stringify(run.counts) !== JSON.stringify(EXPECTED)) {
      fail(
        `run ${run.id} counted ${JSON.stringify(run.counts)}, the file says ${JSON.stringify(EXPECTED)}`,
      );
    }
    if (run.completed_events !== 1) {
      fail(`run ${run.id}: ${run.completed_events} reconciliation.run.completed events`);
    }
  }
  const exceptions = await pool.any(sql.type(
    z.object({
      id: z.string(),
      kind: z.string(),
      status: z.string(),
      resolution: z.string().nullable(),
      opened_events: z.number(),
      adjustments: z.number(),
      adjustment_ledger: z.number(),
    }),
  )`SELECT x.id, x.kind, x.status, x.resolution,
      (SELECT count(*) FROM events e WHERE e.id = x.id
        AND e.type = 'reconciliation.exception.opened')::int AS opened_events,
      (SELECT count(*) FROM recon_adjustments a WHERE a.exception_id = x.id)::int AS adjustments,
      (SELECT count(*) FROM ledger_transactions l WHERE l.application_id = x.application_id
        AND l.metadata->>'recon_exception_id' = x.id::text)::int AS adjustment_ledger
    FROM recon_exceptions x WHERE x.application_id = ${app}`);
  const kinds = exceptions.map((e) => e.kind).sort();
  if (JSON.stringify(kinds) !== JSON.stringify([...KINDS].sort())) {
    fail(`exceptions ${JSON.stringify(kinds)}, not one of each kind`);
  }
  for (const e of exceptions) {
    if (e.opened_events !== 1) fail(`exception ${e.id}: ${e.opened_events} opened events`);
    const acknowledged = lane.resolved.get(e.id) ?? null;
    if (acknowledged && (e.status !== 'resolved' || e.resolution !== acknowledged)) {
      fail(
        `exception ${e.id} (${e.kind}): resolved ${acknowledged}, the database ${e.status} ${e.resolution}`,
      );
    }
    const adjusted = e.resolution === 'adjust' ? 1 : 0;
    if (e.adjustments !== adjusted || e.adjustment_ledger !== adjusted) {
      fail(
        `exception ${e.id} (${e.kind}, ${e.resolution ?? 'open'}): ${e.adjustments} adjustments, ${e.adjustment_ledger} ledger transactions`,
      );
    }
  }
  // Each wallet holds what it held once set up, and its adjustments, once each.
  const wallets = await pool.any(sql.type(
    z.object({ id: z.string(), balance: z.bigint(), adjusted: z.bigint() }),
  )`SELECT a.id, a.balance,
      (SELECT coalesce(sum(j.amount), 0) FROM recon_adjustments j WHERE j.wallet_id = a.id)::int8
        AS adjusted
    FROM ledger_accounts a WHERE a.application_id = ${app} AND a.kind = 'user_wallet'`);
  for (const w of wallets) {
    const expected = (lane.balances.get(w.id) ?? 0n) + w.adjusted;
    if (w.balance !== expected) {
      fail(
        `wallet ${w.id} holds ${w.balance}; set up with ${lane.balances.get(w.id)}, adjusted by ${w.adjusted}`,
      );
    }
  }
  const byResolution = (r: string) => exceptions.filter((e) => e.resolution === r).length;
  notes.push(
    `reconciliation: ${runs.length} runs (${lane.runs.size} acknowledged), ${exceptions.length} exceptions, ` +
      `${byResolution('adjust')} adjusted and ${byResolution('accept')} accepted` +
      `${lane.refusals.size ? `; refusals ${[...lane.refusals].map(([k, n]) => `${n} × ${k}`).join(', ')}` : ''}` +
      `${lane.indefinite ? `; ${lane.indefinite} requests without a definitive answer` : ''}`,
  );
  return violations;
}
