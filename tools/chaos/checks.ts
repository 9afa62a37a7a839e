import { sql } from 'slonik';
import { z } from 'zod';
import { ledgerInvariantProblems } from '../../db/ledger-audit';
import { MONEY_OUT_TYPES } from '../../db/money-out';
import type { DatabasePool } from '../../db/pool';
import { majorNumberToMinor } from '../../domain/money';
import type { ChaosClient } from './http';
import type { History } from './workload';
import { Wire } from './wire';

/** A money out given back in full: reserved, then all of it back to the wallet. */
const GIVEN_BACK = ['give_back', 'reserve'];

/** The money-out steps a saga may have written, by the status it ended in. */
const MONEY_OUT_STEPS: Record<string, string[][]> = {
  pending: [['reserve']],
  completed: [['reserve', 'settle']],
  failed: [GIVEN_BACK, ['reserve', 'reverse', 'settle']],
};

/** Ledger transactions a payment must have, by its type and status (not money out). */
function expectedLedgerRows(type: string, status: string): number {
  switch (type) {
    case 'escrow_hold':
    case 'escrow_release':
    case 'escrow_refund':
      return 1;
    default: // transfers and deposits move money when they complete, never otherwise
      return status === 'completed' ? 1 : 0;
  }
}

const minor = (value: unknown): bigint | null =>
  typeof value === 'number' ? majorNumberToMinor(value) : null;

/**
 * The bank test's checks, once the load has stopped and every fault has recovered: the books
 * (each balance equals its entries, zero sum per currency, no negative wallet), every
 * acknowledged payment applied exactly once, nothing moved without an acknowledgment (a 4xx
 * moves nothing), every wallet equal to what the acknowledged payments say it holds, what is
 * inside (wallets + escrow + fees + payouts reserved) equal to what came in less what went
 * out, and the API's view equal to the database's. Answers the violations (empty: all hold).
 */
export async function checkBank(options: {
  pool: DatabasePool;
  api: ChaosClient;
  history: History;
  applicationId: string;
  /** Requests that never had a definitive answer: their payments may or may not exist. */
  indefinite: number;
  notes: string[];
}): Promise<string[]> {
  const { pool, api, history, applicationId, notes } = options;
  const violations: string[] = [];
  const fail = (message: string) => violations.push(message);

  for (const problem of await ledgerInvariantProblems(pool)) fail(`ledger invariant: ${problem}`);

  // The API's view of every acknowledged payment, against the database's row.
  const apiView = new Map<string, z.infer<typeof Wire.transaction>>();
  for (const id of history.acknowledged.keys()) {
    const outcome = await api.get(`/api/v1/transactions/${id}`);
    if (outcome.kind !== 'ok') {
      fail(
        `acknowledged payment ${id} (${history.acknowledged.get(id)}) not readable: ${JSON.stringify(outcome)}`,
      );
      continue;
    }
    apiView.set(id, Wire.transaction.parse(outcome.body));
  }
  const rows = await pool.any(sql.type(
    z.object({
      id: z.string(),
      transaction_type: z.string(),
      status: z.string(),
      amount: z.bigint(),
      escrow_amount: z.bigint(),
      parent_id: z.string().nullable(),
    }),
  )`SELECT id, transaction_type, status, amount, escrow_amount, parent_id
    FROM transactions WHERE application_id = ${applicationId}`);
  const stored = new Map(rows.map((row) => [row.id, row]));
  for (const [id, body] of apiView) {
    const row = stored.get(id);
    if (!row) {
      fail(`payment ${id}: the API shows it, the database has no row`);
      continue;
    }
    const seen = {
      type: body.transaction_type,
      status: body.status,
      amount: minor(body.amount),
      escrow: minor(body.escrow_amount),
    };
    const truth = {
      type: row.transaction_type,
      status: row.status,
      amount: row.amount,
      escrow: row.escrow_amount,
    };
    if (JSON.stringify(seen, big) !== JSON.stringify(truth, big)) {
      fail(
        `payment ${id}: the API says ${JSON.stringify(seen, big)}, the database ${JSON.stringify(truth, big)}`,
      );
    }
  }

  // Nothing stuck: a payment whose provider outcome was delivered has settled.
  for (const id of history.decided) {
    if (stored.get(id)?.status === 'pending') fail(`payment ${id} is still pending once decided`);
  }

  // Exactly once: the ledger transactions written for each payment.
  const ledger = await pool.any(sql.type(
    z.object({ transaction_id: z.string().nullable(), step: z.string(), n: z.number() }),
  )`SELECT transaction_id, coalesce(metadata->>'step', '') AS step, count(*)::int AS n
    FROM ledger_transactions WHERE application_id = ${applicationId}
    GROUP BY transaction_id, coalesce(metadata->>'step', '')`);
  const steps = new Map<string, string[]>();
  for (const { transaction_id: id, step, n } of ledger) {
    if (id === null) {
      fail(`${n} ledger transactions (step '${step}') belong to no payment`);
      continue;
    }
    steps.set(id, [...(steps.get(id) ?? []), ...Array<string>(n).fill(step)]);
  }
  for (const id of history.acknowledged.keys()) {
    const row = stored.get(id);
    if (!row) continue;
    const written = (steps.get(id) ?? []).sort();
    if (history.moneyOut.has(id)) {
      const allowed = MONEY_OUT_STEPS[row.status] ?? [];
      if (!allowed.some((set) => JSON.stringify(set) === JSON.stringify(written))) {
        fail(
          `${row.transaction_type} ${id} (${row.status}): ledger steps ${JSON.stringify(written)}`,
        );
      }
    } else if (written.length !== expectedLedgerRows(row.transaction_type, row.status)) {
      fail(`${row.transaction_type} ${id} (${row.status}): ${written.length} ledger transactions`);
    }
  }
  // Nothing moved without an acknowledgment: a 4xx wrote no ledger transaction. But for one:
  // a payout the provider refused at once is answered 400 after the saga reserved the money and
  // gave all of it back (docs/architecture.md, "The money-out path"): a `failed` row whose two ledger
  // transactions cancel out, no more of them than the clients were told "Provider refused".
  const refusedMoneyOut = [...steps.keys()].filter((id) => {
    const row = stored.get(id);
    return (
      !history.acknowledged.has(id) &&
      row !== undefined &&
      (MONEY_OUT_TYPES as readonly string[]).includes(row.transaction_type) &&
      row.status === 'failed' &&
      JSON.stringify([...steps.get(id)!].sort()) === JSON.stringify(GIVEN_BACK)
    );
  });
  const providerRefused = [...history.refusals]
    .filter(([key]) => /^(cashout|card_payout) 400 "Provider refused/.test(key))
    .reduce((sum, [, n]) => sum + n, 0);
  const givenBack = new Set(refusedMoneyOut.length <= providerRefused ? refusedMoneyOut : []);
  if (givenBack.size) {
    notes.push(
      `${givenBack.size} money out refused by the provider (400): reserved and given back in full`,
    );
  }
  const unacknowledged = [...steps.keys()].filter(
    (id) => !history.acknowledged.has(id) && !givenBack.has(id),
  );
  if (unacknowledged.length) {
    const message = `${unacknowledged.length} payments moved money without a 2xx answer: ${unacknowledged.slice(0, 5).join(', ')}`;
    if (options.indefinite === 0) fail(message);
    else notes.push(`${message} (${options.indefinite} requests never had a definitive answer)`);
  }

  // Every wallet holds what the acknowledged payments say, and the API shows the same.
  const expected = new Map<string, bigint>();
  const add = (wallet: string | null, amount: bigint) => {
    if (wallet) expected.set(wallet, (expected.get(wallet) ?? 0n) + amount);
  };
  let cameIn = 0n;
  let wentOut = 0n;
  for (const row of rows) {
    if (!history.acknowledged.has(row.id)) continue;
    const body = apiView.get(row.id);
    const from = body?.wallet_id ?? null;
    const to = body?.recipient_wallet_id ?? null;
    const out = history.moneyOut.get(row.id);
    const deposit = history.deposits.get(row.id);
    if (deposit) {
      if (row.status === 'completed') {
        add(deposit.wallet, deposit.amount);
        cameIn += deposit.amount + deposit.applicationFee;
      }
    } else if (out) {
      if (row.status !== 'failed') add(out.wallet, -out.total);
      if (row.status === 'completed') wentOut += out.total - out.applicationFee;
    } else if (row.transaction_type === 'transfer' && row.status === 'completed') {
      add(from, -row.amount);
      add(to, row.amount);
    } else if (row.transaction_type === 'escrow_hold') {
      add(from, -row.amount);
    } else if (row.transaction_type === 'escrow_release') {
      add(to, row.amount);
    } else if (row.transaction_type === 'escrow_refund') {
      add(from, row.amount);
    }
  }
  const accounts = await pool.any(
    sql.type(
      z.object({ id: z.string(), kind: z.string(), balance: z.bigint() }),
    )`SELECT id, kind, balance FROM ledger_accounts WHERE application_id = ${applicationId}`,
  );
  const wallets = accounts.filter((a) => a.kind === 'user_wallet');
  const listed = await api.get('/api/v1/wallets/');
  const shown = new Map<string, bigint | null>(
    listed.kind === 'ok'
      ? Wire.wallets.parse(listed.body).map((w) => [w.id, minor(w.balance)])
      : [],
  );
  if (listed.kind !== 'ok') fail(`GET /api/v1/wallets/ answered ${JSON.stringify(listed)}`);
  const modelHolds = options.indefinite === 0;
  if (!modelHolds) notes.push('wallet model not checked: some requests had no definitive answer');
  for (const wallet of wallets) {
    if (modelHolds && (expected.get(wallet.id) ?? 0n) !== wallet.balance) {
      fail(
        `wallet ${wallet.id}: holds ${wallet.balance}, the acknowledged payments say ${expected.get(wallet.id) ?? 0n}`,
      );
    }
    if (listed.kind === 'ok' && shown.get(wallet.id) !== wallet.balance) {
      fail(
        `wallet ${wallet.id}: the API shows ${shown.get(wallet.id)}, the ledger ${wallet.balance}`,
      );
    }
  }

  // What is inside equals what came in less what went out.
  const inside = accounts
    .filter((a) => ['user_wallet', 'escrow', 'application_fees', 'payouts'].includes(a.kind))
    .reduce((sum, a) => sum + a.balance, 0n);
  if (modelHolds && inside !== cameIn - wentOut) {
    fail(
      `wallets + escrow + fees + payouts = ${inside}; deposits in ${cameIn} less money out ${wentOut} = ${cameIn - wentOut}`,
    );
  }
  notes.push(`inside the engine: ${inside} (deposits in ${cameIn}, money out ${wentOut})`);
  return violations;
}

const big = (_key: string, value: unknown) =>
  typeof value === 'bigint' ? value.toString() : value;
