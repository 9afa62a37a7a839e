import { sql } from 'slonik';
import { z } from 'zod';
import { idFromKey } from '../../src/api/pipeline';
import { ledgerInvariantProblems } from '../../src/db/ledger-audit';
import { MONEY_OUT_TYPES } from '../../src/db/money-out';
import type { DatabasePool } from '../../src/db/pool';
import { majorNumberToMinor } from '../../src/domain/money';
import { BATCHES_END_MS } from './batches';
import { checkStatements } from './statements';
import type { ChaosClient } from './http';
import type { History } from './workload';
import { Wire } from './wire';

/** The accounts whose money is inside the engine (not a provider's clearing or FX). */
const INSIDE = ['user_wallet', 'escrow', 'application_fees', 'payouts', 'dispute_reserve'];

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
 * The bank test's checks once the load has stopped and every fault has recovered: those of
 * docs/testing.md "Chaos test", and each wallet's statements and balances at instants against its
 * entries (statements.ts). Answers the violations (empty: all hold).
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

  const disputeProblems = await checkDisputes({
    pool,
    api,
    history,
    applicationId,
    notes,
    indefinite: options.indefinite,
  });
  violations.push(...disputeProblems.violations);
  const { disputes, releases } = disputeProblems;
  const refunded = await refundedByDeposit(pool, applicationId);
  for (const [id, body] of apiView) {
    if (stored.get(id)?.transaction_type !== 'card_deposit') continue;
    const truth = refunded.get(id)?.refunded ?? 0n;
    if (minor(body.amount_refunded ?? 0) !== truth) {
      fail(
        `card deposit ${id}: the API shows amount_refunded ${body.amount_refunded}, the database ${truth}`,
      );
    }
  }
  // Refunded never above credited: refunds pending or completed and disputes not won.
  for (const [id, { amount, refunded: r, disputed }] of refunded) {
    if (r + disputed > amount) {
      fail(`card deposit ${id}: ${amount} credited, ${r} refunded and ${disputed} disputed`);
    }
  }

  // Each refund ends as the sandbox's card says: refunded, or failed with the money given back.
  const refundsEnded = { completed: 0, failed: 0, other: 0 };
  for (const [id, end] of history.refundEnds) {
    const status = stored.get(id)?.status;
    if (status === 'completed' || status === 'failed') refundsEnded[status] += 1;
    else refundsEnded.other += 1;
    if (status !== end) fail(`card refund ${id}: ${status}, the sandbox's card says ${end}`);
  }
  notes.push(
    `card refunds: ${refundsEnded.completed} completed, ${refundsEnded.failed} failed (given back), ${refundsEnded.other} neither`,
  );

  for (const problem of await moneyLeftTwice(pool, applicationId)) fail(problem);
  violations.push(
    ...(await checkBatches({
      pool,
      api,
      history,
      applicationId,
      notes,
      indefinite: options.indefinite,
    })),
  );
  const raced = [...history.raced.values()];
  const answers = new Map<number, number>();
  for (const r of raced) answers.set(r.resolved, (answers.get(r.resolved) ?? 0) + 1);
  notes.push(
    `operator resolutions raced with the provider's payment: ${raced.length} ` +
      `(resolve answered ${[...answers].map(([status, n]) => `${n} × ${status}`).join(', ')}), ` +
      `${raced.filter((r) => r.paid === 'completed').length} paid by the provider`,
  );

  // Nothing stuck: a payment whose provider outcome was delivered has settled.
  for (const id of history.decided) {
    if (stored.get(id)?.status === 'pending') fail(`payment ${id} is still pending once decided`);
  }

  // Exactly once: the ledger transactions written for each payment.
  const ledger = await pool.any(sql.type(
    z.object({
      transaction_id: z.string().nullable(),
      step: z.string(),
      batch_id: z.string().nullable(),
      n: z.number(),
    }),
  )`SELECT transaction_id, coalesce(metadata->>'step', '') AS step,
      metadata->>'batch_id' AS batch_id, count(*)::int AS n
    FROM ledger_transactions WHERE application_id = ${applicationId}
    GROUP BY transaction_id, coalesce(metadata->>'step', ''), metadata->>'batch_id'`);
  const steps = new Map<string, string[]>();
  for (const { transaction_id: id, step, batch_id: batchId, n } of ledger) {
    // An atomic batch's one ledger transaction is its items' (checkBatches counts it).
    if (id === null && batchId !== null && history.batches.get(batchId)?.atomic) continue;
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
    if (history.atomicItems.has(id)) continue;
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
  // A dispute's own steps: its reserve, and the payment to the provider when lost; a won one's
  // release record holds the release.
  for (const dispute of disputes.values()) {
    const written = [...(steps.get(dispute.id) ?? [])].sort();
    const moved = dispute.reserved_amount > 0n;
    const want = !moved ? [] : dispute.status === 'lost' ? ['lost', 'reserve'] : ['reserve'];
    if (JSON.stringify(written) !== JSON.stringify(want)) {
      fail(`dispute ${dispute.id} (${dispute.status}): ledger steps ${JSON.stringify(written)}`);
    }
  }
  for (const release of releases) {
    const written = steps.get(release.id) ?? [];
    const want = release.amount > 0n ? ['won'] : [];
    if (JSON.stringify(written) !== JSON.stringify(want)) {
      fail(`dispute_release ${release.id}: ledger steps ${JSON.stringify(written)}`);
    }
  }
  // Nothing moved without an acknowledgment (a 4xx wrote no ledger transaction), but a payout the
  // provider refused at once, answered 400 after its saga reserved and gave back all the money
  // (docs/architecture.md, "The money-out path"): no more of them than "Provider refused" answers.
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
    .filter(([key]) => /^(cashout|card_payout|card_refund) 400 "Provider refused/.test(key))
    .reduce((sum, [, n]) => sum + n, 0);
  const givenBack = new Set(refusedMoneyOut.length <= providerRefused ? refusedMoneyOut : []);
  if (givenBack.size) {
    notes.push(
      `${givenBack.size} money out refused by the provider (400): reserved and given back in full`,
    );
  }
  // A dispute's records count as acknowledged when its opening was (checkDisputes).
  const ofDisputes = new Set([...disputes.keys(), ...releases.map((r) => r.id)]);
  const unacknowledged = [...steps.keys()].filter(
    (id) => !history.acknowledged.has(id) && !givenBack.has(id) && !ofDisputes.has(id),
  );
  if (unacknowledged.length) {
    const described = unacknowledged.slice(0, 5).map((id) => {
      const row = stored.get(id);
      const written = JSON.stringify([...(steps.get(id) ?? [])].sort());
      return `${id} (${row ? `${row.transaction_type} ${row.status}` : 'no row'}, steps ${written})`;
    });
    const answers = await answersUnderKeys(pool, applicationId, unacknowledged);
    const message =
      `${unacknowledged.length} payments moved money without a 2xx answer: ${described.join(', ')}` +
      (answers.length ? `; their keys' stored answers: ${answers.join('; ')}` : '');
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
  for (const dispute of disputes.values()) {
    add(dispute.wallet_id, -dispute.reserved);
    if (dispute.outcome === 'won') add(dispute.wallet_id, dispute.reserved);
    if (dispute.outcome === 'lost') wentOut += dispute.reserved;
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

  for (const problem of await checkStatements({ pool, api, wallets })) {
    fail(`statement: ${problem}`);
  }

  // What is inside equals what came in less what went out.
  const inside = accounts
    .filter((a) => INSIDE.includes(a.kind))
    .reduce((sum, a) => sum + a.balance, 0n);
  // Open disputes' reserves are what the dispute reserve holds.
  const reserve = accounts
    .filter((a) => a.kind === 'dispute_reserve')
    .reduce((sum, a) => sum + a.balance, 0n);
  const reservedOpen = [...disputes.values()]
    .filter((d) => d.status !== 'won' && d.status !== 'lost')
    .reduce((sum, d) => sum + d.reserved_amount, 0n);
  if (reserve !== reservedOpen) {
    fail(`the dispute reserve holds ${reserve}, the open disputes reserved ${reservedOpen}`);
  }
  if (modelHolds && inside !== cameIn - wentOut) {
    fail(
      `wallets + escrow + fees + payouts + dispute reserve = ${inside}; deposits in ${cameIn} less money out ${wentOut} = ${cameIn - wentOut}`,
    );
  }
  notes.push(`inside the engine: ${inside} (deposits in ${cameIn}, money out ${wentOut})`);
  return violations;
}

const big = (_key: string, value: unknown) =>
  typeof value === 'bigint' ? value.toString() : value;

const disputeRow = z.object({
  id: z.string(),
  transaction_id: z.string(),
  wallet_id: z.string(),
  amount: z.bigint(),
  reserved_amount: z.bigint(),
  uncovered_amount: z.bigint(),
  status: z.string(),
  reason: z.string(),
});
type CheckedDispute = z.infer<typeof disputeRow> & {
  /** The reserve as the model counts it, and the outcome acknowledged (null: none). */
  reserved: bigint;
  outcome: string | null;
};

/** Per card deposit: what it credited, its refunds pending or completed, its disputes not won. */
async function refundedByDeposit(pool: DatabasePool, applicationId: string) {
  const rows = await pool.any(sql.type(
    z.object({ id: z.string(), amount: z.bigint(), refunded: z.bigint(), disputed: z.bigint() }),
  )`SELECT t.id, t.amount,
      (SELECT coalesce(sum(r.amount), 0)::int8 FROM transactions r
        WHERE r.parent_id = t.id AND r.transaction_type = 'card_refund'
          AND r.status IN ('pending', 'completed')) AS refunded,
      (SELECT coalesce(sum(d.amount), 0)::int8 FROM disputes d
        WHERE d.transaction_id = t.id AND d.status <> 'won') AS disputed
    FROM transactions t
    WHERE t.application_id = ${applicationId} AND t.transaction_type = 'card_deposit'`);
  return new Map(rows.map((row) => [row.id, row]));
}

/**
 * The per-dispute checks of docs/testing.md "Chaos test", and that every dispute (so each of its
 * records and ledger transactions) was opened by a request the clients saw acknowledged. Answers
 * the disputes and release records the ledger checks count as acknowledged.
 */
async function checkDisputes(options: {
  pool: DatabasePool;
  api: ChaosClient;
  history: History;
  applicationId: string;
  notes: string[];
  /** Requests that never had a definitive answer: a dispute they opened is not acknowledged. */
  indefinite: number;
}) {
  const { pool, api, history, applicationId, notes } = options;
  const violations: string[] = [];
  const fail = (message: string) => violations.push(message);
  const rows = await pool.any(sql.type(disputeRow)`
    SELECT id, transaction_id, wallet_id, amount, reserved_amount, uncovered_amount, status, reason
    FROM disputes WHERE application_id = ${applicationId}`);
  const releaseRows = await pool.any(sql.type(
    z.object({ id: z.string(), amount: z.bigint(), dispute_id: z.string().nullable() }),
  )`SELECT t.id, t.amount, coalesce(t.metadata->>'dispute_id',
      (SELECT l.metadata->>'dispute_id' FROM ledger_transactions l
        WHERE l.transaction_id = t.id LIMIT 1)) AS dispute_id
    FROM transactions t
    WHERE t.application_id = ${applicationId} AND t.transaction_type = 'dispute_release'`);
  const reserveRecords = new Set(
    (
      await pool.any(sql.type(z.object({ id: z.string() }))`
        SELECT id FROM transactions
        WHERE application_id = ${applicationId} AND transaction_type = 'dispute_reserve'`)
    ).map((r) => r.id),
  );
  const lostToProvider = new Map(
    (
      await pool.any(sql.type(z.object({ id: z.string(), n: z.number() }))`
        SELECT l.transaction_id AS id, count(*)::int AS n FROM ledger_transactions l
        WHERE l.application_id = ${applicationId} AND l.metadata->>'step' = 'lost'
          AND EXISTS (SELECT 1 FROM ledger_entries e JOIN ledger_accounts a ON a.id = e.account_id
            WHERE e.ledger_transaction_id = l.id AND a.kind = 'provider_clearing_card'
              AND e.amount > 0)
        GROUP BY l.transaction_id`)
    ).map((r) => [r.id, r.n]),
  );

  const disputes = new Map<string, CheckedDispute>();
  let unanswered = 0;
  for (const row of rows) {
    const seen = history.disputes.get(row.id);
    if (!seen) {
      // Its request's retries carry its Idempotency-Key: only a request that never had a
      // definitive answer may leave a dispute no client was told of.
      if (options.indefinite === 0) {
        fail(`dispute ${row.id} was opened without a 2xx answer`);
        continue;
      }
      unanswered += 1;
    }
    disputes.set(row.id, {
      ...row,
      reserved: seen ? seen.reserved : row.reserved_amount,
      outcome: seen ? seen.outcome : null,
    });
    if (row.reserved_amount + row.uncovered_amount !== row.amount) {
      fail(
        `dispute ${row.id}: reserved ${row.reserved_amount} + uncovered ${row.uncovered_amount} is not its amount ${row.amount}`,
      );
    }
    if (!reserveRecords.has(row.id)) fail(`dispute ${row.id} has no dispute_reserve record`);
    if (seen) {
      const answered = { amount: seen.amount, reserved: seen.reserved, deposit: seen.deposit };
      const truth = {
        amount: row.amount,
        reserved: row.reserved_amount,
        deposit: row.transaction_id,
      };
      if (JSON.stringify(answered, big) !== JSON.stringify(truth, big)) {
        fail(
          `dispute ${row.id}: opened as ${JSON.stringify(answered, big)}, the database ${JSON.stringify(truth, big)}`,
        );
      }
      const open = row.status === 'needs_response' || row.status === 'under_review';
      if (seen.outcome ? seen.outcome !== row.status : !open) {
        fail(`dispute ${row.id}: answered ${seen.outcome ?? 'open'}, the database ${row.status}`);
      }
    }
    const released = releaseRows.filter((r) => r.dispute_id === row.id);
    const lost = lostToProvider.get(row.id) ?? 0;
    const moved = row.reserved_amount > 0n;
    if (row.status === 'won') {
      if (released.length !== 1 || released[0]!.amount !== row.reserved_amount) {
        fail(
          `dispute ${row.id} (won, reserved ${row.reserved_amount}): release records ${JSON.stringify(released, big)}`,
        );
      }
    } else if (released.length) {
      fail(`dispute ${row.id} (${row.status}) has ${released.length} release records`);
    }
    if (lost !== (row.status === 'lost' && moved ? 1 : 0)) {
      fail(`dispute ${row.id} (${row.status}): ${lost} ledger transactions to the provider`);
    }
  }
  for (const release of releaseRows) {
    if (!release.dispute_id || !disputes.has(release.dispute_id)) {
      fail(`dispute_release ${release.id} belongs to no acknowledged dispute`);
    }
  }
  for (const id of history.disputes.keys()) {
    if (!rows.some((row) => row.id === id)) fail(`acknowledged dispute ${id}: no row`);
  }
  const byStatus = (status: string) => rows.filter((row) => row.status === status).length;
  notes.push(
    `disputes: ${byStatus('won')} won, ${byStatus('lost')} lost, ${rows.length - byStatus('won') - byStatus('lost')} open; uncovered ${rows.reduce((sum, row) => sum + row.uncovered_amount, 0n)}`,
  );
  if (unanswered) {
    notes.push(
      `${unanswered} disputes opened by requests that never had a definitive answer (${options.indefinite} such requests)`,
    );
  }

  // The API's view of every acknowledged dispute.
  for (const id of history.disputes.keys()) {
    const row = disputes.get(id);
    if (!row) continue;
    const outcome = await api.get(`/api/v1/disputes/${id}`);
    if (outcome.kind !== 'ok') {
      fail(`acknowledged dispute ${id} not readable: ${JSON.stringify(outcome)}`);
      continue;
    }
    const body = Wire.dispute.parse(outcome.body);
    const seen = {
      status: body.status,
      amount: minor(body.amount),
      reserved: minor(body.reserved_amount),
      uncovered: minor(body.uncovered_amount),
    };
    const truth = {
      status: row.status,
      amount: row.amount,
      reserved: row.reserved_amount,
      uncovered: row.uncovered_amount,
    };
    if (JSON.stringify(seen, big) !== JSON.stringify(truth, big)) {
      fail(
        `dispute ${id}: the API says ${JSON.stringify(seen, big)}, the database ${JSON.stringify(truth, big)}`,
      );
    }
  }
  return { violations, disputes, releases: releaseRows };
}

/**
 * Money never leaves twice: a cashout given back to its wallet was not paid by the sandbox, a
 * settled one was; and no provider answer contradicts an ended payment (an operator's
 * resolution asks the sandbox first, so none may).
 */
async function moneyLeftTwice(pool: DatabasePool, applicationId: string): Promise<string[]> {
  const rows = await pool.any(sql.type(
    z.object({ id: z.string(), status: z.string(), paid: z.string() }),
  )`SELECT t.id, t.status, p.status AS paid
    FROM transactions t JOIN sandbox_mobile_money_payouts p ON p.reference = t.id::text
    WHERE t.application_id = ${applicationId} AND t.transaction_type = 'mobile_money_cashout'
      AND t.status IN ('completed', 'failed')`);
  const problems = rows
    .filter((row) => (row.status === 'completed') !== (row.paid === 'completed'))
    .map((row) => `cashout ${row.id} is ${row.status}, the sandbox's payout ${row.paid}`);
  const contradicted = await pool.any(sql.type(
    z.object({
      transaction_id: z.string(),
      engine_status: z.string(),
      provider_status: z.string(),
    }),
  )`SELECT transaction_id, engine_status, provider_status FROM payment_contradictions
    WHERE application_id = ${applicationId}`);
  for (const c of contradicted) {
    problems.push(
      `payment ${c.transaction_id} is ${c.engine_status}, its provider says ${c.provider_status}`,
    );
  }
  return problems;
}

const ENDED = new Set(['succeeded', 'failed', 'canceled']);

/**
 * The bulk payments' checks of docs/testing.md "Chaos test" (every item ended once, counts, no
 * item paid twice, an atomic batch all or nothing, no batch without a 2xx): the violations.
 */
async function checkBatches(options: {
  pool: DatabasePool;
  api: ChaosClient;
  history: History;
  applicationId: string;
  /** Requests that never had a definitive answer: a batch they started is not acknowledged. */
  indefinite: number;
  notes: string[];
}): Promise<string[]> {
  const { pool, api, history, applicationId, notes } = options;
  const violations: string[] = [];
  const fail = (message: string) => violations.push(message);
  const stored = await pool.any(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM batches WHERE application_id = ${applicationId}`);
  const unacknowledged = stored.filter((b) => !history.batches.has(b.id));
  if (unacknowledged.length) {
    const message = `${unacknowledged.length} batches started without a 2xx answer`;
    if (options.indefinite === 0) fail(message);
    else notes.push(`${message} (${options.indefinite} requests never had a definitive answer)`);
  }
  const statuses = new Map<string, number>();
  const itemEnds = { succeeded: 0, failed: 0, canceled: 0 };
  for (const [id, submitted] of history.batches) {
    const read = await api.get(`/api/v1/batches/${id}`);
    if (read.kind !== 'ok') {
      fail(`acknowledged batch ${id} not readable: ${JSON.stringify(read)}`);
      continue;
    }
    const batch = Wire.batch.parse(read.body);
    const label = `${submitted.atomic ? 'atomic ' : ''}${submitted.kind} batch ${id}`;
    statuses.set(batch.status, (statuses.get(batch.status) ?? 0) + 1);
    if (batch.status === 'processing') {
      fail(`${label} still processing ${BATCHES_END_MS / 1_000} s after the load`);
      continue;
    }
    const items = await pool.any(sql.type(
      z.object({
        item_index: z.number(),
        status: z.string(),
        transaction_id: z.string(),
        payment: z.string().nullable(),
        own: z.number(),
      }),
    )`SELECT i.item_index, i.status, i.transaction_id, t.status AS payment,
        (SELECT count(*)::int FROM ledger_transactions l
          WHERE l.transaction_id = i.transaction_id) AS own
      FROM batch_items i LEFT JOIN transactions t ON t.id = i.transaction_id
      WHERE i.batch_id = ${id} ORDER BY i.item_index`);
    const counted = { succeeded: 0, failed: 0, canceled: 0 };
    for (const item of items) {
      if (!ENDED.has(item.status)) {
        fail(`${label}: item ${item.item_index} ${item.status} once the batch ended`);
        continue;
      }
      counted[item.status as keyof typeof counted] += 1;
    }
    for (const [status, n] of Object.entries(counted)) {
      itemEnds[status as keyof typeof itemEnds] += n;
    }
    const answered = { succeeded: batch.succeeded, failed: batch.failed, canceled: batch.canceled };
    if (
      items.length !== submitted.total ||
      batch.total !== submitted.total ||
      JSON.stringify(answered) !== JSON.stringify(counted)
    ) {
      fail(
        `${label}: ${submitted.total} items sent, ${items.length} stored, total ${batch.total}; ` +
          `counts ${JSON.stringify(answered)}, its items ${JSON.stringify(counted)}`,
      );
    }
    if (submitted.atomic) {
      const together = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM ledger_transactions
        WHERE application_id = ${applicationId} AND metadata->>'batch_id' = ${id}`);
      const all = counted.succeeded === items.length;
      const none = counted.succeeded === 0;
      const wrote = items.filter((i) => i.payment !== null);
      const moved = all
        ? together === 1 && items.every((i) => i.payment === 'completed' && i.own === 0)
        : none && together === 0 && wrote.length === 0;
      if (!moved) {
        fail(
          `${label}: ${counted.succeeded} of ${items.length} succeeded, ${wrote.length} payments ` +
            `written, ${together} ledger transactions of the batch`,
        );
      }
      continue;
    }
    for (const item of items) {
      // A transfer writes one ledger transaction when it completes; a cashout's steps are the
      // money-out checks'. A declined item wrote no payment, and an item canceled none.
      const once =
        submitted.kind === 'transfer'
          ? item.status === 'succeeded'
            ? item.payment === 'completed' && item.own === 1
            : item.payment === null && item.own === 0
          : item.status === 'succeeded'
            ? item.payment !== null
            : item.payment === null || item.payment === 'failed';
      if (!once) {
        fail(
          `${label}: item ${item.item_index} ${item.status}, its payment ${item.payment ?? 'none'} ` +
            `with ${item.own} ledger transactions`,
        );
      }
    }
  }
  notes.push(
    `bulk payments: ${history.batches.size} (${[...history.batches.values()].filter((b) => b.atomic).length} atomic), ` +
      `${[...statuses].map(([status, n]) => `${n} ${status}`).join(', ') || 'none'}; items ` +
      `${itemEnds.succeeded} succeeded, ${itemEnds.failed} failed, ${itemEnds.canceled} canceled`,
  );
  return violations;
}

/** Payment kinds whose ids the API derives from the request's key (src/api/pipeline.ts `idFromKey`). */
const KEYED_KINDS = [
  'transfer',
  'escrow_hold',
  'card_deposit',
  'card_payout',
  'card_refund',
  'mobile_money_cashout',
  'mobile_money_deposit',
];

/** For a finding: the key, status and body the API stored for the requests that made `ids`. */
async function answersUnderKeys(
  pool: DatabasePool,
  applicationId: string,
  ids: readonly string[],
): Promise<string[]> {
  const wanted = new Set(ids);
  const keys = await pool.any(sql.type(
    z.object({
      key: z.string(),
      mode: z.enum(['test', 'live']),
      response_status: z.number().nullable(),
      response_body: z.unknown(),
      created_at: z.string(),
    }),
  )`SELECT key, mode, response_status, response_body, created_at
    FROM idempotency_keys WHERE application_id = ${applicationId}`);
  const found: string[] = [];
  for (const row of keys) {
    const caller = { applicationId, mode: row.mode } as Parameters<typeof idFromKey>[0];
    for (const kind of KEYED_KINDS) {
      const id = idFromKey(caller, { key: row.key, claimedAt: row.created_at }, kind);
      if (wanted.has(id)) {
        found.push(
          `${id} ${kind} key ${row.key}: ${row.response_status} ${JSON.stringify(row.response_body)}`,
        );
      }
    }
  }
  return found;
}
