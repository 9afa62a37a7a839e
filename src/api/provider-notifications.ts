import {
  receiveNotification,
  type NotificationKind,
  type ProviderMessage,
} from '../intake/notifications';
import { findMoneyOut } from '../db/money-out';
import type { TransactionRow } from '../db/transactions';
import type { Mode } from '../domain/types';
import { taskQueueOf } from '../temporal/task-queues';
import type { CardEvent, CardPayoutEvent } from '../providers/card';
import {
  ProviderRefusedError,
  type MobileMoneyNotification,
  type PayoutNotification,
} from '../providers/mobile-money';
import type { MoneyOutOutcome } from '../workflows/money-out-shared';
import type { DepositOutcome } from '../workflows/shared';
import type { ApiDeps } from './deps';
import { AppError } from './errors';

/**
 * The sandbox's own record of a payment, which the Test Mode discrepancy endpoint may have
 * removed: then a simulated notification has nothing to settle (404, nothing moves).
 */
export async function sandboxRecord<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (error) {
    if (error instanceof ProviderRefusedError) {
      throw new AppError('not_found', 'The sandbox has no record of this payment');
    }
    throw error;
  }
}

export type Delivered = { transactionId: string | null; status: DepositOutcome | null };

/**
 * The one path of a provider's message into the engine, live or sandbox (src/intake/notifications.ts
 * `receiveNotification`): kept, and handed to its payment's workflow, which settles exactly once.
 * One matching no payment yet is answered 200 and kept `unmatched` for the reconciliation to retry.
 */
async function deliver(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config' | 'logger' | 'providers'>,
  kind: NotificationKind,
  message: ProviderMessage,
  body: unknown,
): Promise<Delivered> {
  const resolution = await receiveNotification(
    {
      pool: deps.pool,
      temporal: deps.temporal,
      timeoutMs: deps.config.api.requestTimeoutMs,
      timeoutError: () => new AppError('timeout'),
      logger: deps.logger,
      providers: deps.providers,
      reconQueue: taskQueueOf(deps.config, 'maintenance'),
    },
    kind,
    message,
    body,
  );
  // A deposit's status is one of its outcomes (the workflow's answer, or the record's).
  return {
    transactionId: resolution.transactionId,
    status: resolution.status as DepositOutcome | null,
  };
}

/** A mobile-money provider's notification, to its mobile-money deposit. */
export function deliverNotification(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config' | 'logger' | 'providers'>,
  provider: { name: string; mode: Mode },
  notification: MobileMoneyNotification,
  body: unknown,
): Promise<Delivered> {
  const { paymentCodeId, reference, status } = notification;
  return deliver(
    deps,
    'deposit',
    {
      provider: provider.name,
      mode: provider.mode,
      paymentReference: paymentCodeId,
      reference,
      status,
    },
    body,
  );
}

/** A card provider's event, to its card deposit. */
export function deliverCardEvent(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config' | 'logger' | 'providers'>,
  provider: { name: string; mode: Mode },
  event: CardEvent,
  body: unknown,
): Promise<Delivered> {
  const { paymentId, reference, status } = event;
  return deliver(
    deps,
    'cardDeposit',
    {
      provider: provider.name,
      mode: provider.mode,
      paymentReference: paymentId,
      reference,
      status,
    },
    body,
  );
}

/** A card provider's event about a payout, to its card payout's saga (a paid one may fail later). */
export function deliverCardPayoutEvent(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config' | 'logger' | 'providers'>,
  provider: { name: string; mode: Mode },
  event: CardPayoutEvent,
  body: unknown,
): Promise<Delivered> {
  const { payoutId, reference, status } = event;
  return deliver(
    deps,
    'payout',
    {
      provider: provider.name,
      mode: provider.mode,
      paymentReference: payoutId,
      reference,
      status: status === 'paid' ? 'completed' : 'failed',
    },
    body,
  );
}

/**
 * A provider's payout notification, through the engine's one path for provider messages
 * (`receiveNotification`, kind `cashout`): kept and handed to the cashout's saga, which settles or
 * gives back exactly once. A provider speaks for its own mode only.
 */
export async function deliverPayoutNotification(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config' | 'logger' | 'providers'>,
  provider: { name: string; mode: Mode },
  notification: PayoutNotification,
  body: unknown,
): Promise<{ transactionId: string | null; status: MoneyOutOutcome | null }> {
  const resolution = await receiveNotification(
    {
      pool: deps.pool,
      temporal: deps.temporal,
      timeoutMs: deps.config.api.requestTimeoutMs,
      timeoutError: () => new AppError('timeout'),
      logger: deps.logger,
      providers: deps.providers,
      reconQueue: taskQueueOf(deps.config, 'maintenance'),
    },
    'cashout',
    {
      provider: provider.name,
      mode: provider.mode,
      paymentReference: notification.payoutId,
      reference: notification.reference,
      status: notification.status,
    },
    body,
  );
  return {
    transactionId: resolution.transactionId,
    status: resolution.status as MoneyOutOutcome | null,
  };
}

/**
 * `POST /api/v1/testing/simulate-mobile-money-webhook` naming a cashout: the sandbox settles
 * its payout and sends its signed notification through the path a live one takes.
 */
export async function simulateCashout(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config' | 'providers' | 'logger'>,
  transaction: TransactionRow,
  outcome: 'successful' | 'failed',
): Promise<{ message: string; transaction_id: string; status: string }> {
  const sandbox = deps.providers.sandboxMobileMoney;
  if (!transaction.provider_reference) {
    throw new AppError('invalid_request', 'The cashout has not reached the provider yet');
  }
  const payout = await sandboxRecord(
    sandbox.settlePayout(
      transaction.provider_reference,
      outcome === 'successful' ? 'completed' : 'failed',
    ),
  );
  const notification = sandbox.payoutNotificationFor(payout, Math.floor(Date.now() / 1000));
  const parsed = sandbox.parsePayoutNotification(notification.body, notification.headers);
  if (!parsed) throw new Error('the sandbox could not verify its own notification');
  const delivered = await deliverPayoutNotification(
    deps,
    { name: sandbox.name, mode: 'test' },
    parsed,
    JSON.parse(notification.body),
  );
  const status =
    delivered.status ?? (await findMoneyOut(deps.pool, transaction.id))?.row.status ?? 'pending';
  return {
    message: `Simulated ${outcome} mobile-money payout; the cashout is ${status}`,
    transaction_id: transaction.id,
    status,
  };
}
