import { randomUUID } from 'node:crypto';
import { WorkflowClient } from '@temporalio/client';
import { sql } from 'slonik';
import { z } from 'zod';
import { createActivities } from '../../src/activities';
import { ERROR_MESSAGES } from '../../src/api/errors';
import { PAYOUTS_NOT_ENABLED } from '../../src/db/payout-accounts';
import { insertPendingDeposit } from '../../src/activities/deposit';
import { createEscrowActivities } from '../../src/activities/escrow';
import { createTransferActivities } from '../../src/activities/transfer';
import { holdGuard, releaseGuard } from '../../src/db/escrow';
import {
  firstBrokenRule,
  HOLD_FIELDS,
  WALLET_FIELDS,
  type MoneyStepGuard,
} from '../../src/db/money-rules';
import { findTransaction, insertTransaction } from '../../src/db/transactions';
import { transferGuard } from '../../src/db/transfers';
import { setWalletActive } from '../../src/db/wallets';
import type { Currency } from '../../src/domain/money';
import { decide, MONEY_STEPS, type MoneyStep, type Value } from '../../src/domain/money-rules';
import { createProviders } from '../../src/providers';
import { WORKFLOW_ID_PREFIXES } from '../../src/workflows/ids';
import type { HoldInput, TransferInput } from '../../src/workflows/shared';
import { fundWallet, statementsOf } from '../support/database';
import { createUserWithWallet, type ApiClient, type Reply } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import {
  answerOfActivity,
  answerOfGuard,
  answerOfReply,
  writtenState,
  type Answer,
} from '../support/money-rules';
import { onboardForPayouts } from '../support/payouts';
import { pollUntil } from '../support/wait';

/**
 * One definition per money rule (docs/architecture.md "Money rules"): every decline of every step,
 * through the API, a bulk payment's item, the activity's usual way, the guard statement alone and
 * the activity trying the statement first, answers the same status and `detail`, writing nothing.
 */
const engine = useTestEngine();
const { app, api } = useTestApp(engine, { currency: 'USD' });
const { api: other } = useTestApp(engine, { currency: 'USD' });
let activities: ReturnType<typeof createActivities>;

/** The wallets of the table, by what they are. */
const w = {} as Record<
  'funded' | 'recipient' | 'disabled' | 'foreign' | 'legacy' | 'missing' | 'onboarded' | 'stranded',
  string
>;
let escrowAccount: string;
/**
 * Card deposits to refund, by what is wrong with refunding them: each with the wallet it
 * credited (`wallet`) and its amount in minor units.
 */
const deposits = {} as Record<
  | 'refundable'
  | 'refunded'
  | 'spent'
  | 'disabled'
  | 'legacy'
  | 'foreign'
  | 'hold'
  | 'missing'
  | 'walletMissing'
  | 'walletForeign',
  { id: string; wallet: string; amount: bigint }
>;
/** A hold of 20.00 naming `recipient`, one naming no one, and one refunded. */
const holds = {} as Record<
  'named' | 'anyone' | 'refunded' | 'stranded',
  { id: string; input: HoldInput }
>;
/** Wallet currencies and system accounts, as a worker that has seen them remembers them. */
const currencies = new Map<string, Currency>();
const systemAccounts = new Map<string, string>();
let remembering: ReturnType<typeof createEscrowActivities>;
/** Transactions a dispute may be asked of: a card deposit (ours, another's, pending), a transfer. */
const disputable = {} as Record<'card' | 'foreign' | 'pending' | 'transfer' | 'missing', string>;

/** A card deposit of 12.50 for the dispute cases (`pm_card_authenticationRequired`: pending). */
async function disputableDeposit(
  client: ApiClient,
  paymentMethodId = 'pm_card_visa',
): Promise<string> {
  const { walletId } = await createUserWithWallet(client);
  const res = await client.post('/api/v1/transactions/wallet/card-deposit', {
    wallet_id: walletId,
    amount: 12.5,
    payment_method_id: paymentMethodId,
  });
  if (res.status !== 200) throw new Error(`card deposit: ${res.status}`);
  return res.body.id as string;
}

async function wallet(client: ApiClient, fund = 0n): Promise<string> {
  const { walletId } = await createUserWithWallet(client);
  if (fund > 0n) await fundWallet(engine.pool, walletId, fund);
  return walletId;
}

async function apiHold(body: Record<string, unknown>): Promise<{ id: string; input: HoldInput }> {
  const res = await api.post('/api/v1/escrow/hold', body);
  if (res.status !== 200) throw new Error(`hold: ${res.status} ${JSON.stringify(res.body)}`);
  const input: HoldInput = {
    holdId: res.body.id as string,
    applicationId: app.id,
    mode: 'test',
    walletId: body.wallet_id as string,
    amount: '2000',
    description: '',
    recipientWalletId: (body.recipient_wallet_id as string | undefined) ?? null,
    expiresAt: null,
  };
  return { id: input.holdId, input };
}

beforeAll(async () => {
  w.funded = await wallet(api, 10_000n);
  w.recipient = await wallet(api);
  w.disabled = await wallet(api, 10_000n);
  await setWalletActive(engine.pool, w.disabled, false);
  w.foreign = await wallet(other, 10_000n);
  // Left in SLE by data from before the currency rule.
  w.legacy = await wallet(api);
  await engine.pool.query(
    sql.unsafe`UPDATE ledger_accounts SET currency = 'SLE' WHERE id = ${w.legacy}`,
  );
  await fundWallet(engine.pool, w.legacy, 10_000n);
  w.missing = randomUUID();
  w.onboarded = await wallet(api);
  const onboarded = await onboardForPayouts(api, w.onboarded);
  if (onboarded.status !== 200) throw new Error(`onboarding: ${onboarded.status}`);

  activities = createActivities({
    pool: engine.pool,
    config: engine.config,
    providers: createProviders({ config: engine.config, pool: engine.pool }),
  });
  holds.named = await apiHold({
    wallet_id: w.funded,
    amount: 20,
    recipient_wallet_id: w.recipient,
  });
  holds.anyone = await apiHold({ wallet_id: w.funded, amount: 20 });
  holds.refunded = await apiHold({
    wallet_id: w.funded,
    amount: 20,
    recipient_wallet_id: w.recipient,
  });
  escrowAccount = await engine.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM ledger_accounts WHERE application_id = ${app.id} AND mode = 'test'
      AND kind = 'escrow' AND currency = 'USD'`);
  // A process that has seen the escrow account, the application's fee and the holds.
  remembering = createEscrowActivities({
    pool: engine.pool,
    systemAccounts,
    walletCurrencies: currencies,
  });
  await remembering.holdFunds({ ...holds.named.input, holdId: randomUUID(), amount: '1' });
  await answerOfActivity(
    remembering.releaseFunds({
      holdId: holds.named.id,
      releaseId: randomUUID(),
      recipientWalletId: w.missing,
      amount: null,
    }),
  );
  await rememberHold(holds.refunded);
  const refund = await api.post(`/api/v1/escrow/${holds.refunded.id}/refund`, {});
  if (refund.status !== 200) throw new Error(`refund: ${refund.status}`);
  await cardDeposits();
  // A sender emptied by its hold, then left in SLE (as data from before the rule could be).
  w.stranded = await wallet(api, 2_000n);
  holds.stranded = await apiHold({ wallet_id: w.stranded, amount: 20 });
  await engine.pool.query(
    sql.unsafe`UPDATE ledger_accounts SET currency = 'SLE' WHERE id = ${w.stranded}`,
  );
  disputable.card = await disputableDeposit(api);
  disputable.foreign = await disputableDeposit(other);
  disputable.pending = await disputableDeposit(api, 'pm_card_authenticationRequired');
  const { walletId: payer } = await createUserWithWallet(api);
  await fundWallet(engine.pool, payer, 500n);
  const moved = await api.post('/api/v1/transactions/wallet/transfer', {
    from_wallet_id: payer,
    to_wallet_id: w.recipient,
    amount: 1,
  });
  disputable.transfer = moved.body.id as string;
  disputable.missing = randomUUID();
});

/** A completed card deposit of 10.00 into a new wallet of `client`'s application. */
async function cardDeposit(client: ApiClient) {
  const wallet = await createUserWithWallet(client).then((u) => u.walletId);
  const res = await client.post('/api/v1/transactions/wallet/card-deposit', {
    wallet_id: wallet,
    amount: 10,
    payment_method_id: 'pm_card_visa',
  });
  if (res.body?.status !== 'completed') throw new Error(`card deposit: ${res.status}`);
  return { id: res.body.id as string, wallet, amount: 1_000n };
}

/** A completed card deposit's row crediting `wallet` (no money moved: data as it may be). */
async function depositRow(wallet: string) {
  const id = randomUUID();
  await insertTransaction(engine.pool, {
    id,
    applicationId: app.id,
    mode: 'test',
    type: 'card_deposit',
    status: 'completed',
    currency: 'USD',
    amount: 1_000n,
    walletId: wallet,
    providerReference: `pi_parity_${id}`,
  });
  return { id, wallet, amount: 1_000n };
}

async function cardDeposits() {
  deposits.refundable = await cardDeposit(api);
  deposits.refunded = await cardDeposit(api);
  const all = await api.post(`/api/v1/transactions/${deposits.refunded.id}/refund`, {});
  if (all.body?.status !== 'completed') throw new Error(`refund: ${all.status}`);
  deposits.spent = await cardDeposit(api);
  const spent = await api.post('/api/v1/transactions/wallet/transfer', {
    from_wallet_id: deposits.spent.wallet,
    to_wallet_id: w.recipient,
    amount: 8,
  });
  if (spent.status !== 200) throw new Error(`transfer: ${spent.status}`);
  deposits.disabled = await cardDeposit(api);
  await setWalletActive(engine.pool, deposits.disabled.wallet, false);
  deposits.legacy = await cardDeposit(api);
  await engine.pool.query(
    sql.unsafe`UPDATE ledger_accounts SET currency = 'SLE' WHERE id = ${deposits.legacy.wallet}`,
  );
  deposits.foreign = await cardDeposit(other);
  const hold = holds.anyone;
  deposits.hold = { id: hold.id, wallet: hold.input.walletId, amount: 2_000n };
  deposits.missing = { id: randomUUID(), wallet: w.funded, amount: 1_000n };
  // Rows no request could write: a deposit crediting a ledger account that is no wallet, and
  // one crediting another application's wallet.
  deposits.walletMissing = await depositRow(escrowAccount);
  deposits.walletForeign = await depositRow(w.foreign);
}

/** `remembering` reads the hold (its retried step finds it made): it remembers it as held. */
const rememberHold = (hold: { input: HoldInput }) => remembering.holdFunds(hold.input);

/** The steps that may be tried in one statement, by the name of the statement's check. */
async function atOnce(run: () => Promise<unknown>, checked: string) {
  let answer: Answer | undefined;
  const sent = await statementsOf(async () => (answer = await answerOfActivity(run())));
  // The statement was tried (and wrote nothing: the caller compares what is written).
  expect(sent.some((s) => s.text.includes(`${checked} AS (`))).toBe(true);
  return answer!;
}

async function guardAnswer(step: MoneyStep<string, string>, guard: MoneyStepGuard) {
  const { answer, ok } = await answerOfGuard(engine.pool, step, guard);
  expect(ok).toBe(false);
  return answer;
}

const NOT_FOUND = { status: 404, detail: 'Wallet not found' };
const FORBIDDEN = { status: 403, detail: 'You do not have permission to access this wallet' };
const DISABLED = { status: 403, detail: 'Wallet is disabled' };
const MISMATCH = { status: 400, detail: 'Wallets hold different currencies' };
const FUNDS = { status: 400, detail: 'Insufficient funds' };
const EXCEEDS = { status: 400, detail: 'Refund amount exceeds the refundable amount' };
const NOT_HELD = { status: 400, detail: 'The escrow transaction is not in held status' };

type Paths = Partial<
  Record<'api' | 'batch' | 'activity' | 'guard' | 'atOnce', () => Promise<Answer | null>>
>;
type Case = {
  step: keyof typeof MONEY_STEPS;
  name: string;
  expected: Answer;
  paths: () => Paths;
};

const reply = (run: Promise<Reply>) => run.then(answerOfReply);

/**
 * The payment workflows `run` started or sent an update to (by workflow id), through any client
 * of this process: the API's, and the worker's it starts eagerly with.
 */
async function workflowsStarted<T>(
  run: () => Promise<T>,
): Promise<{ result: T; started: string[] }> {
  const client = WorkflowClient.prototype;
  const spies = {
    start: jest.spyOn(client, 'start'),
    withStart: jest.spyOn(client, 'executeUpdateWithStart'),
    handle: jest.spyOn(client, 'getHandle'),
  };
  try {
    const result = await run();
    const started = [
      ...spies.start.mock.calls.map(([, options]) => options.workflowId),
      ...spies.withStart.mock.calls.map(
        ([, options]) => options.startWorkflowOperation.options.workflowId,
      ),
      // An escrow release or refund is an update of its hold's workflow.
      ...spies.handle.mock.calls
        .map(([id]) => id)
        .filter((id) => id.startsWith(WORKFLOW_ID_PREFIXES.escrow)),
    ];
    return { result, started };
  } finally {
    for (const spy of Object.values(spies)) spy.mockRestore();
  }
}

/** The one item of a bulk payment (docs/api.md, Bulk payments): what it ended with. */
async function batchItem(kind: string, item: Record<string, unknown>): Promise<Answer> {
  const started = await api.post('/api/v1/batches', { kind, items: [item] });
  if (started.status !== 202) return answerOfReply(started);
  const batch = `/api/v1/batches/${started.body.id as string}`;
  await pollUntil(
    () => api.get(batch),
    (r) => r.body.status !== 'processing',
    { timeoutMs: 30_000, intervalMs: 50 },
  );
  const items = await api.get<{ data: Array<{ error: Answer | null }> }>(`${batch}/items`);
  return items.body.data[0]?.error ?? { status: 200, detail: 'succeeded' };
}

// -- transfer ------------------------------------------------------------------------------------

function transferCase(
  name: string,
  from: keyof typeof w,
  to: keyof typeof w,
  expected: Answer,
  amount = 10,
): Case {
  return {
    step: 'transfer',
    name,
    expected,
    paths: () => {
      const input = (): TransferInput => ({
        transactionId: randomUUID(),
        applicationId: app.id,
        mode: 'test',
        fromWalletId: w[from],
        toWalletId: w[to],
        amount: (amount * 100).toString(),
        description: '',
      });
      const remembered = () => {
        // Remembered in the application's currency: the statement is tried, its guard refuses.
        currencies.set(w[from], 'USD').set(w[to], 'USD');
        return createTransferActivities({ pool: engine.pool, walletCurrencies: currencies });
      };
      return {
        api: () =>
          reply(
            api.post('/api/v1/transactions/wallet/transfer', {
              from_wallet_id: w[from],
              to_wallet_id: w[to],
              amount,
            }),
          ),
        activity: () =>
          answerOfActivity(createTransferActivities({ pool: engine.pool }).transferFunds(input())),
        guard: () =>
          guardAnswer(
            MONEY_STEPS.transfer,
            transferGuard({ ...input(), currency: 'USD', amount: BigInt(amount * 100) }),
          ),
        atOnce: () => atOnce(() => remembered().transferFunds(input()), 'transfer_checked'),
        batch: () =>
          batchItem('transfer', { from_wallet_id: w[from], to_wallet_id: w[to], amount }),
      };
    },
  };
}

// -- hold ----------------------------------------------------------------------------------------

function holdCase(
  name: string,
  sender: keyof typeof w,
  recipient: keyof typeof w | null,
  expected: Answer,
  amount = 10,
): Case {
  return {
    step: 'hold',
    name,
    expected,
    paths: () => {
      const input = (): HoldInput => ({
        holdId: randomUUID(),
        applicationId: app.id,
        mode: 'test',
        walletId: w[sender],
        amount: (amount * 100).toString(),
        description: '',
        recipientWalletId: recipient && w[recipient],
        expiresAt: null,
      });
      return {
        api: () =>
          reply(
            api.post('/api/v1/escrow/hold', {
              wallet_id: w[sender],
              amount,
              ...(recipient && { recipient_wallet_id: w[recipient] }),
            }),
          ),
        activity: () =>
          answerOfActivity(createEscrowActivities({ pool: engine.pool }).holdFunds(input())),
        guard: () =>
          guardAnswer(
            MONEY_STEPS.hold,
            holdGuard({
              ...input(),
              escrowAccountId: escrowAccount,
              currency: 'USD',
              amount: BigInt(amount * 100),
            }),
          ),
        atOnce: () => {
          currencies.set(w[sender], 'USD');
          return atOnce(() => remembering.holdFunds(input()), 'hold_checked');
        },
      };
    },
  };
}

// -- release and refund --------------------------------------------------------------------------

function releaseCase(
  name: string,
  hold: keyof typeof holds,
  recipient: keyof typeof w,
  expected: Answer,
  amount: number | null = null,
  paths: readonly (keyof Paths)[] = ['api', 'activity', 'guard', 'atOnce'],
): Case {
  return {
    step: 'release',
    name,
    expected,
    paths: () => {
      const { id } = holds[hold];
      const minor = amount === null ? null : BigInt(Math.round(amount * 100));
      const input = () => ({
        holdId: id,
        releaseId: randomUUID(),
        recipientWalletId: w[recipient],
        amount: minor?.toString() ?? null,
      });
      const all: Paths = {
        api: () =>
          reply(
            api.post(`/api/v1/escrow/${id}/release`, {
              recipient_wallet_id: w[recipient],
              ...(amount !== null && { amount }),
            }),
          ),
        activity: () =>
          answerOfActivity(createEscrowActivities({ pool: engine.pool }).releaseFunds(input())),
        guard: async () => {
          const row = (await findTransaction(engine.pool, id))!;
          return guardAnswer(
            MONEY_STEPS.release,
            releaseGuard({
              releaseId: randomUUID(),
              hold: row,
              recipientWalletId: w[recipient],
              amount: minor,
              feeAccountId: null,
              fee: { bps: 0, fixed: 0n },
            }),
          );
        },
        atOnce: async () => {
          // The refunded hold is remembered as held from before its refund (another process's).
          if (hold === 'named') await rememberHold(holds.named);
          return atOnce(() => remembering.releaseFunds(input()), 'release_checked');
        },
      };
      return Object.fromEntries(paths.map((p) => [p, all[p]]));
    },
  };
}

// -- deposits and money out ----------------------------------------------------------------------

function depositCase(name: string, target: keyof typeof w, expected: Answer): Case[] {
  const input = () => ({
    transactionId: randomUUID(),
    applicationId: app.id,
    mode: 'test' as const,
    walletId: w[target],
  });
  const pending = (i: ReturnType<typeof input>) =>
    insertPendingDeposit(engine.pool, i, 'USD', {
      ...i,
      id: i.transactionId,
      type: 'card_deposit',
      status: 'pending',
      currency: 'USD',
      amount: 1_000n,
    });
  return [
    {
      step: 'deposit',
      name: `mobile money: ${name}`,
      expected,
      paths: () => ({
        api: () =>
          reply(
            api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
              wallet_id: w[target],
              amount: 10_000,
            }),
          ),
        activity: () => answerOfActivity(activities.openDeposit({ ...input(), amount: '10000' })),
        // The pending record's own statement, written only where the rules hold.
        guard: () => answerOfActivity(pending(input())),
      }),
    },
    {
      step: 'deposit',
      name: `card: ${name}`,
      expected,
      paths: () => ({
        api: () =>
          reply(
            api.post('/api/v1/transactions/wallet/card-deposit', {
              wallet_id: w[target],
              amount: 12.5,
              payment_method_id: 'pm_card_visa',
            }),
          ),
        activity: () =>
          answerOfActivity(
            activities.openCardDeposit({
              ...input(),
              amount: '1250',
              paymentMethodId: 'pm_card_visa',
            }),
          ),
      }),
    },
  ];
}

function moneyOutCase(name: string, target: keyof typeof w, expected: Answer): Case[] {
  const input = () => ({
    transactionId: randomUUID(),
    applicationId: app.id,
    mode: 'test' as const,
    walletId: w[target],
  });
  return [
    {
      step: 'moneyOutReserve',
      name: `cashout: ${name}`,
      expected,
      paths: () => ({
        api: () =>
          reply(
            api.post('/api/v1/transactions/wallet/mobile-money-cashout', {
              wallet_id: w[target],
              amount: 10_000,
              phone_number: '+23276123456',
            }),
          ),
        activity: () =>
          answerOfActivity(
            activities.reserveMoneyOut({
              ...input(),
              kind: 'cashout',
              amount: '10000',
              destination: { phone_number: '+23276123456' },
            }),
          ),
        batch: () =>
          batchItem('mobile_money_cashout', {
            wallet_id: w[target],
            amount: 10_000,
            phone_number: '+23276123456',
          }),
      }),
    },
    {
      step: 'moneyOutReserve',
      name: `card payout: ${name}`,
      expected,
      paths: () => ({
        api: () =>
          reply(
            api.post('/api/v1/transactions/wallet/card-payout', {
              wallet_id: w[target],
              amount: 25,
            }),
          ),
        activity: () =>
          answerOfActivity(
            activities.reserveMoneyOut({
              ...input(),
              kind: 'payout',
              amount: '2500',
              destination: { account_id: 'acct_parity' },
            }),
          ),
        batch: () => batchItem('card_payout', { wallet_id: w[target], amount: 25 }),
      }),
    },
  ];
}

// -- dispute opening -----------------------------------------------------------------------------

function disputeCase(
  name: string,
  transaction: keyof typeof disputable,
  expected: Answer,
  amount: number | null = null,
  paths: readonly (keyof Paths)[] = ['api', 'activity'],
): Case {
  return {
    step: 'disputeOpen',
    name,
    expected,
    paths: () => {
      const all: Paths = {
        api: () =>
          reply(
            api.post('/api/v1/testing/simulate-dispute', {
              transaction_id: disputable[transaction],
              ...(amount !== null && { amount }),
            }),
          ),
        activity: () =>
          answerOfActivity(
            activities.openDispute({
              disputeId: randomUUID(),
              applicationId: app.id,
              mode: 'test',
              transactionId: disputable[transaction],
              amount: amount === null ? null : Math.round(amount * 100).toString(),
              reason: 'general',
              evidenceDueBy: new Date(Date.now() + 86_400_000).toISOString(),
              providerDisputeId: null,
            }),
          ),
      };
      return Object.fromEntries(paths.map((p) => [p, all[p]]));
    },
  };
}

// -- card refunds -------------------------------------------------------------------------------

/** A refund of `amount` major units (absent: all that is left) through the API and the reserve. */
function cardRefundCase(
  name: string,
  deposit: keyof typeof deposits,
  expected: Answer,
  amount?: number,
): Case {
  return {
    step: 'cardRefund',
    name,
    expected,
    paths: () => {
      const { id, wallet, amount: credited } = deposits[deposit];
      return {
        api: () =>
          reply(
            api.post(`/api/v1/transactions/${id}/refund`, amount === undefined ? {} : { amount }),
          ),
        // The API names the amount it found left when the request names none: all of it.
        activity: () =>
          answerOfActivity(
            activities.reserveMoneyOut({
              kind: 'refund',
              transactionId: randomUUID(),
              applicationId: app.id,
              mode: 'test',
              walletId: wallet,
              amount: (amount === undefined ? credited : BigInt(amount * 100)).toString(),
              destination: { deposit_id: id },
            }),
          ),
      };
    },
  };
}

const TOO_SMALL = { status: 422, detail: 'amount: too small to convert to the base currency' };

/** A mobile-money amount of 5 SLE cents, less than a cent of the USD application's currency. */
function tooSmallCases(name: string, target: keyof typeof w, expected: Answer): Case[] {
  const input = () => ({
    transactionId: randomUUID(),
    applicationId: app.id,
    mode: 'test' as const,
    walletId: w[target],
    amount: '5',
  });
  const phone = '+23276123456';
  return [
    {
      step: 'deposit',
      name: `mobile money: ${name}`,
      expected,
      paths: () => ({
        api: () =>
          reply(
            api.post('/api/v1/transactions/wallet/mobile-money-deposit', {
              wallet_id: w[target],
              amount: 5,
            }),
          ),
        activity: () => answerOfActivity(activities.openDeposit(input())),
      }),
    },
    {
      step: 'moneyOutReserve',
      name: `cashout: ${name}`,
      expected,
      paths: () => ({
        api: () =>
          reply(
            api.post('/api/v1/transactions/wallet/mobile-money-cashout', {
              wallet_id: w[target],
              amount: 5,
              phone_number: phone,
            }),
          ),
        activity: () =>
          answerOfActivity(
            activities.reserveMoneyOut({
              ...input(),
              kind: 'cashout',
              destination: { phone_number: phone },
            }),
          ),
      }),
    },
  ];
}

const CASES: Case[] = [
  transferCase('the same wallet on both sides', 'funded', 'funded', {
    status: 400,
    detail: 'Cannot transfer to the same wallet',
  }),
  transferCase('a missing sender', 'missing', 'recipient', NOT_FOUND),
  transferCase('a missing recipient', 'funded', 'missing', NOT_FOUND),
  transferCase('another application’s sender', 'foreign', 'recipient', FORBIDDEN),
  transferCase(
    'another application’s recipient, though the sender is disabled',
    'disabled',
    'foreign',
    FORBIDDEN,
  ),
  transferCase('a disabled sender', 'disabled', 'recipient', DISABLED),
  transferCase('a disabled recipient', 'funded', 'disabled', DISABLED),
  transferCase('a sender in another currency', 'legacy', 'recipient', MISMATCH),
  transferCase('a recipient in another currency', 'funded', 'legacy', MISMATCH),
  transferCase('more than the balance', 'recipient', 'funded', FUNDS),

  holdCase('a missing sender', 'missing', null, NOT_FOUND),
  holdCase('another application’s sender', 'foreign', null, FORBIDDEN),
  holdCase('a disabled sender', 'disabled', null, DISABLED),
  holdCase('a missing recipient', 'funded', 'missing', NOT_FOUND),
  holdCase('another application’s recipient', 'funded', 'foreign', FORBIDDEN),
  holdCase('a disabled recipient', 'funded', 'disabled', DISABLED),
  holdCase('a sender in another currency', 'legacy', null, MISMATCH),
  holdCase('a recipient in another currency', 'funded', 'legacy', MISMATCH),
  holdCase('the sender named as the recipient', 'funded', 'funded', {
    status: 400,
    detail: 'The recipient cannot be the sender',
  }),
  holdCase('more than the balance', 'recipient', null, FUNDS),

  releaseCase('a hold refunded already', 'refunded', 'recipient', NOT_HELD),
  releaseCase(
    'no recipient, the hold naming none',
    'anyone',
    'missing',
    { status: 422, detail: 'recipient_wallet_id: required (the hold names no recipient)' },
    null,
    [],
  ),
  releaseCase('a missing recipient', 'named', 'missing', NOT_FOUND),
  releaseCase('another application’s recipient', 'named', 'foreign', FORBIDDEN),
  releaseCase('a disabled recipient', 'named', 'disabled', DISABLED),
  releaseCase('a recipient in another currency', 'named', 'legacy', MISMATCH),
  // An amount the remembered hold cannot pay is not tried in one statement.
  releaseCase(
    'more than is held',
    'named',
    'recipient',
    { status: 400, detail: 'Release amount exceeds the held amount' },
    30,
    ['api', 'activity', 'guard'],
  ),
  // The API refuses such an amount by its schema (422 naming the field) before any rule.
  releaseCase(
    'an amount not above 0',
    'named',
    'recipient',
    { status: 422, detail: 'amount must be greater than 0' },
    0,
    ['activity', 'guard'],
  ),

  {
    step: 'refund',
    name: 'a hold refunded already',
    expected: NOT_HELD,
    paths: () => ({
      api: () => reply(api.post(`/api/v1/escrow/${holds.refunded.id}/refund`, {})),
      activity: () =>
        answerOfActivity(
          createEscrowActivities({ pool: engine.pool }).refundFunds({
            holdId: holds.refunded.id,
            refundId: randomUUID(),
            reason: 'requested',
          }),
        ),
    }),
  },

  {
    step: 'refund',
    name: 'to a sender now in another currency than the hold',
    expected: MISMATCH,
    paths: () => ({
      api: () => reply(api.post(`/api/v1/escrow/${holds.stranded.id}/refund`, {})),
      activity: () =>
        answerOfActivity(
          createEscrowActivities({ pool: engine.pool }).refundFunds({
            holdId: holds.stranded.id,
            refundId: randomUUID(),
            reason: 'requested',
          }),
        ),
    }),
  },

  ...depositCase('a missing wallet', 'missing', NOT_FOUND),
  ...depositCase('another application’s wallet', 'foreign', FORBIDDEN),
  ...depositCase('a disabled wallet', 'disabled', DISABLED),
  ...depositCase('a wallet in another currency', 'legacy', MISMATCH),

  ...moneyOutCase('a missing wallet', 'missing', NOT_FOUND),
  ...moneyOutCase('another application’s wallet', 'foreign', FORBIDDEN),
  ...moneyOutCase('a disabled wallet', 'disabled', DISABLED),
  ...moneyOutCase('a wallet in another currency', 'legacy', MISMATCH),
  ...moneyOutCase('more than the balance', 'onboarded', FUNDS),

  disputeCase('a missing transaction', 'missing', { status: 404, detail: 'Transaction not found' }),
  disputeCase('another application’s card deposit', 'foreign', {
    status: 403,
    detail: 'You do not have permission to access this transaction',
  }),
  disputeCase('a transfer', 'transfer', {
    status: 400,
    detail: 'Only a completed card deposit can be disputed',
  }),
  disputeCase('a card deposit still pending', 'pending', {
    status: 400,
    detail: 'Only a completed card deposit can be disputed',
  }),
  disputeCase(
    'more than is left of the deposit',
    'card',
    { status: 400, detail: 'Dispute amount exceeds the disputable amount' },
    12.51,
  ),
  // The API refuses such an amount by its schema (422 naming the field) before any rule.
  disputeCase(
    'an amount not above 0',
    'card',
    { status: 422, detail: 'amount must be greater than 0' },
    0,
    ['activity'],
  ),
  cardRefundCase('no such deposit', 'missing', { status: 404, detail: 'Transaction not found' }),
  cardRefundCase('another application’s deposit', 'foreign', {
    status: 403,
    detail: 'You do not have permission to access this transaction',
  }),
  cardRefundCase('an escrow hold, not a card deposit', 'hold', {
    status: 400,
    detail: 'Only a completed card deposit can be refunded',
  }),
  cardRefundCase('a deposit crediting no wallet', 'walletMissing', NOT_FOUND),
  cardRefundCase('a deposit crediting another application’s wallet', 'walletForeign', FORBIDDEN),
  cardRefundCase('a disabled wallet', 'disabled', DISABLED),
  cardRefundCase('a wallet now in another currency', 'legacy', MISMATCH),
  cardRefundCase('more than is left', 'refundable', EXCEEDS, 10.01),
  cardRefundCase('all that is left, nothing left', 'refunded', EXCEEDS),
  cardRefundCase('more than the wallet holds', 'spent', FUNDS, 5),
  cardRefundCase('all that is left, more than the wallet holds', 'spent', FUNDS),

  ...tooSmallCases('an amount too small to convert', 'funded', TOO_SMALL),
  // The wallet's currency is asked first, by every path.
  ...tooSmallCases('too small, and a wallet in another currency', 'legacy', MISMATCH),
];

// The "no recipient" release reaches the API only: its path is added here, by its own body.
const noRecipient = CASES.find((c) => c.name.startsWith('no recipient'))!;
noRecipient.paths = () => ({
  api: () => reply(api.post(`/api/v1/escrow/${holds.anyone.id}/release`, {})),
});

/**
 * Declines the early answer (src/api/access.ts) leaves to the step: a balance or a converted amount,
 * a hold remembered without its status, currencies of wallets remembered active, and what follows.
 */
const LEFT_TO_THE_STEP = new Set([
  'transfer: a recipient in another currency',
  'transfer: more than the balance',
  'hold: a sender in another currency',
  'hold: a recipient in another currency',
  'hold: the sender named as the recipient',
  'hold: more than the balance',
  'release: a hold refunded already',
  'release: a missing recipient',
  'release: another application’s recipient',
  'release: a disabled recipient',
  'release: a recipient in another currency',
  'release: more than is held',
  'refund: a hold refunded already',
  'refund: to a sender now in another currency than the hold',
  'moneyOutReserve: cashout: more than the balance',
  'moneyOutReserve: card payout: more than the balance',
  'cardRefund: more than the wallet holds',
  'cardRefund: all that is left, more than the wallet holds',
  'deposit: mobile money: an amount too small to convert',
  'moneyOutReserve: cashout: an amount too small to convert',
]);

describe('every decline of every money step, through every path that reaches it', () => {
  it.each(CASES.map((c) => [`${c.step}: ${c.name}`, c] as const))(
    '%s answers the same everywhere and writes nothing',
    async (_name, { expected, paths }) => {
      const accounts = [
        ...Object.values(w),
        escrowAccount,
        ...Object.values(deposits).map((d) => d.wallet),
      ];
      const before = await writtenState(engine.pool, accounts);
      const answers: Record<string, Answer | null> = {};
      let started: string[] = [];
      for (const [path, run] of Object.entries(paths())) {
        if (path !== 'api') answers[path] = await run();
        else ({ result: answers[path], started } = await workflowsStarted(run));
      }
      // The API's own decline starts nothing: only a decline it leaves to the step reaches one.
      if (!LEFT_TO_THE_STEP.has(_name)) expect(started).toEqual([]);
      const all = Object.keys(paths());
      expect(all.length).toBeGreaterThan(0);
      expect(answers).toEqual(Object.fromEntries(all.map((p) => [p, expected])));
      expect(await writtenState(engine.pool, accounts)).toEqual(before);
    },
  );

  it('leaves no decline of a step out of the table', () => {
    const covered = new Set(CASES.map((c) => `${c.step} ${c.expected.detail}`));
    const declines = Object.entries(MONEY_STEPS).flatMap(([step, rules]) =>
      rules.rules.map((rule) => `${step} ${rule.detail ?? ERROR_MESSAGES[rule.code]}`),
    );
    expect(declines.filter((d) => !covered.has(d))).toEqual([]);
  });
});

describe('the compiled rules decide as `decide` does, over every combination of facts', () => {
  const USD = { application_id: 'app-a', mode: 'test', is_active: true, currency: 'USD' };
  const variants: Record<string, Record<string, Value> | null> = {
    missing: null,
    usable: { ...USD, base_currency: 'USD', balance: 1_000n },
    foreign: { ...USD, application_id: 'app-b', base_currency: 'USD', balance: 1_000n },
    live: { ...USD, mode: 'live', base_currency: 'USD', balance: 1_000n },
    disabled: { ...USD, is_active: false, base_currency: 'USD', balance: 1_000n },
    legacy: { ...USD, currency: 'SLE', base_currency: 'USD', balance: 1_000n },
    sle: { ...USD, currency: 'SLE', base_currency: 'SLE', balance: 1_000n },
    poor: { ...USD, base_currency: 'USD', balance: 0n },
  };
  const hold = (change: object) => ({
    application_id: 'app-a',
    mode: 'test',
    status: 'held',
    currency: 'USD',
    escrow_amount: 300n,
    ...change,
  });
  const holdVariants: Record<string, Record<string, Value> | null> = {
    held: hold({}),
    ended: hold({ status: 'completed', escrow_amount: 0n }),
    sle: hold({ currency: 'SLE' }),
  };
  const TYPES: Record<string, ReturnType<typeof sql.fragment>> = {
    is_active: sql.fragment`boolean`,
    balance: sql.fragment`int8`,
    escrow_amount: sql.fragment`int8`,
  };
  const FIELDS = [...new Set([...WALLET_FIELDS, ...HOLD_FIELDS])];

  /** The step's answer in SQL, its facts a one-row relation of `<subject>_<field>` columns. */
  async function inSql(
    step: MoneyStep<string, string>,
    subjects: Record<string, Record<string, Value> | null>,
    params: Record<string, Value>,
  ) {
    const columns = Object.entries(subjects).flatMap(([subject, facts]) =>
      FIELDS.map((field) => {
        const value = field === 'id' ? (facts ? subject : null) : (facts?.[field] ?? null);
        const bound = typeof value === 'bigint' ? value.toString() : value;
        return sql.fragment`${bound}::${TYPES[field] ?? sql.fragment`text`} AS ${sql.identifier([`${subject}_${field}`])}`;
      }),
    );
    const declined = await engine.pool.oneFirst(sql.type(
      z.object({ declined: z.number().nullable() }),
    )`
      SELECT ${firstBrokenRule(step, params)} AS declined
      FROM (SELECT ${sql.join(columns, sql.fragment`, `)}) facts`);
    const rule = declined === null ? undefined : step.rules[declined];
    return rule
      ? { status: 'declined', code: rule.code, ...(rule.detail && { detail: rule.detail }) }
      : { status: 'passed' };
  }

  const withIds = (subjects: Record<string, Record<string, Value> | null>) =>
    Object.fromEntries(
      Object.entries(subjects).map(([name, facts]) => [name, facts && { ...facts, id: name }]),
    );

  async function agree(
    step: MoneyStep<string, string>,
    subjects: Record<string, Record<string, Value> | null>,
    params: Record<string, Value>,
  ) {
    const facts = { subjects: withIds(subjects), params };
    expect({ subjects, params, answer: await inSql(step, subjects, params) }).toEqual({
      subjects,
      params,
      answer: decide(step, facts),
    });
  }

  const base = { applicationId: 'app-a', mode: 'test' };

  it('for a transfer', async () => {
    for (const from of Object.values(variants)) {
      for (const to of Object.values(variants)) {
        for (const toWalletId of ['from', 'to']) {
          const params = { ...base, fromWalletId: 'from', toWalletId, amount: 500n };
          await agree(MONEY_STEPS.transfer, { from, to }, params);
        }
      }
    }
  });

  it('for a hold, with and without a recipient', async () => {
    for (const sender of Object.values(variants)) {
      for (const [name, recipient] of [...Object.entries(variants), ['none', null] as const]) {
        const recipientWalletId = name === 'none' ? null : 'recipient';
        const params = { ...base, walletId: 'sender', recipientWalletId, amount: 500n };
        await agree(MONEY_STEPS.hold, { sender, recipient }, params);
      }
    }
  });

  it('for a release, a refund, a deposit and a money-out reserve', async () => {
    for (const held of Object.values(holdVariants)) {
      for (const recipient of Object.values(variants)) {
        for (const amount of [null, 0n, 300n, 301n]) {
          const params = { ...base, recipientWalletId: 'recipient', amount };
          await agree(MONEY_STEPS.release, { hold: held, recipient }, params);
        }
      }
      for (const sender of Object.values(variants)) {
        await agree(MONEY_STEPS.refund, { hold: held, sender }, {});
      }
    }
    for (const wallet of Object.values(variants)) {
      for (const amount of [500n, null]) {
        await agree(
          MONEY_STEPS.deposit,
          { wallet },
          { ...base, currency: 'USD', credited: amount },
        );
        const reserve = { ...base, converted: amount, total: amount };
        await agree(MONEY_STEPS.moneyOutReserve, { wallet }, reserve);
      }
    }
  });
});

// -- a retry whose first attempt made its payment ------------------------------------------------

/** A request whose payment the first attempt makes, and what then makes its early answer decline. */
type Retried = {
  name: string;
  /** The request and the accounts it moves; `decline` turns the world against a new request. */
  setup: () => Promise<{
    path: string;
    body: Record<string, unknown>;
    accounts: string[];
    decline?: () => Promise<unknown>;
  }>;
  /** What a request with a new key answers once the first payment is made. */
  declined: Answer;
};

/** A new wallet of the application holding `fund` minor units. */
const fresh = (fund = 0n) => wallet(api, fund);
/** Disables a wallet: a new request naming it is declined (403). */
const disable = (id: string) => () => setWalletActive(engine.pool, id, false);

/** A hold of 20.00 from a new funded wallet to another. */
async function newHold() {
  const sender = await fresh(5_000n);
  const recipient = await fresh();
  const hold = await apiHold({ wallet_id: sender, amount: 20, recipient_wallet_id: recipient });
  return { id: hold.id, sender, recipient };
}

const RETRIED: Retried[] = [
  {
    name: 'transfer',
    declined: DISABLED,
    setup: async () => {
      const [from, to] = [await fresh(5_000n), await fresh()];
      const body = { from_wallet_id: from, to_wallet_id: to, amount: 10 };
      return {
        path: '/api/v1/transactions/wallet/transfer',
        body,
        accounts: [from, to],
        decline: disable(to),
      };
    },
  },
  {
    name: 'escrow hold',
    declined: DISABLED,
    setup: async () => {
      const sender = await fresh(5_000n);
      return {
        path: '/api/v1/escrow/hold',
        body: { wallet_id: sender, amount: 10 },
        accounts: [sender],
        decline: disable(sender),
      };
    },
  },
  {
    name: 'escrow release of all that is held',
    declined: NOT_HELD,
    setup: async () => {
      const hold = await newHold();
      const accounts = [hold.sender, hold.recipient, escrowAccount];
      return { path: `/api/v1/escrow/${hold.id}/release`, body: {}, accounts };
    },
  },
  {
    name: 'escrow refund',
    declined: NOT_HELD,
    setup: async () => {
      const hold = await newHold();
      const accounts = [hold.sender, hold.recipient, escrowAccount];
      return { path: `/api/v1/escrow/${hold.id}/refund`, body: {}, accounts };
    },
  },
  {
    name: 'mobile-money deposit',
    declined: DISABLED,
    setup: async () => {
      const target = await fresh();
      const body = { wallet_id: target, amount: 10_000 };
      return {
        path: '/api/v1/transactions/wallet/mobile-money-deposit',
        body,
        accounts: [target],
        decline: disable(target),
      };
    },
  },
  {
    name: 'card deposit',
    declined: DISABLED,
    setup: async () => {
      const target = await fresh();
      const body = { wallet_id: target, amount: 12.5, payment_method_id: 'pm_card_visa' };
      return {
        path: '/api/v1/transactions/wallet/card-deposit',
        body,
        accounts: [target],
        decline: disable(target),
      };
    },
  },
  {
    name: 'mobile-money cashout',
    declined: DISABLED,
    setup: async () => {
      const source = await fresh(50_000n);
      const body = { wallet_id: source, amount: 10_000, phone_number: '+23276123456' };
      return {
        path: '/api/v1/transactions/wallet/mobile-money-cashout',
        body,
        accounts: [source],
        decline: disable(source),
      };
    },
  },
  {
    name: 'card payout',
    declined: DISABLED,
    setup: async () => {
      const source = await fresh(50_000n);
      const onboarded = await onboardForPayouts(api, source);
      if (onboarded.status !== 200) throw new Error(`onboarding: ${onboarded.status}`);
      const body = { wallet_id: source, amount: 25 };
      return {
        path: '/api/v1/transactions/wallet/card-payout',
        body,
        accounts: [source],
        decline: disable(source),
      };
    },
  },
  {
    name: 'card payout, its payout account restricted since',
    declined: { status: 400, detail: PAYOUTS_NOT_ENABLED },
    setup: async () => {
      const source = await fresh(50_000n);
      const onboarded = await onboardForPayouts(api, source);
      if (onboarded.status !== 200) throw new Error(`onboarding: ${onboarded.status}`);
      return {
        path: '/api/v1/transactions/wallet/card-payout',
        body: { wallet_id: source, amount: 25 },
        accounts: [source],
        decline: () =>
          engine.pool.query(sql.unsafe`
            UPDATE payout_accounts SET payouts_enabled = false WHERE wallet_id = ${source}`),
      };
    },
  },
  {
    name: 'card refund of all that is left',
    declined: EXCEEDS,
    setup: async () => {
      const deposit = await cardDeposit(api);
      const path = `/api/v1/transactions/${deposit.id}/refund`;
      return { path, body: {}, accounts: [deposit.wallet] };
    },
  },
  {
    name: 'simulated dispute of all that is left',
    declined: { status: 400, detail: 'Dispute amount exceeds the disputable amount' },
    setup: async () => {
      const deposit = await cardDeposit(api);
      const body = { transaction_id: deposit.id };
      return { path: '/api/v1/testing/simulate-dispute', body, accounts: [deposit.wallet] };
    },
  },
];

/** As if the first attempt had died after its payment was made, before its answer was stored. */
async function loseAnswer(key: string) {
  await engine.pool.query(sql.unsafe`
    UPDATE idempotency_keys SET response_status = NULL, response_body = NULL, completed_at = NULL
    WHERE application_id = ${app.id} AND mode = 'test' AND key = ${key}`);
}

const storedAnswer = (key: string) =>
  engine.pool.one(sql.type(z.object({ response_status: z.number(), response_body: z.unknown() }))`
    SELECT response_status, response_body FROM idempotency_keys
    WHERE application_id = ${app.id} AND mode = 'test' AND key = ${key}`);

describe('a retry whose first attempt made its payment, its answer lost', () => {
  it.each(RETRIED.map((c) => [c.name, c] as const))(
    '%s: answers that payment, never a decline computed after it, and moves no money again',
    async (_name, { setup, declined }) => {
      const key = `lost-answer-${randomUUID()}`;
      const { path, body, accounts, decline } = await setup();
      const first = await api.post(path, body, { 'Idempotency-Key': key });
      expect(first.status).toBe(200);
      await loseAnswer(key);
      await decline?.();
      const before = await writtenState(engine.pool, accounts);

      const retry = await api.post(path, body, { 'Idempotency-Key': key });
      expect({ status: retry.status, id: retry.body.id }).toEqual({
        status: 200,
        id: first.body.id,
      });
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(await storedAnswer(key)).toEqual({ response_status: 200, response_body: retry.body });
      expect(await writtenState(engine.pool, accounts)).toEqual(before);

      // A new request is declined now, computed afresh: not marked as a replay.
      const other = await api.post(path, body, { 'Idempotency-Key': `new-${key}` });
      expect(answerOfReply(other)).toEqual(declined);
      expect(other.headers.get('idempotent-replayed')).toBeNull();
      // Its retry, that decline's answer lost, is declined again, decided now: not marked.
      await loseAnswer(`new-${key}`);
      const again = await api.post(path, body, { 'Idempotency-Key': `new-${key}` });
      expect(answerOfReply(again)).toEqual(declined);
      expect(again.headers.get('idempotent-replayed')).toBeNull();
      expect(await storedAnswer(`new-${key}`)).toEqual({
        response_status: declined.status,
        response_body: { detail: declined.detail },
      });
      expect(await writtenState(engine.pool, accounts)).toEqual(before);
    },
  );
});
