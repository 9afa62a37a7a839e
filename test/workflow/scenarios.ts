/**
 * Workflow scenarios on the time-skipping server, run by the workflow tests; those named in
 * `RECORDED_SCENARIOS` are recorded as replay.test.ts's histories, so a replayed history is one a
 * test checks. No jest here: the recorder runs outside it (tests wrap activities in `mocked`).
 */
import { setTimeout as delay } from 'node:timers/promises';
import {
  WithStartWorkflowOperation,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import {
  ApplicationFailure,
  type SearchAttributePair,
  type UpdateDefinition,
  type Workflow,
} from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Activities } from '../../src/workflows/activities-types';
import { cardDepositWorkflow } from '../../src/workflows/card-deposit';
import { cardPayoutWorkflow } from '../../src/workflows/card-payout';
import { cardRefundWorkflow } from '../../src/workflows/card-refund';
import { mobileMoneyCashoutWorkflow } from '../../src/workflows/cashout';
import { mobileMoneyDepositWorkflow } from '../../src/workflows/deposit';
import { escrowWorkflow } from '../../src/workflows/escrow';
import { maintenanceWorkflow } from '../../src/workflows/maintenance';
import { reconciliationWorkflow } from '../../src/workflows/reconciliation';
import { reconAdjustWorkflow } from '../../src/workflows/recon-adjust';
import type { ReconAdjustInput, ReconAdjustStep } from '../../src/workflows/recon-adjust-shared';
import { disputeWorkflow } from '../../src/workflows/dispute';
import {
  dailyReconciliationWorkflow,
  reconciliationRunWorkflow,
  reconExceptionWorkflow,
} from '../../src/workflows/provider-reconciliation';
import { RECON_EXCEPTION_STALE_MS, reconExceptionWake } from '../../src/workflows/recon-shared';
import { clockUpdates, type AdvanceTimeResult } from '../../src/workflows/clock-shared';
import {
  disputeUpdates,
  type DisputeInput,
  type DisputeRecord,
  type DisputeStatus,
} from '../../src/workflows/dispute-shared';
import {
  moneyOutUpdates,
  type MoneyOutInput,
  type MoneyOutProviderStatus,
} from '../../src/workflows/money-out-shared';
import type {
  OnboardingInput,
  OnboardingResult,
  OnboardingSubmission,
} from '../../src/domain/payout-accounts';
import { onboardingUpdates, onboardingWorkflow } from '../../src/workflows/onboarding';
import {
  resolveUpdate,
  type Resolution,
  type ResolutionOutcome,
} from '../../src/workflows/resolution';
import {
  cardDepositUpdates,
  depositUpdates,
  escrowUpdates,
  SEARCH_ATTRIBUTE_DEFINITIONS,
  SearchAttributes,
  workflowIds,
  type CardDepositInput,
  type CardPaymentOpened,
  type CardPaymentState,
  type DepositInput,
  type DepositOpened,
  type DepositOutcome,
  type EscrowStepResult,
  type HoldInput,
  type RefundRequest,
  type ReleaseRequest,
  type TransferInput,
  type TransferResult,
} from '../../src/workflows/shared';
import { transferWorkflow } from '../../src/workflows/transfer';
import { batchWorkflow } from '../../src/workflows/batch';
import { runBatchTransfers } from '../../src/activities/batches';
import {
  batchCancel,
  type BatchInput,
  type BatchItemEnd,
  type BatchItemStart,
} from '../../src/workflows/batch-shared';
import { endedBatchStatus } from '../../src/domain/batches';
import { WEBHOOK_SCENARIOS } from './webhook-scenarios';

export const THIRTY_MINUTES = 30 * 60 * 1000;
export const SEVEN_DAYS = 7 * 24 * 60 * 60 * 1000;

// Fixed ids, so that a re-recording differs from the last one only where the workflow does.
export const APP = 'a0000000-0000-4000-8000-000000000001';
export const SENDER = 'a0000000-0000-4000-8000-000000000002';
export const RECIPIENT = 'a0000000-0000-4000-8000-000000000003';
export const OTHER_WALLET = 'a0000000-0000-4000-8000-000000000004';
export const fixtureId = (n: number) => `b0000000-0000-4000-8000-${n.toString().padStart(12, '0')}`;

/** The search attributes the API starts every payment workflow with: they drive the upserts. */
function paymentAttributes(type: string, wallets: string[]): SearchAttributePair[] {
  return [
    { key: SearchAttributes.ApplicationId, value: APP },
    { key: SearchAttributes.WalletId, value: wallets },
    { key: SearchAttributes.PaymentType, value: type },
    { key: SearchAttributes.PaymentStatus, value: 'pending' },
  ];
}

/** The search attributes the workflows upsert, as the development server registers them. */
export async function registerSearchAttributes(env: TestWorkflowEnvironment): Promise<void> {
  const types = temporal.api.enums.v1.IndexedValueType;
  const typeOf: Record<string, temporal.api.enums.v1.IndexedValueType> = {
    Keyword: types.INDEXED_VALUE_TYPE_KEYWORD,
    KeywordList: types.INDEXED_VALUE_TYPE_KEYWORD_LIST,
  };
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(
      Object.entries(SEARCH_ATTRIBUTE_DEFINITIONS).map(([key, type]) => [key, typeOf[type]!]),
    ),
  });
}

export const insufficientFunds = () =>
  ApplicationFailure.nonRetryable('Insufficient funds', 'insufficient_funds');

/** Starts a workflow with its first update, as the API does: what the update answered. */
async function startWithUpdate<W extends Workflow, U>(
  env: TestWorkflowEnvironment,
  update: UpdateDefinition<U, [], string>,
  workflow: W,
  options: WorkflowStartOptions<W>,
) {
  const start = new WithStartWorkflowOperation(workflow, {
    ...options,
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const answer = await env.client.workflow.executeUpdateWithStart(update, {
    startWorkflowOperation: start,
  });
  return { answer, handle: await start.workflowHandle() };
}

/** Runs `then` on a started workflow (its later updates), then waits for its end. */
async function thenToEnd<S extends { handle: WorkflowHandle }, T>(
  started: S,
  then: (handle: S['handle']) => Promise<T>,
): Promise<S & { answered: T; result: Awaited<ReturnType<S['handle']['result']>> }> {
  const answered = await then(started.handle);
  const result = (await started.handle.result()) as Awaited<ReturnType<S['handle']['result']>>;
  return { ...started, answered, result };
}

// --- transfer ---

export const transferInput = (transactionId: string): TransferInput => ({
  transactionId,
  applicationId: APP,
  mode: 'test',
  fromWalletId: SENDER,
  toWalletId: RECIPIENT,
  amount: '1250',
  description: 'rent',
  localSteps: true,
});

export const transferSucceeds = (input: TransferInput) =>
  Promise.resolve({ transactionId: input.transactionId });

/** Runs a transfer to its end, started as the API starts it. */
export async function runTransfer(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  input: TransferInput,
): Promise<{ handle: WorkflowHandle<typeof transferWorkflow>; result: TransferResult }> {
  const handle = await env.client.workflow.start(transferWorkflow, {
    workflowId: workflowIds.transfer(input.transactionId),
    taskQueue,
    args: [input],
    typedSearchAttributes: paymentAttributes('transfer', [input.fromWalletId, input.toWalletId]),
  });
  return { handle, result: await handle.result() };
}

// --- mobile-money deposit ---

export const depositInput = (transactionId: string): DepositInput => ({
  transactionId,
  applicationId: APP,
  mode: 'test',
  walletId: SENDER,
  amount: '10000',
});

export function openedFor(input: DepositInput, expiresAt: string): DepositOpened {
  return {
    status: 'opened',
    transactionId: input.transactionId,
    paymentCode: {
      id: `pmc_${input.transactionId}`,
      code: '*715*123456#',
      amount: '10100',
      currency: 'SLE',
      instructions: 'Dial *715*123456# to pay',
      status: 'pending',
      expiresAt,
    },
    deposit: {
      walletId: input.walletId,
      amount: input.amount,
      totalAmountPaid: '10100',
      providerFee: '100',
      applicationFee: '0',
    },
  };
}

/**
 * The deposit's activities: the payment code expires 30 minutes after it opens; the provider
 * answers `checked` when asked.
 */
export function depositActivities(
  env: TestWorkflowEnvironment,
  checked: DepositOutcome = 'pending',
) {
  return {
    openDeposit: async (input: DepositInput): Promise<DepositOpened> =>
      openedFor(input, new Date((await env.currentTimeMs()) + THIRTY_MINUTES).toISOString()),
    checkPaymentCode: (_: { mode: string; paymentCodeId: string }) => Promise.resolve(checked),
    // The provider cancels a code nobody paid (an operator's resolution failed asks it).
    cancelPaymentCode: (_: { mode: string; paymentCodeId: string }) =>
      Promise.resolve<DepositOutcome>(checked === 'completed' ? 'completed' : 'failed'),
    completeDeposit: (_: { transactionId: string }) => Promise.resolve(),
    closeDeposit: (_: { transactionId: string; status: 'failed' | 'expired' }) => Promise.resolve(),
  } satisfies Partial<Activities>;
}

/** Starts a deposit with its `open` update, as the API does; answers what `open` answered. */
export async function openDeposit(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  input: DepositInput,
) {
  const { answer, handle } = await startWithUpdate(
    env,
    depositUpdates.open,
    mobileMoneyDepositWorkflow,
    {
      workflowId: workflowIds.deposit(input.transactionId),
      taskQueue,
      args: [input],
      typedSearchAttributes: paymentAttributes('deposit', [input.walletId]),
    },
  );
  return { opened: answer, handle };
}

export type DepositHandle = Awaited<ReturnType<typeof openDeposit>>['handle'];

export const notify = (handle: DepositHandle, status: 'completed' | 'failed') =>
  handle.executeUpdate(depositUpdates.notify, { args: [{ status }] });

/**
 * What a history costs the server: its workflow tasks, the activity tasks it scheduled, its
 * markers (local activities', `patched`'s) and the search attributes it upserted.
 */
export function historyShape(events: temporal.api.history.v1.IHistoryEvent[] | null | undefined) {
  const all = events ?? [];
  return {
    workflowTasks: all.filter((e) => e.workflowTaskCompletedEventAttributes).length,
    activities: all.flatMap(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
    ),
    markers: all.flatMap((e) => e.markerRecordedEventAttributes?.markerName ?? []),
    /** The local activities the history keeps (a failed workflow task's reruns are not kept). */
    localSteps: all.flatMap((e) => {
      const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
      if (e.markerRecordedEventAttributes?.markerName !== 'core_local_activity' || !data) return [];
      return [
        (JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type: string }).activity_type,
      ];
    }),
    upserted: all.flatMap((e) =>
      Object.keys(
        e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {},
      ),
    ),
  };
}

// --- card deposit ---

export const ONE_HOUR = 60 * 60 * 1000;

export const cardDepositInput = (
  transactionId: string,
  paymentMethodId = 'pm_card_visa',
): CardDepositInput => ({
  transactionId,
  applicationId: APP,
  mode: 'test',
  walletId: SENDER,
  amount: '10000',
  paymentMethodId,
  localSteps: true,
});

export const cardDeclined = () =>
  ApplicationFailure.nonRetryable('Card declined: Your card was declined.', 'card_declined');

/**
 * The card deposit's activities: the provider answers `created` when the card is charged,
 * `checked` when asked later and `canceled` when the expiry cancels the payment; a payment
 * waiting for the payer expires an hour after it opens.
 */
export function cardActivities(
  env: TestWorkflowEnvironment,
  options: {
    created?: CardPaymentState;
    checked?: CardPaymentState;
    canceled?: CardPaymentState;
  } = {},
) {
  const created = options.created ?? 'succeeded';
  return {
    openCardDeposit: async (input: CardDepositInput): Promise<CardPaymentOpened> => {
      if (created === 'failed') throw cardDeclined();
      return {
        transactionId: input.transactionId,
        paymentId: `pi_sandbox_${input.transactionId.replace(/-/g, '')}`,
        paymentStatus: created,
        nextActionUrl:
          created === 'requires_action'
            ? `/api/v1/testing/card-authentication/pi_sandbox_${input.transactionId.replace(/-/g, '')}`
            : null,
        expiresAt: new Date((await env.currentTimeMs()) + ONE_HOUR).toISOString(),
      };
    },
    checkCardPayment: (_: { mode: string; paymentId: string }) =>
      Promise.resolve(options.checked ?? created),
    /** A payment still waiting is canceled; one charged meanwhile stays charged. */
    cancelCardPayment: (_: { mode: string; paymentId: string }) =>
      Promise.resolve<CardPaymentState>(options.canceled ?? 'failed'),
    completeCardDeposit: (_: { transactionId: string }) => Promise.resolve(),
    closeCardDeposit: (_: { transactionId: string; status: 'failed' | 'expired' }) =>
      Promise.resolve(),
  } satisfies Partial<Activities>;
}

/** Starts a card deposit with its `open` update, as the API does; answers what `open` answered. */
export async function openCardDeposit(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  input: CardDepositInput,
) {
  const { answer, handle } = await startWithUpdate(
    env,
    cardDepositUpdates.open,
    cardDepositWorkflow,
    {
      workflowId: workflowIds.cardDeposit(input.transactionId),
      taskQueue,
      args: [input],
      typedSearchAttributes: paymentAttributes('card_deposit', [input.walletId]),
    },
  );
  return { opened: answer, handle };
}

export type CardDepositHandle = Awaited<ReturnType<typeof openCardDeposit>>['handle'];

export const notifyCard = (handle: CardDepositHandle, status: CardPaymentState) =>
  handle.executeUpdate(cardDepositUpdates.notify, { args: [{ status }] });

// --- escrow ---

export function holdInput(
  holdId: string,
  options: { amount?: string; expiresAt?: string | null } = {},
): HoldInput {
  return {
    holdId,
    applicationId: APP,
    mode: 'test',
    walletId: SENDER,
    amount: options.amount ?? '1000',
    description: 'order 42',
    recipientWalletId: RECIPIENT,
    expiresAt: options.expiresAt ?? null,
    localSteps: true,
  };
}

const exceedsHeld = () =>
  ApplicationFailure.nonRetryable('Release amount exceeds the held amount', 'invalid_request');
const notHeld = () =>
  ApplicationFailure.nonRetryable(
    'The escrow transaction is not in held status',
    'invalid_request',
  );

/**
 * The escrow activities as an in-memory ledger of one hold. Each step takes `stepMs`, so racing
 * updates would overlap if the workflow let them; like the real ones, a step already made answers
 * `done` again, since a local activity reruns when its task fails (local-step-race.test.ts).
 */
export function fakeEscrow(options: { stepMs?: number } = {}) {
  const stepMs = options.stepMs ?? 5;
  const ledger = {
    held: 0n,
    heldAtStart: 0n,
    released: [] as { releaseId: string; amount: bigint }[],
    refunded: [] as { refundId: string; reason: RefundRequest['reason']; amount: bigint }[],
    /** Steps that started while another was still running: must stay empty. */
    overlaps: [] as string[],
    paidOut: () =>
      [...ledger.released, ...ledger.refunded].reduce((sum, { amount }) => sum + amount, 0n),
  };
  let running: string | null = null;
  /** The ids of the steps made: the hold's, each release's and each refund's. */
  const made = new Set<string>();
  const again = (id: string): EscrowStepResult | null =>
    made.has(id) ? { status: 'done', transactionId: id, remaining: `${ledger.held}` } : null;

  /** One money step: records an overlap, waits a little, then applies `apply` atomically. */
  async function step(name: string, apply: () => EscrowStepResult): Promise<EscrowStepResult> {
    if (running !== null) ledger.overlaps.push(`${name} started while ${running} was running`);
    running = name;
    try {
      await delay(stepMs);
      return apply();
    } finally {
      running = null;
    }
  }

  const activities = {
    holdFunds: (input: HoldInput): Promise<EscrowStepResult> =>
      step(`hold ${input.holdId}`, () => {
        const done = again(input.holdId);
        if (done) return done;
        made.add(input.holdId);
        ledger.held = BigInt(input.amount);
        ledger.heldAtStart = ledger.held;
        return { status: 'done', transactionId: input.holdId, remaining: input.amount };
      }),
    releaseFunds: (input: ReleaseRequest & { holdId: string }): Promise<EscrowStepResult> =>
      step(`release ${input.releaseId}`, () => {
        const done = again(input.releaseId);
        if (done) return done;
        if (ledger.held === 0n) throw notHeld();
        const amount = input.amount === null ? ledger.held : BigInt(input.amount);
        if (amount > ledger.held) throw exceedsHeld();
        made.add(input.releaseId);
        ledger.held -= amount;
        ledger.released.push({ releaseId: input.releaseId, amount });
        return { status: 'done', transactionId: input.releaseId, remaining: `${ledger.held}` };
      }),
    refundFunds: (input: RefundRequest & { holdId: string }): Promise<EscrowStepResult> =>
      step(`refund ${input.refundId}`, () => {
        const done = again(input.refundId);
        if (done) return done;
        if (ledger.held === 0n) throw notHeld();
        const { refundId, reason } = input;
        made.add(refundId);
        ledger.refunded.push({ refundId, reason, amount: ledger.held });
        ledger.held = 0n;
        return { status: 'done', transactionId: input.refundId, remaining: '0' };
      }),
  } satisfies Partial<Activities>;
  return { ledger, activities };
}

/** Starts the hold's workflow with the `hold` update, as the API does. */
export async function openHold(env: TestWorkflowEnvironment, taskQueue: string, input: HoldInput) {
  const wallets = [input.walletId, ...(input.recipientWalletId ? [input.recipientWalletId] : [])];
  const { answer, handle } = await startWithUpdate(env, escrowUpdates.hold, escrowWorkflow, {
    workflowId: workflowIds.escrow(input.holdId),
    taskQueue,
    args: [input],
    typedSearchAttributes: paymentAttributes('escrow_hold', wallets),
  });
  return { held: answer, handle };
}

export type EscrowHandle = Awaited<ReturnType<typeof openHold>>['handle'];

export const release = (handle: EscrowHandle, request: ReleaseRequest) =>
  handle.executeUpdate(escrowUpdates.release, { args: [request] });

export const refund = (handle: EscrowHandle, request: RefundRequest) =>
  handle.executeUpdate(escrowUpdates.refund, { args: [request] });

// --- mobile-money cashout (the money-out saga) ---

export const cashoutInput = (transactionId: string): MoneyOutInput => ({
  kind: 'cashout',
  transactionId,
  applicationId: APP,
  mode: 'test',
  walletId: SENDER,
  amount: '10000',
  destination: { phone_number: '+23276123456' },
});

export const cashoutRefused = () =>
  ApplicationFailure.nonRetryable('Provider refused the cashout', 'provider_refused');

/**
 * The saga's activities: the provider answers `sent` to the payout request (or refuses it) and
 * `checked` when asked later; the pending TTL is 30 minutes.
 */
export function cashoutActivities(
  options: {
    sent?: MoneyOutProviderStatus | 'refused';
    checked?: MoneyOutProviderStatus;
    lateFailureMs?: number;
    pendingTtlMs?: number;
    /** What the provider answers a resolution's cancel or look; by default, what it asks. */
    atProvider?: MoneyOutProviderStatus | 'unreachable';
  } = {},
) {
  const payout = (status: MoneyOutProviderStatus) => ({ id: 'po_fixture', status });
  return {
    reserveMoneyOut: (input: MoneyOutInput) =>
      Promise.resolve({
        transactionId: input.transactionId,
        pendingTtlMs: options.pendingTtlMs ?? THIRTY_MINUTES,
        lateFailureMs: options.lateFailureMs ?? 0,
      }),
    sendMoneyOut: (_: { transactionId: string }) =>
      options.sent === 'refused'
        ? Promise.reject(cashoutRefused())
        : Promise.resolve(payout(options.sent ?? 'pending')),
    checkMoneyOut: (_: { transactionId: string }) =>
      Promise.resolve(payout(options.checked ?? 'pending')),
    askMoneyOutForResolution: ({
      outcome,
    }: {
      transactionId: string;
      outcome: 'completed' | 'failed';
    }) =>
      options.atProvider === 'unreachable'
        ? Promise.reject(new Error('connect ECONNREFUSED'))
        : Promise.resolve(payout(options.atProvider ?? outcome)),
    settleMoneyOut: (_: { transactionId: string }) => Promise.resolve(),
    giveBackMoneyOut: (_: { transactionId: string }) => Promise.resolve(),
    reverseMoneyOut: (_: { transactionId: string }) => Promise.resolve(),
  } satisfies Partial<Activities>;
}

/** Starts a cashout with its `open` update, as the API does; answers what `open` answered. */
export async function openCashout(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  input: MoneyOutInput,
) {
  const { answer, handle } = await startWithUpdate(
    env,
    moneyOutUpdates.open,
    mobileMoneyCashoutWorkflow,
    {
      workflowId: workflowIds.cashout(input.transactionId),
      taskQueue,
      args: [input],
      typedSearchAttributes: paymentAttributes('mobile_money_cashout', [input.walletId]),
    },
  );
  return { opened: answer, handle };
}

export type CashoutHandle = Awaited<ReturnType<typeof openCashout>>['handle'];

export const notifyCashout = (handle: CashoutHandle, status: MoneyOutProviderStatus) =>
  handle.executeUpdate(moneyOutUpdates.notify, { args: [{ status }] });

// --- card payout (the same saga, kind `payout`) ---

/** A card payout of 25.00 USD to the owner's connected account. */
export const payoutInput = (
  transactionId: string,
  mode: 'test' | 'live' = 'test',
): MoneyOutInput => ({
  kind: 'payout',
  transactionId,
  applicationId: APP,
  mode,
  walletId: SENDER,
  amount: '2500',
  destination: { account_id: 'acct_sandbox_fixture' },
});

/** Test Mode asks the sandbox again after 2 seconds (src/activities/card-payout.ts). */
export const SANDBOX_PAYOUT_CHECK_MS = 2_000;
/** Live Mode: the provider may report a paid payout failed for 14 days. */
export const PAYOUT_LATE_FAILURE_MS = 14 * 24 * 60 * 60 * 1000;

export const payoutRefused = () =>
  ApplicationFailure.nonRetryable('Provider refused the payout', 'provider_refused');

/** The saga's activities for a card payout (see `cashoutActivities`). */
export function payoutActivities(options: Parameters<typeof cashoutActivities>[0] = {}) {
  const activities = cashoutActivities({ pendingTtlMs: SANDBOX_PAYOUT_CHECK_MS, ...options });
  return {
    ...activities,
    sendMoneyOut: (arg: { transactionId: string }) =>
      options.sent === 'refused' ? Promise.reject(payoutRefused()) : activities.sendMoneyOut(arg),
  } satisfies Partial<Activities>;
}

/** Starts a card payout with its `open` update, as the API does. */
export async function openPayout(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  input: MoneyOutInput,
) {
  const { answer, handle } = await startWithUpdate(env, moneyOutUpdates.open, cardPayoutWorkflow, {
    workflowId: workflowIds.payout(input.transactionId),
    taskQueue,
    args: [input],
    typedSearchAttributes: paymentAttributes('card_payout', [input.walletId]),
  });
  return { opened: answer, handle };
}

// --- card refund (the same saga, kind `refund`) ---

/** A refund of 10.00 USD of a card deposit, paid back by the wallet it credited. */
export const refundInput = (transactionId: string): MoneyOutInput => ({
  kind: 'refund',
  transactionId,
  applicationId: APP,
  mode: 'test',
  walletId: SENDER,
  amount: '1000',
  destination: { deposit_id: fixtureId(40), reason: 'requested_by_customer' },
  localSteps: true,
});

/** Test Mode asks the sandbox again after 1 second (src/activities/card-refund.ts). */
export const SANDBOX_REFUND_CHECK_MS = 1_000;

/** The saga's activities for a card refund (see `cashoutActivities`). */
export function refundActivities(options: Parameters<typeof cashoutActivities>[0] = {}) {
  return cashoutActivities({ pendingTtlMs: SANDBOX_REFUND_CHECK_MS, ...options });
}

/** Starts a card refund with its `open` update, as the API does. */
export async function openRefund(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  input: MoneyOutInput,
) {
  const { answer, handle } = await startWithUpdate(env, moneyOutUpdates.open, cardRefundWorkflow, {
    workflowId: workflowIds.refund(input.transactionId),
    taskQueue,
    args: [input],
    typedSearchAttributes: paymentAttributes('card_refund', [input.walletId]),
  });
  return { opened: answer, handle };
}

// --- payout onboarding ---

export const onboardingInput = (walletId: string): OnboardingInput => ({
  applicationId: APP,
  mode: 'test',
  walletId,
});

/** A submission; identity number 000000000 is verified at once, as in the sandbox. */
export const onboardingSubmission = (
  idNumber = '000000000',
  cardToken: string | null = 'tok_visa_debit',
): OnboardingSubmission => ({
  individual: {
    first_name: 'Aminata',
    last_name: 'Kamara',
    dob: { day: 14, month: 3, year: 1990 },
    address: { line1: '12 Siaka Stevens Street', city: 'Freetown', country: 'SL' },
    email: 'aminata@example.com',
    id_number: idNumber,
  },
  businessProfile: { mcc: '5734', product_description: 'Handmade furniture' },
  cardToken,
  tosAcceptance: { ip: '203.0.113.7', date: 1_790_000_000 },
});

export const debitCardRequired = () =>
  ApplicationFailure.nonRetryable('debit_card_required', 'debit_card_required');

/**
 * The onboarding activities over a provider kept in memory that behaves like the sandbox: a
 * document is due unless the identity number is 000000000, a document makes it pending, and the
 * next re-sync verifies it; `tok_visa` (a credit card) is refused.
 */
export function onboardingActivities() {
  let verification: 'verified' | 'document_due' | 'document_pending' | null = null;
  let card = false;
  const result = (): OnboardingResult => ({
    status: 'done',
    accountId: 'acct_sandbox_fixture',
    payoutsEnabled: verification === 'verified',
    externalAccountAdded: card,
    currentlyDue: verification === 'document_due' ? ['individual.verification.document'] : [],
    pendingVerification:
      verification === 'document_pending' ? ['individual.verification.document'] : [],
    disabledReason:
      verification === 'document_due'
        ? 'requirements.past_due'
        : verification === 'document_pending'
          ? 'requirements.pending_verification'
          : null,
  });
  return {
    submitOnboarding: (input: OnboardingInput & OnboardingSubmission) => {
      if (input.individual.id_number === '000000000') verification = 'verified';
      verification ??= 'document_due';
      if (input.cardToken === 'tok_visa') return Promise.reject(debitCardRequired());
      if (input.cardToken) card = true;
      return Promise.resolve(result());
    },
    syncOnboarding: (_: OnboardingInput) => {
      if (verification === 'document_pending') verification = 'verified';
      return Promise.resolve(result());
    },
    sendVerificationDocument: (_: OnboardingInput & { documentId: string }) => {
      if (verification === 'document_due') verification = 'document_pending';
      return Promise.resolve(result());
    },
  } satisfies Partial<Activities>;
}

/** Submits the details as the API does: update-with-start on `onboarding-<wallet id>`. */
export async function submitOnboarding(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  input: OnboardingInput,
  submission: OnboardingSubmission,
) {
  const start = new WithStartWorkflowOperation(onboardingWorkflow, {
    workflowId: workflowIds.onboarding(input.walletId),
    taskQueue,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: [
      { key: SearchAttributes.ApplicationId, value: APP },
      { key: SearchAttributes.WalletId, value: [input.walletId] },
    ],
  });
  const answer = await env.client.workflow.executeUpdateWithStart(onboardingUpdates.submit, {
    startWorkflowOperation: start,
    args: [submission],
  });
  return { submitted: answer, handle: await start.workflowHandle() };
}

// --- disputes ---

export const disputeInput = (
  disputeId: string,
  nowMs: number,
  mode: 'test' | 'live' = 'test',
): DisputeInput => ({
  disputeId,
  applicationId: APP,
  mode,
  transactionId: fixtureId(90),
  amount: '2500',
  reason: 'general',
  evidenceDueBy: new Date(nowMs + SEVEN_DAYS).toISOString(),
  providerDisputeId: mode === 'live' ? `dp_${disputeId.slice(0, 8)}` : null,
});

/**
 * The dispute's activities: opening reserves 2500 of it (all covered) unless `declined`;
 * evidence puts it under review; closing answers the decision.
 */
export function disputeActivities(options: { declined?: boolean } = {}) {
  return {
    openDispute: (input: DisputeInput) => {
      if (options.declined) {
        return Promise.reject(
          ApplicationFailure.nonRetryable('dispute_not_allowed', 'dispute_not_allowed'),
        );
      }
      const at = '2026-01-01T00:00:00.000Z';
      const dispute: DisputeRecord = {
        id: input.disputeId,
        application_id: input.applicationId,
        mode: input.mode,
        transaction_id: input.transactionId,
        wallet_id: SENDER,
        currency: 'USD',
        amount: input.amount ?? '2500',
        reserved_amount: input.amount ?? '2500',
        uncovered_amount: '0',
        reason: input.reason,
        status: 'needs_response',
        evidence: null,
        evidence_due_by: input.evidenceDueBy,
        provider_reference: input.providerDisputeId,
        workflow_id: workflowIds.dispute(input.disputeId),
        created_at: at,
        updated_at: at,
      };
      return Promise.resolve({ status: 'opened' as const, dispute });
    },
    submitDisputeEvidence: (_: { disputeId: string; text: string }) =>
      Promise.resolve<DisputeStatus>('under_review'),
    closeDispute: (input: { disputeId: string; status: 'won' | 'lost' }) =>
      Promise.resolve<DisputeStatus>(input.status),
  } satisfies Partial<Activities>;
}

/** Opens a dispute as the API does: update-with-start of `open` on `dispute-<id>`. */
export async function openDisputeWorkflow(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  input: DisputeInput,
) {
  const { answer, handle } = await startWithUpdate(env, disputeUpdates.open, disputeWorkflow, {
    workflowId: workflowIds.dispute(input.disputeId),
    taskQueue,
    args: [input],
    typedSearchAttributes: paymentAttributes('dispute_reserve', [SENDER]),
  });
  return { opened: answer, handle };
}

export type DisputeHandle = Awaited<ReturnType<typeof openDisputeWorkflow>>['handle'];

export const disputeEvidence = (handle: DisputeHandle, text: string) =>
  handle.executeUpdate(disputeUpdates.evidence, { args: [{ text }] });

export const closeDisputeWorkflow = (handle: DisputeHandle, status: 'won' | 'lost') =>
  handle.executeUpdate(disputeUpdates.close, { args: [{ status }] });

// --- the named scenarios ---

/**
 * One execution: its input (from the test server's current time, for expiries), fresh mocked
 * activities, and `run`, which drives it to its end on a worker polling `taskQueue`.
 */
type ScenarioSpec<I, A extends Partial<Activities>, R extends { handle: WorkflowHandle }> = {
  /** The recorded fixture's file name, without `.json`. */
  name: string;
  input: (nowMs: number) => I;
  activities: (env: TestWorkflowEnvironment) => A;
  run: (env: TestWorkflowEnvironment, taskQueue: string, input: I) => Promise<R>;
};

export type Scenario<
  I,
  A extends Partial<Activities>,
  R extends { handle: WorkflowHandle },
> = ScenarioSpec<I, A, R> & {
  /** `run` on the input taken at the test server's current time; answers that input too. */
  play: (env: TestWorkflowEnvironment, taskQueue: string) => Promise<R & { input: I }>;
};

function scenario<I, A extends Partial<Activities>, R extends { handle: WorkflowHandle }>(
  spec: ScenarioSpec<I, A, R>,
): Scenario<I, A, R> {
  return {
    ...spec,
    play: async (env, taskQueue) => {
      const input = spec.input(await env.currentTimeMs());
      return { ...(await spec.run(env, taskQueue, input)), input };
    },
  };
}

export const transferCompleted = scenario({
  name: 'transfer-completed',
  input: () => transferInput(fixtureId(1)),
  activities: () => ({ transferFunds: transferSucceeds }),
  run: runTransfer,
});

export const transferDeclined = scenario({
  name: 'transfer-declined',
  input: () => transferInput(fixtureId(2)),
  activities: () => ({
    transferFunds: (_: TransferInput): Promise<{ transactionId: string }> =>
      Promise.reject(insufficientFunds()),
  }),
  run: runTransfer,
});

export const depositPaidNotify = scenario({
  name: 'deposit-paid-notify',
  input: () => depositInput(fixtureId(3)),
  // The notification is a reason to ask: the provider confirms the payment.
  activities: (env) => depositActivities(env, 'completed'),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openDeposit(env, taskQueue, input), (handle) => notify(handle, 'completed')),
});

/** Nobody pays: the code expires after 30 minutes, the last provider check says pending. */
export const depositExpired = scenario({
  name: 'deposit-expired',
  input: () => depositInput(fixtureId(4)),
  activities: (env) => depositActivities(env, 'pending'),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openDeposit(env, taskQueue, input), () => Promise.resolve()),
});

export const depositSync = scenario({
  name: 'deposit-sync',
  input: () => depositInput(fixtureId(5)),
  activities: (env) => depositActivities(env, 'completed'),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openDeposit(env, taskQueue, input), (handle): Promise<DepositOutcome> =>
      handle.executeUpdate(depositUpdates.sync),
    ),
});

export const cardDepositSucceeded = scenario({
  name: 'card-deposit-succeeded',
  input: () => cardDepositInput(fixtureId(14)),
  activities: (env) => cardActivities(env, { created: 'succeeded' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openCardDeposit(env, taskQueue, input), () => Promise.resolve()),
});

export const cardDepositDeclined = scenario({
  name: 'card-deposit-declined',
  input: () => cardDepositInput(fixtureId(15), 'pm_card_chargeDeclined'),
  activities: (env) => cardActivities(env, { created: 'failed' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openCardDeposit(env, taskQueue, input), () => Promise.resolve()),
});

/** 3-D Secure: pending until the provider's event (confirmed by asking it) says authenticated. */
export const cardDepositAuthenticated = scenario({
  name: 'card-deposit-authenticated',
  input: () => cardDepositInput(fixtureId(16), 'pm_card_authenticationRequired'),
  activities: (env) => cardActivities(env, { created: 'requires_action', checked: 'succeeded' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openCardDeposit(env, taskQueue, input), (handle) =>
      notifyCard(handle, 'succeeded'),
    ),
});

/** Nobody authenticates: the payment expires after an hour, the last look says still waiting. */
export const cardDepositExpired = scenario({
  name: 'card-deposit-expired',
  input: () => cardDepositInput(fixtureId(17), 'pm_card_authenticationRequired'),
  activities: (env) => cardActivities(env, { created: 'requires_action' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openCardDeposit(env, taskQueue, input), () => Promise.resolve()),
});

export const escrowPartialReleaseRefund = scenario({
  name: 'escrow-partial-release-refund',
  input: () => holdInput(fixtureId(6)),
  activities: () => fakeEscrow().activities,
  run: async (env, taskQueue, input) =>
    thenToEnd(await openHold(env, taskQueue, input), async (handle) => [
      await release(handle, {
        releaseId: fixtureId(7),
        recipientWalletId: RECIPIENT,
        amount: '400',
      }),
      await refund(handle, { refundId: fixtureId(8), reason: 'requested' }),
    ]),
});

/** A release to a wallet the hold did not name: WalletId gains it (a versioned change). */
export const escrowReleaseToAnotherWallet = scenario({
  name: 'escrow-release-to-another-wallet',
  input: () => holdInput(fixtureId(12)),
  activities: () => fakeEscrow().activities,
  run: async (env, taskQueue, input) =>
    thenToEnd(await openHold(env, taskQueue, input), (handle) =>
      release(handle, { releaseId: fixtureId(13), recipientWalletId: OTHER_WALLET, amount: null }),
    ),
});

export const escrowHoldDeclined = scenario({
  name: 'escrow-hold-declined',
  input: () => holdInput(fixtureId(11)),
  activities: () => ({
    ...fakeEscrow().activities,
    holdFunds: (_: HoldInput): Promise<EscrowStepResult> => Promise.reject(insufficientFunds()),
  }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openHold(env, taskQueue, input), () => Promise.resolve()),
});

/**
 * A new run of a hold made before (a request retried after the hold's first run ended):
 * `holdFunds` answers it made, with nothing left held, and the workflow ends at once.
 */
export const escrowHoldMadeBefore = scenario({
  name: 'escrow-hold-made-before',
  input: () => holdInput(fixtureId(74)),
  activities: () => ({
    ...fakeEscrow().activities,
    holdFunds: (input: HoldInput): Promise<EscrowStepResult> =>
      Promise.resolve({ status: 'done', transactionId: input.holdId, remaining: '0' }),
  }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openHold(env, taskQueue, input), () => Promise.resolve()),
});

/** A partial release, then the hold expires after 7 days and refunds the rest by itself. */
export const escrowExpired = scenario({
  name: 'escrow-expired',
  input: (nowMs) =>
    holdInput(fixtureId(9), { expiresAt: new Date(nowMs + SEVEN_DAYS).toISOString() }),
  activities: () => fakeEscrow().activities,
  run: async (env, taskQueue, input) =>
    thenToEnd(await openHold(env, taskQueue, input), (handle) =>
      release(handle, { releaseId: fixtureId(10), recipientWalletId: RECIPIENT, amount: '250' }),
    ),
});

/** The provider accepts the payout, then its notification says paid, as the provider does: settled. */
export const cashoutSettled = scenario({
  name: 'cashout-settled',
  input: () => cashoutInput(fixtureId(18)),
  activities: () => cashoutActivities({ sent: 'pending', checked: 'completed' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openCashout(env, taskQueue, input), (handle) =>
      notifyCashout(handle, 'completed'),
    ),
});

/** The provider refuses at once: everything given back, the request declined. */
export const cashoutRefusedAtOnce = scenario({
  name: 'cashout-refused',
  input: () => cashoutInput(fixtureId(19)),
  activities: () => cashoutActivities({ sent: 'refused' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openCashout(env, taskQueue, input), () => Promise.resolve()),
});

/** The provider accepts, then its notification says failed, as the provider does: given back. */
export const cashoutFailedLater = scenario({
  name: 'cashout-failed-later',
  input: () => cashoutInput(fixtureId(20)),
  activities: () => cashoutActivities({ sent: 'pending', checked: 'failed' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openCashout(env, taskQueue, input), (handle) =>
      notifyCashout(handle, 'failed'),
    ),
});

/** No notification: at the pending TTL the saga asks the provider, which says failed. */
export const cashoutAskedAtTtl = scenario({
  name: 'cashout-asked-at-ttl',
  input: () => cashoutInput(fixtureId(21)),
  activities: () => cashoutActivities({ sent: 'pending', checked: 'failed' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openCashout(env, taskQueue, input), () => Promise.resolve()),
});

/** The sandbox pays at once: settled in the request, no late-failure window in Test Mode. */
export const payoutPaidAtOnce = scenario({
  name: 'payout-paid',
  input: () => payoutInput(fixtureId(30)),
  activities: () => payoutActivities({ sent: 'completed' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openPayout(env, taskQueue, input), () => Promise.resolve()),
});

/** The provider refuses at once: everything given back, the request declined. */
export const payoutRefusedAtOnce = scenario({
  name: 'payout-refused',
  input: () => payoutInput(fixtureId(31)),
  activities: () => payoutActivities({ sent: 'refused' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openPayout(env, taskQueue, input), () => Promise.resolve()),
});

/** 40.40 in the sandbox: accepted (pending), failed at the next look; everything given back. */
export const payoutFailedLater = scenario({
  name: 'payout-failed-later',
  input: () => payoutInput(fixtureId(32)),
  activities: () => payoutActivities({ sent: 'pending', checked: 'failed' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openPayout(env, taskQueue, input), () => Promise.resolve()),
});

/** Live Mode: paid at once, then the provider reports (and, asked, confirms) it failed: reversed. */
export const payoutReversed = scenario({
  name: 'payout-reversed',
  input: () => payoutInput(fixtureId(33), 'live'),
  activities: () =>
    payoutActivities({
      sent: 'completed',
      checked: 'failed',
      lateFailureMs: PAYOUT_LATE_FAILURE_MS,
    }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openPayout(env, taskQueue, input), (handle) => notifyCashout(handle, 'failed')),
});

/** The sandbox refunds at once: settled in the request. */
export const refundCompleted = scenario({
  name: 'refund-completed',
  input: () => refundInput(fixtureId(41)),
  activities: () => refundActivities({ sent: 'completed' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openRefund(env, taskQueue, input), () => Promise.resolve()),
});

/** `pm_card_refundFails`: accepted (pending), failed at the next look; the amount given back. */
export const refundFailedLater = scenario({
  name: 'refund-failed-later',
  input: () => refundInput(fixtureId(42)),
  activities: () => refundActivities({ sent: 'pending', checked: 'failed' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openRefund(env, taskQueue, input), () => Promise.resolve()),
});

export const maintenance = scenario({
  name: 'maintenance',
  input: () => undefined,
  activities: () =>
    ({
      pruneExpiredRows: () =>
        Promise.resolve({
          rateLimitWindows: 2,
          idempotencyKeys: 3,
          providerNotifications: 1,
          webhookPreviousSecrets: 0,
          eventListeners: 0,
        }),
      ensureWebhookRelayRuns: () => Promise.resolve(),
    }) satisfies Partial<Activities>,
  run: async (env, taskQueue) => {
    const handle = await env.client.workflow.start(maintenanceWorkflow, {
      workflowId: 'maintenance',
      taskQueue,
    });
    return { handle, result: await handle.result() };
  },
});

/** An operator's `adjust` resolution of reconciliation exception `exceptionId`. */
export const reconAdjustInput = (exceptionId: string): ReconAdjustInput => ({
  exceptionId,
  note: 'The provider collected one cent more',
  resolvedBy: `admin:${fixtureId(91)}`,
});

/** Runs the adjustment as the API starts it: the answer is the workflow's result. */
export async function runReconAdjust(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  input: ReconAdjustInput,
) {
  const handle = await env.client.workflow.start(reconAdjustWorkflow, {
    workflowId: workflowIds.reconAdjust(input.exceptionId),
    taskQueue,
    args: [input],
  });
  return { handle, result: await handle.result() };
}

/** The adjustment's one ledger step writes it. */
export const reconAdjusted = scenario({
  name: 'recon-adjusted',
  input: () => reconAdjustInput(fixtureId(92)),
  activities: () => ({
    adjustReconExceptionStep: (step: ReconAdjustStep) =>
      Promise.resolve({
        status: 'adjusted' as const,
        exceptionId: step.exceptionId,
        adjustmentId: step.adjustmentId,
        ledgerTransactionId: fixtureId(93),
        walletId: SENDER,
        amount: '1',
        currency: 'USD',
      }),
  }),
  run: runReconAdjust,
});

/** The wallet would go negative: the step declines, the result is the decline. */
export const reconAdjustDeclined = scenario({
  name: 'recon-adjust-declined',
  input: () => reconAdjustInput(fixtureId(94)),
  activities: () => ({
    adjustReconExceptionStep: (_: ReconAdjustStep): Promise<never> =>
      Promise.reject(insufficientFunds()),
  }),
  run: runReconAdjust,
});

/** Identity number 000000000 and a debit card: verified at once, the workflow ends. */
export const onboardingVerified = scenario({
  name: 'onboarding-verified',
  input: () => onboardingInput(fixtureId(18)),
  activities: () => onboardingActivities(),
  run: async (env, taskQueue, input) =>
    thenToEnd(await submitOnboarding(env, taskQueue, input, onboardingSubmission()), () =>
      Promise.resolve(),
    ),
});

/** A document is due; it is uploaded (pending verification); the re-sync verifies it. */
export const onboardingDocument = scenario({
  name: 'onboarding-document',
  input: () => onboardingInput(fixtureId(19)),
  activities: () => onboardingActivities(),
  run: async (env, taskQueue, input) =>
    thenToEnd(
      await submitOnboarding(env, taskQueue, input, onboardingSubmission('123456789', null)),
      async (handle) => [
        await handle.executeUpdate(onboardingUpdates.document, {
          args: [{ documentId: fixtureId(20) }],
        }),
        await handle.executeUpdate(onboardingUpdates.sync),
      ],
    ),
});

/** A credit card is declined; the resubmission with a debit card is verified on the same run. */
export const onboardingCardRefused = scenario({
  name: 'onboarding-card-refused',
  input: () => onboardingInput(fixtureId(21)),
  activities: () => onboardingActivities(),
  run: async (env, taskQueue, input) =>
    thenToEnd(
      await submitOnboarding(env, taskQueue, input, onboardingSubmission('000000000', 'tok_visa')),
      (handle) =>
        handle.executeUpdate(onboardingUpdates.submit, { args: [onboardingSubmission()] }),
    ),
});

/**
 * A reconciliation run: three stale payments synced two at a time; the first is settled by its
 * provider, the second still pending, the third cannot be synced (recorded as an error); then
 * one kept notification of two is matched.
 */
export const reconciliation = scenario({
  name: 'reconciliation',
  input: () => ({}),
  activities: () => {
    const payments = [fixtureId(71), fixtureId(72), fixtureId(73)];
    return {
      findStalePayments: ({ graceSeconds }: { graceSeconds: number | null }) =>
        Promise.resolve({
          payments: payments.map((id) => ({ id, transactionType: 'mobile_money_deposit' })),
          graceSeconds: graceSeconds ?? 300,
          concurrency: 2,
        }),
      reconcilePayment: async ({ transactionId }: { transactionId: string }) => {
        await delay(20);
        if (transactionId === payments[2]) {
          throw ApplicationFailure.nonRetryable('the provider cannot be reached');
        }
        return {
          transaction_id: transactionId,
          transaction_type: 'mobile_money_deposit',
          from: 'pending',
          to: transactionId === payments[0] ? 'completed' : 'pending',
        };
      },
      retryUnmatchedNotifications: () => Promise.resolve({ retried: 2, matched: 1 }),
      syncOpenDisputes: () => Promise.resolve({ checked: 1, closed: 1 }),
      recordReconciliationRun: () => Promise.resolve(),
    } satisfies Partial<Activities>;
  },
  run: async (env, taskQueue, input) => {
    const handle = await env.client.workflow.start(reconciliationWorkflow, {
      workflowId: 'reconciliation',
      taskQueue,
      args: [input],
    });
    return { handle, result: await handle.result() };
  },
});

/** A provider reconciliation's steps: two chunks of records, the match, one page of timers. */
const reconRunSteps = () =>
  ({
    loadReconRecords: ({ loaded }: { runId: string; cursor: string | null; loaded: number }) =>
      Promise.resolve(
        loaded === 0 ? { cursor: 'page-2', loaded: 5_000 } : { cursor: null, loaded: 7_500 },
      ),
    matchReconRun: () => Promise.resolve(),
    startReconExceptionTimers: () => Promise.resolve({ after: null }),
    failReconRun: () => Promise.resolve(),
    scheduleDailyReconRuns: () => Promise.resolve([fixtureId(91), fixtureId(92)]),
  }) satisfies Partial<Activities>;

/** A provider reconciliation run: its records loaded in two chunks, matched, timers started. */
export const reconRun = scenario({
  name: 'recon-run',
  input: () => ({ runId: fixtureId(90) }),
  activities: reconRunSteps,
  run: async (env, taskQueue, input) => {
    const handle = await env.client.workflow.start(reconciliationRunWorkflow, {
      workflowId: `recon-run-${input.runId}`,
      taskQueue,
      args: [input],
    });
    return { handle, result: await handle.result() };
  },
});

/** The daily schedule's workflow: two runs written, each run as a child. */
export const reconDaily = scenario({
  name: 'recon-daily',
  input: () => undefined,
  activities: reconRunSteps,
  run: async (env, taskQueue) => {
    const handle = await env.client.workflow.start(dailyReconciliationWorkflow, {
      workflowId: 'recon-daily',
      taskQueue,
    });
    return { handle, result: await handle.result() };
  },
});

/** An exception left open: its timer sends the stale event after 72 hours. */
export const reconExceptionStale = scenario({
  name: 'recon-exception-stale',
  input: () => ({ exceptionId: fixtureId(93) }),
  activities: () =>
    ({
      findReconExceptionState: () => Promise.resolve({ mode: 'test' as const, open: true }),
      markReconExceptionStale: () => Promise.resolve(true),
    }) satisfies Partial<Activities>,
  run: async (env, taskQueue, input) => {
    const handle = await env.client.workflow.start(reconExceptionWorkflow, {
      workflowId: `recon-exception-${input.exceptionId}`,
      taskQueue,
      args: [input],
    });
    await env.sleep(RECON_EXCEPTION_STALE_MS);
    return { handle, result: await handle.result() };
  },
});

/**
 * An exception's timer started delayed until its due time (as a run starts it), woken an hour
 * in by the test clock, which advances it past the due time: the stale event at once.
 */
export const reconExceptionDue = scenario({
  name: 'recon-exception-due',
  input: (nowMs) => ({
    exceptionId: fixtureId(112),
    mode: 'test' as const,
    dueAt: new Date(nowMs + RECON_EXCEPTION_STALE_MS).toISOString(),
  }),
  activities: () =>
    ({
      markReconExceptionStale: () => Promise.resolve(true),
    }) satisfies Partial<Activities>,
  run: async (env, taskQueue, input) => {
    const options = {
      workflowId: `recon-exception-${input.exceptionId}`,
      taskQueue,
      args: [input] as [typeof input],
    };
    await env.client.workflow.start(reconExceptionWorkflow, {
      ...options,
      startDelay: RECON_EXCEPTION_STALE_MS,
    });
    await env.sleep(60 * 60 * 1000);
    const handle = await env.client.workflow.signalWithStart(reconExceptionWorkflow, {
      ...options,
      signal: reconExceptionWake,
    });
    await handle.executeUpdate(clockUpdates.advanceTime, { args: [{ seconds: 72 * 3600 }] });
    return { handle, result: await handle.result() };
  },
});

/** A dispute: opened, evidence sent (under review), then won by the provider's decision. */
export const disputeEvidenceWon = scenario({
  name: 'dispute-evidence-won',
  input: (nowMs) => disputeInput(fixtureId(91), nowMs),
  activities: () => disputeActivities(),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openDisputeWorkflow(env, taskQueue, input), async (handle) => ({
      evidence: await disputeEvidence(handle, 'Signed delivery receipt'),
      closed: await closeDisputeWorkflow(handle, 'won'),
    })),
});

/** A Test Mode dispute with no evidence by its due date: lost then. */
export const disputeExpired = scenario({
  name: 'dispute-expired',
  input: (nowMs) => disputeInput(fixtureId(92), nowMs),
  activities: () => disputeActivities(),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openDisputeWorkflow(env, taskQueue, input), () => Promise.resolve()),
});

/** A dispute of what cannot be disputed: declined as data, nothing moves. */
export const disputeDeclined = scenario({
  name: 'dispute-declined',
  input: (nowMs) => disputeInput(fixtureId(93), nowMs),
  activities: () => disputeActivities({ declined: true }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openDisputeWorkflow(env, taskQueue, input), () => Promise.resolve()),
});

// --- test clocks (src/workflows/clock.ts) ---

/** Moves a Test Mode payment's clock, as `POST /api/v1/testing/advance-time` does. */
export const advanceTime = (handle: WorkflowHandle, seconds: number): Promise<AdvanceTimeResult> =>
  handle.executeUpdate(clockUpdates.advanceTime, { args: [{ seconds }] });

const DAY_SECONDS = 24 * 60 * 60;

/**
 * A seven-day hold: an advance of three days falls short (the hold keeps its last four days),
 * a second of four days and a second passes `expires_at`: refunded at once, before it answers.
 */
export const escrowExpiredByAdvance = scenario({
  name: 'escrow-expired-by-advance',
  input: (nowMs) =>
    holdInput(fixtureId(100), { expiresAt: new Date(nowMs + SEVEN_DAYS).toISOString() }),
  activities: () => fakeEscrow().activities,
  run: async (env, taskQueue, input) =>
    thenToEnd(await openHold(env, taskQueue, input), async (handle) => [
      await advanceTime(handle, 3 * DAY_SECONDS),
      await advanceTime(handle, 4 * DAY_SECONDS + 1),
    ]),
});

/** A payment code advanced past its expiry (and the grace after it): expired at once. */
export const depositExpiredByAdvance = scenario({
  name: 'deposit-expired-by-advance',
  input: () => depositInput(fixtureId(101)),
  activities: (env) => depositActivities(env, 'pending'),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openDeposit(env, taskQueue, input), (handle) =>
      advanceTime(handle, THIRTY_MINUTES / 1000 + 60),
    ),
});

/** A card payment waiting on 3-D Secure, advanced past its hour: canceled, the deposit expired. */
export const cardDepositExpiredByAdvance = scenario({
  name: 'card-deposit-expired-by-advance',
  input: () => cardDepositInput(fixtureId(102), 'pm_card_authenticationRequired'),
  activities: (env) => cardActivities(env, { created: 'requires_action' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openCardDeposit(env, taskQueue, input), (handle) =>
      advanceTime(handle, 2 * 60 * 60),
    ),
});

/** A Test Mode dispute advanced past its evidence deadline with none given: lost at once. */
export const disputeExpiredByAdvance = scenario({
  name: 'dispute-expired-by-advance',
  input: (nowMs) => disputeInput(fixtureId(103), nowMs),
  activities: () => disputeActivities(),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openDisputeWorkflow(env, taskQueue, input), (handle) =>
      advanceTime(handle, 8 * DAY_SECONDS),
    ),
});

/** A cashout still pending when an advance passes its TTL: the provider is asked, says failed. */
export const cashoutAskedAtAdvance = scenario({
  name: 'cashout-asked-at-advance',
  input: () => cashoutInput(fixtureId(104)),
  activities: () => cashoutActivities({ sent: 'pending', checked: 'failed' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openCashout(env, taskQueue, input), (handle) =>
      advanceTime(handle, THIRTY_MINUTES / 1000),
    ),
});

// --- an operator's resolution (src/workflows/resolution.ts) ---

/** What an operator sends from the admin endpoint: the admin credential's id is kept too. */
export const resolutionOf = (outcome: ResolutionOutcome): Resolution => ({
  outcome,
  reason: 'Provider support confirmed the outcome by phone (ticket 4711)',
  operator: 'Ada Operator',
  adminId: 'c0000000-0000-4000-8000-000000000001',
  via: 'api',
});

/**
 * The provider's notification never came; an operator resolves the deposit completed, the
 * provider confirms it was paid: the wallet credited.
 */
export const depositResolved = scenario({
  name: 'deposit-resolved',
  input: () => depositInput(fixtureId(110)),
  activities: (env) => depositActivities(env, 'completed'),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openDeposit(env, taskQueue, input), (handle) =>
      handle.executeUpdate(resolveUpdate, { args: [resolutionOf('completed')] }),
    ),
});

/**
 * The provider accepted the cashout and never told; resolved failed, the provider cancels it:
 * everything given back.
 */
export const cashoutResolvedFailed = scenario({
  name: 'cashout-resolved-failed',
  input: () => cashoutInput(fixtureId(111)),
  activities: () => cashoutActivities({ sent: 'pending', checked: 'pending' }),
  run: async (env, taskQueue, input) =>
    thenToEnd(await openCashout(env, taskQueue, input), (handle) =>
      handle.executeUpdate(resolveUpdate, { args: [resolutionOf('failed')] }),
    ),
});

/** What the recorder needs of a scenario, whatever its workflow. */
// --- bulk payments ---

/** A batch's items as its activities would load them: transfers, or cashouts. */
export function batchTransferItems(first: number, count: number): BatchItemStart[] {
  return Array.from({ length: count }, (_, index) => {
    const input = transferInput(fixtureId(first + index));
    return {
      index,
      kind: 'transfer' as const,
      workflowId: workflowIds.transfer(input.transactionId),
      input,
      walletIds: [input.fromWalletId, input.toWalletId],
    };
  });
}

export function batchCashoutItems(first: number, count: number): BatchItemStart[] {
  return Array.from({ length: count }, (_, index) => {
    const input = cashoutInput(fixtureId(first + index));
    return {
      index,
      kind: 'cashout' as const,
      workflowId: workflowIds.cashout(input.transactionId),
      input,
      walletIds: [input.walletId],
    };
  });
}

export const batchInput = (
  batchId: string,
  overrides: Partial<BatchInput> & Pick<BatchInput, 'total'>,
): BatchInput => ({
  batchId,
  applicationId: APP,
  mode: 'test',
  kind: 'transfer',
  atomic: false,
  window: 2,
  ...overrides,
});

/**
 * A batch's activities over items kept in memory, and its items' payments' steps: a transfer of
 * a `declined` id and a cashout of a `refused` id are declined. `slots` answers each ask for
 * rate-limit room in turn (then all that is asked); `recorded` keeps what the batch wrote.
 */
export function batchActivities(
  items: readonly BatchItemStart[],
  options: {
    declined?: readonly string[];
    refused?: readonly string[];
    slots?: ReadonlyArray<{ taken: number; retryAfterMs: number }>;
    /** After `slots`, no room any more (a limit reached for good), instead of all that is asked. */
    noRoomAfter?: boolean;
  } = {},
) {
  const recorded = new Map<number, BatchItemEnd>();
  const canceled = new Set<number>();
  const slots = [...(options.slots ?? [])];
  const declined = new Set(options.declined ?? []);
  const refused = new Set(options.refused ?? []);
  const counts = () => ({
    succeeded: [...recorded.values()].filter((r) => r.status === 'succeeded').length,
    failed: [...recorded.values()].filter((r) => r.status === 'failed').length,
    canceled: canceled.size,
  });
  const pending = (index: number) => !recorded.has(index) && !canceled.has(index);
  const activities = {
    loadBatchItems: ({ from, limit }: { batchId: string; from: number; limit: number }) =>
      Promise.resolve(items.filter((i) => i.index >= from && pending(i.index)).slice(0, limit)),
    takeBatchItemSlots: ({ want }: { batchId: string; want: number }) =>
      Promise.resolve(
        slots.shift() ??
          (options.noRoomAfter
            ? { taken: 0, retryAfterMs: 60_000 }
            : { taken: want, retryAfterMs: 0 }),
      ),
    recordBatchItems: ({ results }: { batchId: string; results: BatchItemEnd[] }) => {
      for (const r of results) if (pending(r.index)) recorded.set(r.index, r);
      return Promise.resolve();
    },
    cancelBatchItems: ({ from }: { batchId: string; from: number }) => {
      const left = items.filter((i) => i.index >= from && pending(i.index));
      for (const i of left) canceled.add(i.index);
      return Promise.resolve(left.length);
    },
    endBatch: (_: { batchId: string }) => Promise.resolve({ status: endedBatchStatus(counts()) }),
    runAtomicBatch: (_: { batchId: string }) => Promise.resolve({ status: 'completed' as const }),
    // The real page: it starts each transfer on the test server and waits for it.
    runBatchTransfers,
    transferFunds: (input: TransferInput) =>
      declined.has(input.transactionId)
        ? Promise.reject(insufficientFunds())
        : transferSucceeds(input),
    ...cashoutActivities({ sent: 'pending' }),
    sendMoneyOut: ({ transactionId }: { transactionId: string }) =>
      refused.has(transactionId)
        ? Promise.reject(cashoutRefused())
        : Promise.resolve({ id: 'po_fixture', status: 'pending' as const }),
  } satisfies Partial<Activities>;
  return { activities, recorded, canceled, counts };
}

/** Starts a batch's workflow as the API does; answers its handle and, once it ended, its end. */
export async function runBatch(env: TestWorkflowEnvironment, taskQueue: string, input: BatchInput) {
  const handle = await env.client.workflow.start(batchWorkflow, {
    workflowId: workflowIds.batch(input.batchId),
    taskQueue,
    args: [input],
    typedSearchAttributes: [{ key: SearchAttributes.ApplicationId, value: APP }],
  });
  return { handle, result: await handle.result() };
}

/** Three transfers, two at a time, the second declined; a run starts two and continues as new. */
export const batchTransfersContinued = scenario({
  name: 'batch-transfers-continued',
  input: () => batchInput(fixtureId(100), { total: 3, itemsPerRun: 2 }),
  activities: () =>
    batchActivities(batchTransferItems(101, 3), { declined: [fixtureId(102)] }).activities,
  run: async (env, taskQueue, input) => {
    const { handle } = await runBatch(env, taskQueue, input);
    // The first run: the one that continued as new.
    return { handle: env.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId) };
  },
});

/** Two cashouts: each saga tells the batch its answer, the second refused by the provider. */
export const batchCashouts = scenario({
  name: 'batch-cashouts',
  input: () => batchInput(fixtureId(110), { total: 2, kind: 'mobile_money_cashout' }),
  activities: () =>
    batchActivities(batchCashoutItems(111, 2), { refused: [fixtureId(112)] }).activities,
  run: runBatch,
});

/** A cashout started by a batch, refused: it tells its batch before it ends (the saga's history). */
export const cashoutRefusedInBatch = scenario({
  name: 'cashout-refused-in-batch',
  input: () => batchInput(fixtureId(140), { total: 1, kind: 'mobile_money_cashout' }),
  activities: () =>
    batchActivities(batchCashoutItems(141, 1), { refused: [fixtureId(141)] }).activities,
  run: async (env, taskQueue, input) => {
    await runBatch(env, taskQueue, input);
    return { handle: env.client.workflow.getHandle(workflowIds.cashout(fixtureId(141))) };
  },
});

/** The rate limit has no room at first: the batch waits, then a cancel ends what is left. */
export const batchCanceled = scenario({
  name: 'batch-canceled',
  input: () => batchInput(fixtureId(120), { total: 4 }),
  activities: () =>
    batchActivities(batchTransferItems(121, 4), {
      slots: [{ taken: 1, retryAfterMs: 0 }],
      noRoomAfter: true,
    }).activities,
  run: async (env, taskQueue, input) => {
    const handle = await env.client.workflow.start(batchWorkflow, {
      workflowId: workflowIds.batch(input.batchId),
      taskQueue,
      args: [input],
    });
    await waitForTransfer(env, fixtureId(121));
    await handle.executeUpdate(batchCancel);
    return { handle, result: await handle.result() };
  },
});

/** An atomic batch: its one step. */
export const batchAtomic = scenario({
  name: 'batch-atomic',
  input: () => batchInput(fixtureId(130), { total: 2, atomic: true }),
  activities: () => batchActivities([]).activities,
  run: runBatch,
});

/** Waits until the transfer's workflow has completed (a batch's child). */
async function waitForTransfer(env: TestWorkflowEnvironment, transactionId: string) {
  const handle = env.client.workflow.getHandle(workflowIds.transfer(transactionId));
  for (;;) {
    try {
      return await handle.result();
    } catch {
      await delay(50);
    }
  }
}

export type RecordedScenario = {
  name: string;
  activities: (env: TestWorkflowEnvironment) => Partial<Activities>;
  play: (env: TestWorkflowEnvironment, taskQueue: string) => Promise<{ handle: WorkflowHandle }>;
};

/** The executions tools/scripts/record-histories.ts records, one per path of each workflow type. */
export const RECORDED_SCENARIOS: readonly RecordedScenario[] = [
  transferCompleted,
  transferDeclined,
  depositPaidNotify,
  depositExpired,
  depositSync,
  cardDepositSucceeded,
  cardDepositDeclined,
  cardDepositAuthenticated,
  cardDepositExpired,
  escrowPartialReleaseRefund,
  escrowReleaseToAnotherWallet,
  escrowHoldDeclined,
  escrowHoldMadeBefore,
  escrowExpired,
  cashoutSettled,
  cashoutRefusedAtOnce,
  cashoutFailedLater,
  cashoutAskedAtTtl,
  payoutPaidAtOnce,
  payoutRefusedAtOnce,
  payoutFailedLater,
  payoutReversed,
  refundCompleted,
  refundFailedLater,
  depositResolved,
  cashoutResolvedFailed,
  maintenance,
  onboardingVerified,
  onboardingDocument,
  onboardingCardRefused,
  reconciliation,
  reconRun,
  reconDaily,
  reconExceptionStale,
  reconExceptionDue,
  reconAdjusted,
  reconAdjustDeclined,
  disputeEvidenceWon,
  disputeExpired,
  disputeDeclined,
  escrowExpiredByAdvance,
  depositExpiredByAdvance,
  cardDepositExpiredByAdvance,
  disputeExpiredByAdvance,
  cashoutAskedAtAdvance,
  batchTransfersContinued,
  batchCashouts,
  batchCanceled,
  batchAtomic,
  cashoutRefusedInBatch,
  ...WEBHOOK_SCENARIOS,
];
