/**
 * The intake of provider news, shared by the HTTP edge (sync route, provider webhooks) and the
 * `reconciliation` schedule's activities so that both take exactly the same path: `paymentSyncs`
 * asks a provider now; `notificationTargets` and `resolveNotification` route its messages.
 */
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { type SearchAttributePair, type UpdateDefinition } from '@temporalio/common';
import type { DatabasePool } from '../db/pool';
import {
  findNotifiedPayment,
  insertProviderNotification,
  type NotificationOutcome,
} from '../db/provider-notifications';
import { findTransaction } from '../db/transactions';
import type { Providers } from '../providers';
import { contradicts, keepContradictingMessage, type ErrorLog } from './contradictions';
import { keepUnapplied, type Unapplied, type UnappliedReason } from './unapplied';
import type { Mode, TransactionType } from '../domain/types';
import { isNotFound } from '../temporal/connection';
import { decodePayloadsIn } from '../temporal/data-converter';
import { workflowIds } from '../workflows/ids';
import { moneyOutUpdates, type MoneyOutProviderStatus } from '../workflows/money-out-shared';
import {
  cardDepositUpdates,
  depositUpdates,
  SearchAttributes,
  type CardPaymentState,
  type DepositOutcome,
} from '../workflows/shared';

/** What reaching a payment's workflow needs. */
export type TemporalDeps = {
  pool: DatabasePool;
  temporal: Client;
  /** How long to wait for a payment's workflow to answer. */
  timeoutMs: number;
  /** The error a wait past `timeoutMs` throws (the API's answers 504). */
  timeoutError?: () => Error;
  /** Where a provider's contradiction of an ended payment is logged. */
  logger?: ErrorLog;
  /** Asked whether a message that contradicts an ended payment still holds. */
  providers?: Providers;
  /** The maintenance task queue, where a contradiction's reconciliation exception is timed. */
  reconQueue?: string;
};

type WorkflowKind = 'deposit' | 'cardDeposit' | 'payout' | 'cashout' | 'refund';

/** How a pending payment of one kind is synced with its provider: its workflow's `sync` update. */
type PaymentSync = { workflow: WorkflowKind; sync: UpdateDefinition<string, []> };

/**
 * Every payment kind a provider settles. The sync route and the reconciliation read only this:
 * a new kind (card payouts, cashouts) is one line here, its workflow's `sync` update answering
 * the payment's status after asking the provider.
 */
export const paymentSyncs: Partial<Record<TransactionType, PaymentSync>> = {
  mobile_money_deposit: { workflow: 'deposit', sync: depositUpdates.sync },
  card_deposit: { workflow: 'cardDeposit', sync: cardDepositUpdates.sync },
  mobile_money_cashout: { workflow: 'cashout', sync: moneyOutUpdates.sync },
  card_payout: { workflow: 'payout', sync: moneyOutUpdates.sync },
  card_refund: { workflow: 'refund', sync: moneyOutUpdates.sync },
};

/** The payment kinds the reconciliation looks at. */
export const syncedPaymentTypes = (): TransactionType[] =>
  Object.keys(paymentSyncs) as TransactionType[];

/**
 * Asks the provider about a pending payment now and reconciles it at once; answers its status
 * then. A payment of another kind, or one no longer pending, is answered as it stands.
 */
export async function syncPayment(
  deps: TemporalDeps,
  payment: { id: string; transaction_type: string; status: string },
): Promise<string> {
  const how = paymentSyncs[payment.transaction_type as TransactionType];
  if (!how || payment.status !== 'pending') return payment.status;
  const status = await onWorkflow(deps, workflowIds[how.workflow](payment.id), (handle) =>
    handle.executeUpdate(how.sync),
  );
  return status ?? (await findTransaction(deps.pool, payment.id))?.status ?? payment.status;
}

type WorkflowHandle = ReturnType<Client['workflow']['getHandle']>;

/** Runs a call on a workflow, bounded by `timeoutMs`; null when that workflow is not running. */
export async function onWorkflow<T>(
  deps: Pick<TemporalDeps, 'temporal' | 'timeoutMs' | 'timeoutError'>,
  workflowId: string,
  run: (handle: WorkflowHandle) => Promise<T>,
): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          deps.timeoutError?.() ??
            new Error(`${workflowId} did not answer within ${deps.timeoutMs} ms`),
        ),
      deps.timeoutMs,
    );
  });
  try {
    return await Promise.race([run(deps.temporal.workflow.getHandle(workflowId)), deadline]);
  } catch (error) {
    // An update on a workflow that has completed is refused; the record tells its outcome.
    if (isNotFound(error)) return null;
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** A provider's verified message about a payment, as the engine reads it. */
export type ProviderMessage = {
  provider: string;
  /** The mode the provider speaks for: the sandbox for Test Mode, a live provider for Live. */
  mode: Mode;
  /** The provider's own reference of the payment (payment code, payment intent). */
  paymentReference: string;
  /** Our transaction id, from the metadata we sent with the payment; null when absent. */
  reference: string | null;
  status: string;
};

/**
 * Which payment workflows a provider's notification can reach, and how it is handed over. A
 * new kind (a payout's or a cashout's provider messages) is one entry of `notificationTargets`.
 */
type NotificationTarget = {
  transactionType: TransactionType;
  workflow: WorkflowKind;
  notify: (handle: WorkflowHandle, status: string) => Promise<string>;
  /**
   * How a payment with no record is started again from its closed workflow's input (see
   * `reopen`); a kind without it leaves such a message unmatched.
   */
  reopen?: {
    workflowType: string;
    open: UpdateDefinition<unknown, [], string>;
    /** The provider reference of what `open` answered; null for a refusal. */
    openedReference: (answer: unknown) => string | null;
  };
};

/**
 * A money-out kind's notifications go to its saga's `notify` (src/workflows/money-out.ts). Its
 * record is written before its provider is asked: no reopen.
 */
const moneyOutTarget = (
  transactionType: TransactionType,
  workflow: WorkflowKind,
): NotificationTarget => ({
  transactionType,
  workflow,
  notify: (handle, status) =>
    handle.executeUpdate(moneyOutUpdates.notify, {
      args: [{ status: status as MoneyOutProviderStatus }],
    }),
});

export const notificationTargets = {
  deposit: {
    transactionType: 'mobile_money_deposit',
    workflow: 'deposit',
    notify: (handle, status) =>
      handle.executeUpdate(depositUpdates.notify, {
        args: [{ status: status as DepositOutcome }],
      }),
    reopen: {
      workflowType: 'mobileMoneyDepositWorkflow',
      open: depositUpdates.open,
      openedReference: (answer) =>
        (answer as { paymentCode?: { id: string } }).paymentCode?.id ?? null,
    },
  },
  cardDeposit: {
    transactionType: 'card_deposit',
    workflow: 'cardDeposit',
    notify: (handle, status) =>
      handle.executeUpdate(cardDepositUpdates.notify, {
        args: [{ status: status as CardPaymentState }],
      }),
    reopen: {
      workflowType: 'cardDepositWorkflow',
      open: cardDepositUpdates.open,
      openedReference: (answer) =>
        (answer as { payment?: { paymentId: string } }).payment?.paymentId ?? null,
    },
  },
  cashout: moneyOutTarget('mobile_money_cashout', 'cashout'),
  payout: moneyOutTarget('card_payout', 'payout'),
  // A card refund is a money-out saga too: its provider events (src/intake/card-cases.ts) notify it.
  refund: moneyOutTarget('card_refund', 'refund'),
} as const satisfies Record<string, NotificationTarget>;

export type NotificationKind = keyof typeof notificationTargets;

/**
 * What became of a notification; `status` is the payment's status when it reached one, and
 * `unapplied` says why one about a payment could not settle it.
 */
export type Resolution = {
  outcome: NotificationOutcome;
  transactionId: string | null;
  status: string | null;
  unapplied?: Unapplied;
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const unmatched: Resolution = { outcome: 'unmatched', transactionId: null, status: null };
const unapplied = (reason: UnappliedReason, transactionId: string | null, why: string) =>
  ({ outcome: 'unapplied', transactionId, status: null, unapplied: { reason, why } }) as const;

/**
 * Settles a provider's message through its payment's workflow, which settles exactly once: found
 * by the provider's reference, else by our transaction id in its metadata (restarting a deposit
 * that lost its creation answer), else `unmatched`; another mode's or payment's: `unapplied`, for an operator.
 */
export async function resolveNotification(
  deps: TemporalDeps,
  kind: NotificationKind,
  message: ProviderMessage,
): Promise<Resolution> {
  const target: NotificationTarget = notificationTargets[kind];
  const lowered = message.reference?.toLowerCase() ?? null;
  const transactionId = lowered && UUID.test(lowered) ? lowered : null;
  const payment = await findNotifiedPayment(deps.pool, {
    transactionType: target.transactionType,
    paymentReference: message.paymentReference,
    transactionId,
  });
  if (payment) {
    // A provider speaks for its own mode only: the sandbox (Test Mode) can never settle a Live
    // Mode payment, whatever references its message carries, nor the reverse.
    if (payment.mode !== message.mode) {
      return unapplied('other_mode', payment.id, `the payment is a ${payment.mode} mode one`);
    }
    if (payment.providerReference === null) return unmatched;
    if (payment.providerReference !== message.paymentReference) {
      return unapplied('other_payment', payment.id, 'the payment has another provider reference');
    }
    return deliver(deps, kind, payment.id, message);
  }
  if (!transactionId || !target.reopen) return unmatched;
  return reopen(deps, kind, target.reopen, transactionId, message);
}

/**
 * Hands the message to the payment's workflow; a closed one answers the recorded status. A
 * message that contradicts the payment's end is kept (src/intake/contradictions.ts), never dropped.
 */
async function deliver(
  deps: TemporalDeps,
  kind: NotificationKind,
  transactionId: string,
  message: ProviderMessage,
): Promise<Resolution> {
  const target: NotificationTarget = notificationTargets[kind];
  const settled =
    (await onWorkflow(deps, workflowIds[target.workflow](transactionId), (handle) =>
      target.notify(handle, message.status),
    )) ?? (await findTransaction(deps.pool, transactionId))?.status;
  if (settled && contradicts(settled, message.status)) {
    await keepContradictingMessage(deps, kind, transactionId, message);
  }
  return { outcome: 'matched', transactionId, status: settled ?? null };
}

/**
 * A deposit with no record: its workflow closed without one (the provider's answer never came
 * back) or is still opening. A closed one is started again with its recorded input and
 * search attributes; the message then settles it if the provider answered the same payment.
 */
async function reopen(
  deps: TemporalDeps,
  kind: NotificationKind,
  how: NonNullable<NotificationTarget['reopen']>,
  transactionId: string,
  message: ProviderMessage,
): Promise<Resolution> {
  const workflowId = workflowIds[notificationTargets[kind].workflow](transactionId);
  const handle = deps.temporal.workflow.getHandle(workflowId);
  let described: Awaited<ReturnType<WorkflowHandle['describe']>>;
  try {
    described = await handle.describe();
  } catch (error) {
    if (isNotFound(error)) return unmatched;
    throw error;
  }
  const mode = described.typedSearchAttributes.get(SearchAttributes.PaymentMode);
  if (mode !== message.mode) {
    return unapplied('other_mode', transactionId, `the payment is a ${String(mode)} mode one`);
  }
  if (described.status.name === 'RUNNING') return unmatched;
  const history = await handle.fetchHistory();
  const payloads = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
  if (!payloads?.[0]) return unmatched;
  // The history is as Temporal keeps it (encrypted): decoded with the client's own codecs.
  const converter = deps.temporal.options.loadedDataConverter;
  const [first] = await decodePayloadsIn([payloads[0]], converter.payloadCodecs);
  const input = converter.payloadConverter.fromPayload(first);
  const attributes: SearchAttributePair[] = [];
  for (const key of Object.values(SearchAttributes)) {
    const value = described.typedSearchAttributes.get(key);
    if (value !== undefined) attributes.push({ key, value } as SearchAttributePair);
  }
  const start = new WithStartWorkflowOperation(how.workflowType, {
    workflowId,
    taskQueue: described.taskQueue,
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    args: [input],
    typedSearchAttributes: attributes.map((pair) =>
      pair.key.name === SearchAttributes.PaymentStatus.name
        ? { key: SearchAttributes.PaymentStatus, value: 'pending' }
        : pair,
    ),
  });
  const opened = await onWorkflow(deps, workflowId, () =>
    deps.temporal.workflow.executeUpdateWithStart(how.open, { startWorkflowOperation: start }),
  );
  if (!opened || how.openedReference(opened) !== message.paymentReference) return unmatched;
  return deliver(deps, kind, transactionId, message);
}

/**
 * A provider's message through the HTTP edge: resolved as `resolveNotification` says, then kept
 * with its outcome (an unmatched one is what the reconciliation retries, an unapplied one an
 * operator's).
 */
export async function receiveNotification(
  deps: TemporalDeps & { logger: ErrorLog },
  kind: NotificationKind,
  message: ProviderMessage,
  body: unknown,
): Promise<Resolution> {
  const keep = async (resolution: Resolution) => {
    const event = {
      provider: message.provider,
      kind,
      mode: message.mode,
      paymentReference: message.paymentReference,
      reference: message.reference,
      status: message.status,
      transactionId: resolution.transactionId,
      body,
    };
    if (resolution.unapplied) await keepUnapplied(deps, event, resolution.unapplied);
    else await insertProviderNotification(deps.pool, { ...event, outcome: resolution.outcome });
  };
  let resolution: Resolution;
  try {
    resolution = await resolveNotification(deps, kind, message);
  } catch (error) {
    // Temporal did not answer in time, say: kept for the reconciliation, and the provider's
    // own retry (it gets no 200) is as harmless as any duplicate.
    await keep(unmatched);
    throw error;
  }
  await keep(resolution);
  // As the dispute intake answers: the payment an unapplied event names is the operator's to see.
  return resolution.unapplied ? { ...resolution, transactionId: null } : resolution;
}
