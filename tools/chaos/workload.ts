import { majorNumberToMinor } from '../../src/domain/money';
import { SANDBOX_REFUSED_CASHOUT_AMOUNT } from '../../src/providers/sandbox-mobile-money';
import type { ChaosClient, Json, Outcome } from './http';
import { Wire } from './wire';
import type { Random } from './random';

export const OPERATIONS = [
  'transfer',
  'hold',
  'partial_release',
  'full_release',
  'refund',
  'deposit',
  'cashout',
  'card_payout',
  'card_deposit',
  'card_refund',
  'dispute',
  'resolution',
  'batch',
] as const;
export type Operation = (typeof OPERATIONS)[number];

/** How often each operation is drawn. */
const WEIGHTS: Record<Operation, number> = {
  transfer: 30,
  hold: 14,
  partial_release: 10,
  full_release: 6,
  refund: 6,
  deposit: 10,
  cashout: 8,
  card_payout: 6,
  card_deposit: 5,
  card_refund: 4,
  dispute: 3,
  resolution: 3,
  batch: 3,
};

/** Requests that follow an operation, tallied on their own. */
const FOLLOW_UPS = ['simulate', 'evidence', 'dispute_outcome'] as const;
type FollowUp = (typeof FOLLOW_UPS)[number];

export const PATHS = {
  transfer: '/api/v1/transactions/wallet/transfer',
  hold: '/api/v1/escrow/hold',
  deposit: '/api/v1/transactions/wallet/mobile-money-deposit',
  cashout: '/api/v1/transactions/wallet/mobile-money-cashout',
  payout: '/api/v1/transactions/wallet/card-payout',
  simulate: '/api/v1/testing/simulate-mobile-money-webhook',
  onboarding: '/api/v1/transactions/wallet/complete-onboarding/',
  cardDeposit: '/api/v1/transactions/wallet/card-deposit',
  simulateDispute: '/api/v1/testing/simulate-dispute',
  simulateDisputeOutcome: '/api/v1/testing/simulate-dispute-outcome',
  resolve: (id: string) => `/api/v1/admin/payments/${id}/resolve`,
  batches: '/api/v1/batches',
};

/** The sandbox's card whose refunds are accepted, then fail a moment later. */
const REFUND_FAILS = 'pm_card_refundFails';

/** An owner's identity the Test Mode sandbox verifies at once, with a debit card for payouts. */
const VERIFIED_OWNER = {
  individual: {
    first_name: 'Aminata',
    last_name: 'Kamara',
    dob: { day: 14, month: 3, year: 1990 },
    address: { line1: '12 Siaka Stevens Street', city: 'Freetown', country: 'SL' },
    email: 'aminata@example.com',
    id_number: '000000000',
  },
  business_profile: { mcc: '5734', product_description: 'Handmade furniture' },
  card_token: 'tok_visa_debit',
};
/** The end customer's address (TEST-NET-3, a documentation range: never contacted). */
const CUSTOMER_ADDRESS = { 'x-forwarded-for': '203.0.113.7' };

export type Tally = { ok: number; refused: number; indefinite: number };

/** What the clients saw: every acknowledged payment, with what its creation answered. */
export type History = {
  tally: Record<Operation | FollowUp, Tally>;
  /** 4xx answers by status and detail. */
  refusals: Map<string, number>;
  /** Transaction id -> the operation whose 2xx answer named it. */
  acknowledged: Map<string, Operation>;
  /** Mobile-money deposits acknowledged: what the payer pays in (amount + application fee). */
  deposits: Map<string, { wallet: string; amount: bigint; applicationFee: bigint }>;
  /**
   * Cashouts, card payouts and card refunds acknowledged: the wallet's total and the application
   * fee in it (a refund: its amount, no fee).
   */
  moneyOut: Map<string, { wallet: string; total: bigint; applicationFee: bigint }>;
  /** Card deposits acknowledged `completed` (also in `deposits`): refundable and disputable. */
  cardDeposits: Map<string, { wallet: string; amount: bigint; refundFails: boolean }>;
  /** Card refunds acknowledged: how the sandbox ends each (its deposit's card says). */
  refundEnds: Map<string, 'completed' | 'failed'>;
  /** Disputes whose opening was acknowledged, with the outcome acknowledged (null: left open). */
  disputes: Map<
    string,
    { deposit: string; wallet: string; amount: bigint; reserved: bigint; outcome: string | null }
  >;
  /** Holds that may still hold money. */
  openHolds: string[];
  /** Payments whose provider outcome the sandbox answered: none of them may stay pending. */
  decided: Set<string>;
  /** Cashouts an operator resolved `failed` while the provider paid them: the answers of both. */
  raced: Map<string, { resolved: number; paid: string | null }>;
  /** Bulk payments acknowledged (202): their kind and items; their payments join the rest once ended. */
  batches: Map<string, AcknowledgedBatch>;
  /** The payments of atomic batches' items: one ledger transaction for each batch, not each item. */
  atomicItems: Set<string>;
};

export type AcknowledgedBatch = {
  kind: 'transfer' | 'mobile_money_cashout';
  atomic: boolean;
  total: number;
};

export function newHistory(): History {
  const tally = {} as History['tally'];
  for (const op of [...OPERATIONS, ...FOLLOW_UPS] as const) {
    tally[op] = { ok: 0, refused: 0, indefinite: 0 };
  }
  return {
    tally,
    refusals: new Map(),
    acknowledged: new Map(),
    deposits: new Map(),
    moneyOut: new Map(),
    cardDeposits: new Map(),
    refundEnds: new Map(),
    disputes: new Map(),
    openHolds: [],
    decided: new Set(),
    raced: new Map(),
    batches: new Map(),
    atomicItems: new Set(),
  };
}

export type Wallets = { all: string[]; payable: string[] };

const minor = (major: unknown): bigint => {
  const value = typeof major === 'number' ? majorNumberToMinor(major) : null;
  if (value === null) throw new Error(`not an amount: ${JSON.stringify(major)}`);
  return value;
};
/** Minor units as the major-unit JSON number the API takes (two decimals at most). */
const major = (minorUnits: number): number => Number((minorUnits / 100).toFixed(2));

/** Now and then more than any wallet holds: the answer must be a 400 that moves nothing. */
const TOO_MUCH = 20_000_000;
const amount = (random: Random, min: number, max: number): number =>
  random.next() < 0.05 ? TOO_MUCH : random.int(min, max);

function count(history: History, op: Operation | FollowUp, outcome: Outcome): void {
  history.tally[op][outcome.kind === 'ok' ? 'ok' : outcome.kind] += 1;
  if (outcome.kind === 'refused') {
    const detail = JSON.stringify(Wire.refusal.safeParse(outcome.body).data?.detail ?? '').slice(
      0,
      80,
    );
    const key = `${op} ${outcome.status} ${detail}`;
    history.refusals.set(key, (history.refusals.get(key) ?? 0) + 1);
  }
}

/**
 * One client's operation: drawn from `random`, sent with its own Idempotency-Key and retried
 * until definitive; a deposit or cashout that is pending is then paid (or failed) through the
 * sandbox's simulate endpoint, as a payer or the provider would.
 */
export async function runOperation(options: {
  api: ChaosClient;
  /** An admin's client, for operator resolutions; without it none is drawn. */
  admin?: ChaosClient;
  random: Random;
  wallets: Wallets;
  history: History;
  key: string;
}): Promise<Operation> {
  const { api, admin, random, wallets, history, key } = options;
  let op = random.weighted(WEIGHTS);
  if (op === 'resolution' && !admin) op = 'cashout';
  if (
    (op === 'partial_release' || op === 'full_release' || op === 'refund') &&
    !history.openHolds.length
  ) {
    op = 'hold';
  }
  if ((op === 'card_refund' || op === 'dispute') && !history.cardDeposits.size) {
    op = 'card_deposit';
  }
  const wallet = random.pick(wallets.all);
  const other = random.pick(wallets.all.filter((w) => w !== wallet));
  const acknowledge = (id: unknown) => history.acknowledged.set(String(id), op);

  switch (op) {
    case 'transfer': {
      const body = {
        from_wallet_id: wallet,
        to_wallet_id: other,
        amount: major(amount(random, 1, 3_000)),
      };
      const outcome = await api.post(PATHS.transfer, body, key);
      count(history, op, outcome);
      if (outcome.kind === 'ok') acknowledge(Wire.id.parse(outcome.body).id);
      break;
    }
    case 'hold': {
      const body = {
        wallet_id: wallet,
        amount: major(amount(random, 1, 3_000)),
        recipient_wallet_id: other,
      };
      const outcome = await api.post(PATHS.hold, body, key);
      count(history, op, outcome);
      if (outcome.kind === 'ok') {
        const { id } = Wire.id.parse(outcome.body);
        acknowledge(id);
        history.openHolds.push(id);
      }
      break;
    }
    case 'partial_release':
    case 'full_release':
    case 'refund': {
      const hold = random.pick(history.openHolds);
      const action = op === 'refund' ? 'refund' : 'release';
      const body = op === 'partial_release' ? { amount: major(random.int(1, 1_500)) } : {};
      const outcome = await api.post(`/api/v1/escrow/${hold}/${action}`, body, key);
      count(history, op, outcome);
      const step = outcome.kind === 'ok' ? Wire.escrowStep.parse(outcome.body) : null;
      if (step) acknowledge(step.id);
      const remaining = step ? step.escrow_amount : null;
      if (remaining === 0 || (outcome.kind === 'refused' && op !== 'partial_release')) {
        history.openHolds = history.openHolds.filter((id) => id !== hold);
      }
      break;
    }
    case 'deposit': {
      const body = { wallet_id: wallet, amount: random.int(100, 200_000) };
      const outcome = await api.post(PATHS.deposit, body, key);
      count(history, op, outcome);
      if (outcome.kind !== 'ok') break;
      const id = recordDeposit(history, wallet, outcome.body);
      await simulate(api, history, id, random.next() < 0.9 ? 'successful' : 'failed');
      break;
    }
    case 'cashout':
    case 'card_payout': {
      const payable = op === 'card_payout' ? wallets.payable : wallets.all;
      const from = random.pick(payable);
      const outcome =
        op === 'cashout'
          ? await api.post(
              PATHS.cashout,
              {
                wallet_id: from,
                // One in ten the sandbox provider refuses (400): reserved, then given back.
                amount:
                  random.next() < 0.1
                    ? Number(SANDBOX_REFUSED_CASHOUT_AMOUNT)
                    : amount(random, 100, 20_000),
                phone_number: '+23276123456',
              },
              key,
            )
          : await api.post(
              PATHS.payout,
              { wallet_id: from, amount: major(amount(random, 1, 5_000)) },
              key,
            );
      count(history, op, outcome);
      if (outcome.kind !== 'ok') break;
      const body = Wire.moneyOut.parse(outcome.body);
      const id = body.id;
      acknowledge(id);
      history.moneyOut.set(id, {
        wallet: from,
        total: minor(body.total_amount),
        applicationFee: minor(body.application_fee ?? 0),
      });
      if (op === 'cashout' && body.status === 'pending') {
        await simulate(api, history, id, random.next() < 0.85 ? 'successful' : 'failed');
      }
      break;
    }
    case 'resolution': {
      // A cashout an operator resolves failed while the provider pays it, in either order or at
      // once: the provider's answer and the ledger must agree, money never leaving twice.
      const from = random.pick(wallets.all);
      const outcome = await api.post(
        PATHS.cashout,
        { wallet_id: from, amount: amount(random, 100, 20_000), phone_number: '+23276123456' },
        key,
      );
      count(history, op, outcome);
      if (outcome.kind !== 'ok') break;
      const body = Wire.moneyOut.parse(outcome.body);
      acknowledge(body.id);
      history.moneyOut.set(body.id, {
        wallet: from,
        total: minor(body.total_amount),
        applicationFee: minor(body.application_fee ?? 0),
      });
      if (body.status !== 'pending') break;
      const resolve = () =>
        admin!.post(PATHS.resolve(body.id), {
          outcome: 'failed',
          reason: 'Chaos: the provider says it never paid',
          operator: 'chaos',
        });
      const pay = async () => {
        const paid = await api.post(PATHS.simulate, {
          transaction_id: body.id,
          status: 'successful',
        });
        count(history, 'simulate', paid);
        return paid;
      };
      // Each order: the operator first, the provider first, or both at once.
      const order = random.int(0, 2);
      let resolved: Outcome;
      let paid: Outcome;
      if (order === 0) {
        resolved = await resolve();
        paid = await pay();
      } else if (order === 1) {
        paid = await pay();
        resolved = await resolve();
      } else {
        [resolved, paid] = await Promise.all([resolve(), pay()]);
      }
      const paidStatus = paid.kind === 'ok' ? Wire.status.safeParse(paid.body).data?.status : null;
      history.raced.set(body.id, { resolved: resolved.status, paid: paidStatus ?? null });
      if (paidStatus && paidStatus !== 'pending') history.decided.add(body.id);
      break;
    }
    case 'batch': {
      // Independent transfers, an atomic batch of them, or cashouts; some items decline.
      const roll = random.next();
      const kind = roll < 0.75 ? 'transfer' : 'mobile_money_cashout';
      const atomic = roll >= 0.45 && roll < 0.75;
      const items = Array.from({ length: random.int(2, 5) }, (_, i) => {
        const from = random.pick(wallets.all);
        const reference = `${key}-${i}`;
        if (kind === 'mobile_money_cashout') {
          return {
            wallet_id: from,
            // As a single cashout's: now and then refused by the sandbox provider, or too much.
            amount:
              random.next() < 0.1
                ? Number(SANDBOX_REFUSED_CASHOUT_AMOUNT)
                : amount(random, 100, 20_000),
            phone_number: '+23276123456',
            reference,
          };
        }
        return {
          from_wallet_id: from,
          to_wallet_id: random.pick(wallets.all.filter((w) => w !== from)),
          amount: major(amount(random, 1, 3_000)),
          reference,
        };
      });
      const outcome = await api.post(PATHS.batches, { kind, atomic, items }, key);
      count(history, op, outcome);
      if (outcome.kind !== 'ok') break;
      const batch = Wire.batch.parse(outcome.body);
      history.batches.set(batch.id, { kind, atomic, total: items.length });
      break;
    }
    case 'card_deposit': {
      const fails = random.next() < 0.2;
      const body = {
        wallet_id: wallet,
        amount: major(random.int(100, 50_000)),
        payment_method_id: fails ? REFUND_FAILS : 'pm_card_visa',
      };
      const outcome = await api.post(PATHS.cardDeposit, body, key);
      count(history, op, outcome);
      if (outcome.kind !== 'ok') break;
      const reply = Wire.cardDeposit.parse(outcome.body);
      acknowledge(reply.id);
      const credited = minor(reply.amount);
      history.deposits.set(reply.id, {
        wallet,
        amount: credited,
        applicationFee: minor(reply.application_fee ?? 0),
      });
      if (reply.status === 'completed') {
        history.cardDeposits.set(reply.id, { wallet, amount: credited, refundFails: fails });
      }
      break;
    }
    case 'card_refund': {
      const depositId = random.pick([...history.cardDeposits.keys()]);
      const deposit = history.cardDeposits.get(depositId)!;
      // None: all that is left; now and then more than the deposit credited (a 400).
      const roll = random.next();
      const body =
        roll < 0.2
          ? {}
          : {
              amount: major(
                roll < 0.3
                  ? Number(deposit.amount) + random.int(1, 1_000)
                  : random.int(1, Math.max(1, Math.floor(Number(deposit.amount) / 2))),
              ),
            };
      const outcome = await api.post(`/api/v1/transactions/${depositId}/refund`, body, key);
      count(history, op, outcome);
      if (outcome.kind !== 'ok') break;
      const reply = Wire.refund.parse(outcome.body);
      acknowledge(reply.id);
      history.moneyOut.set(reply.id, {
        wallet: deposit.wallet,
        total: minor(reply.amount),
        applicationFee: 0n,
      });
      history.refundEnds.set(reply.id, deposit.refundFails ? 'failed' : 'completed');
      // The sandbox decided it: a failing refund reads failed a moment later.
      if (reply.status === 'pending') history.decided.add(reply.id);
      break;
    }
    case 'dispute': {
      const depositId = random.pick([...history.cardDeposits.keys()]);
      const deposit = history.cardDeposits.get(depositId)!;
      const roll = random.next();
      const amount =
        roll < 0.3
          ? undefined
          : roll < 0.4
            ? Number(deposit.amount) + random.int(1, 1_000)
            : random.int(1, Math.max(1, Math.floor(Number(deposit.amount) / 3)));
      // Now and then the wallet first spends all it holds: the dispute is partly or wholly uncovered.
      if (random.next() < 0.2) await drain(api, history, deposit.wallet, random, wallets, key);
      const outcome = await api.post(
        PATHS.simulateDispute,
        { transaction_id: depositId, ...(amount !== undefined && { amount: major(amount) }) },
        key,
      );
      count(history, op, outcome);
      if (outcome.kind !== 'ok') break;
      const opened = Wire.dispute.parse(outcome.body);
      const record = {
        deposit: depositId,
        wallet: opened.wallet_id,
        amount: minor(opened.amount),
        reserved: minor(opened.reserved_amount),
        outcome: null as string | null,
      };
      history.disputes.set(opened.id, record);
      if (random.next() < 0.6) {
        const evidence = await api.post(`/api/v1/disputes/${opened.id}/evidence`, {
          text: `Delivered, receipt ${key}`,
        });
        count(history, 'evidence', evidence);
      }
      if (random.next() < 0.75) {
        // Alternate, so that even a short run on a slow machine sees both outcomes.
        const status = history.disputes.size % 2 === 1 ? 'won' : 'lost';
        const closed = await api.post(PATHS.simulateDisputeOutcome, {
          dispute_id: opened.id,
          status,
        });
        count(history, 'dispute_outcome', closed);
        if (closed.kind === 'ok') record.outcome = Wire.dispute.parse(closed.body).status;
      }
      break;
    }
  }
  return op;
}

/** Transfers all that `wallet` holds (as its balance reads now) to another wallet. */
async function drain(
  api: ChaosClient,
  history: History,
  wallet: string,
  random: Random,
  wallets: Wallets,
  key: string,
): Promise<void> {
  const read = await api.get('/api/v1/wallets/?per_page=100');
  const listed = read.kind === 'ok' ? Wire.wallets.parse(read.body) : [];
  const held = minor(listed.find((w) => w.id === wallet)?.balance ?? 0);
  if (held <= 0n) return;
  const outcome = await api.post(
    PATHS.transfer,
    {
      from_wallet_id: wallet,
      to_wallet_id: random.pick(wallets.all.filter((w) => w !== wallet)),
      amount: major(Number(held)),
    },
    `${key}-drain`,
  );
  count(history, 'transfer', outcome);
  if (outcome.kind === 'ok') history.acknowledged.set(Wire.id.parse(outcome.body).id, 'transfer');
}

/** An acknowledged deposit: what the payer pays in (amount and application fee). */
export function recordDeposit(history: History, wallet: string, reply: Json): string {
  const { transaction_id: id, transaction } = Wire.deposit.parse(reply);
  history.acknowledged.set(id, 'deposit');
  history.deposits.set(id, {
    wallet,
    amount: BigInt(transaction.amount),
    applicationFee: BigInt(transaction.application_fee),
  });
  return id;
}

export async function simulate(
  api: ChaosClient,
  history: History,
  transactionId: string,
  status: 'successful' | 'failed',
): Promise<void> {
  const outcome = await api.post(PATHS.simulate, { transaction_id: transactionId, status });
  count(history, 'simulate', outcome);
  // Settled in the answer: it must stay settled (a pending answer is the reconciliation's).
  const settled = outcome.kind === 'ok' && Wire.status.safeParse(outcome.body).data?.status;
  if (settled && settled !== 'pending') history.decided.add(transactionId);
}

/** Users with wallets, some onboarded for card payouts, each funded by a paid deposit. */
export async function setUpWallets(options: {
  api: ChaosClient;
  history: History;
  count: number;
  payable: number;
  runId: string;
  /** False: the wallets start empty. */
  fund?: boolean;
}): Promise<Wallets> {
  const { api, history, runId } = options;
  const wallets: Wallets = { all: [], payable: [] };
  const must = (what: string, outcome: Outcome): Json => {
    if (outcome.kind !== 'ok') throw new Error(`set-up ${what}: ${JSON.stringify(outcome)}`);
    return outcome.body;
  };
  for (let i = 0; i < options.count; i++) {
    const user = must(
      'user',
      await api.post('/api/v1/users/create/', {
        app_user_id: `${runId}-u${i}`,
        name: `Chaos ${i}`,
        phone_number: '+23276000000',
      }),
    );
    const userId = Wire.id.parse(user).id;
    const wallet = must('wallet', await api.post(`/api/v1/wallets/create/${userId}/`, undefined));
    const id = Wire.id.parse(wallet).id;
    wallets.all.push(id);
    if (i < options.payable) {
      must(
        'onboarding',
        await api.post(
          PATHS.onboarding,
          { wallet_id: id, ...VERIFIED_OWNER },
          undefined,
          CUSTOMER_ADDRESS,
        ),
      );
      wallets.payable.push(id);
    }
    if (options.fund === false) continue;
    const deposit = await api.post(
      PATHS.deposit,
      { wallet_id: id, amount: 5_000_000 },
      `${runId}-fund-${i}`,
    );
    count(history, 'deposit', deposit);
    const depositId = recordDeposit(history, id, must('deposit', deposit));
    await simulate(api, history, depositId, 'successful');
  }
  return wallets;
}
