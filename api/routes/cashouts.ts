import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { findMoneyOut, findNotifiedMoneyOut, type MoneyOutRecord } from '../../db/money-out';
import { insertProviderNotification } from '../../db/provider-notifications';
import type { TransactionRow } from '../../db/transactions';
import { minorToMajorNumber } from '../../domain/money';
import type { Mode } from '../../domain/types';
import type { PayoutNotification } from '../../providers/mobile-money';
import { mobileMoneyCashoutWorkflow } from '../../workflows/cashout';
import { workflowIds } from '../../workflows/ids';
import { moneyOutUpdates, type MoneyOutOutcome } from '../../workflows/money-out-shared';
import { activeWallet } from '../access';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse, unlessDeclined } from '../errors';
import { idFromKey } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { PositiveMinorUnits, uuidPattern } from '../schemas';
import { TransactionBody, transactionBody } from '../serializers';
import { isNotFound, startPaymentWithUpdate, withDeadline } from '../temporal';

const CashoutRequest = z.object({
  wallet_id: z.string().min(1),
  amount: PositiveMinorUnits.meta({ description: 'What the phone receives, in SLE cents' }),
  phone_number: z
    .string()
    .regex(/^\+?[0-9]{6,15}$/, 'must be a phone number with its country code, digits only')
    .meta({ example: '+23276123456' }),
});

/** The Transaction record of a payout or cashout, with the provider's fee and reference. */
export const MoneyOutBody = TransactionBody.extend({
  currency: z.enum(['USD', 'SLE']),
  provider_fee: z.number().meta({ description: 'The provider’s fee, in the base currency' }),
  total_amount: z
    .number()
    .meta({ description: 'What the wallet paid: amount, provider fee and application fee' }),
  provider_reference: z.string().nullable().meta({ description: 'The provider’s payout id' }),
}).meta({ id: 'MoneyOut' });

export function moneyOutBody({ row, meta }: MoneyOutRecord): z.infer<typeof MoneyOutBody> {
  return {
    ...transactionBody(row),
    currency: row.currency,
    provider_fee: minorToMajorNumber(BigInt(meta.provider_fee)),
    total_amount: minorToMajorNumber(BigInt(meta.total)),
    provider_reference: row.provider_reference,
  };
}

/** The workflow kinds of a payment that leaves through the money-out saga. */
const MONEY_OUT_WORKFLOW = {
  mobile_money_cashout: 'cashout',
  card_payout: 'payout',
} as const;

/** Whether a transaction is a payout or cashout (its workflow answers `sync` and `notify`). */
export const isMoneyOut = (type: string): type is keyof typeof MONEY_OUT_WORKFLOW =>
  type in MONEY_OUT_WORKFLOW;

/**
 * Runs an update on a payout's or cashout's saga; null when that workflow is not running any
 * more (its record then tells the outcome).
 */
async function updateMoneyOut(
  temporal: Client,
  transaction: { id: string; transaction_type: keyof typeof MONEY_OUT_WORKFLOW },
  timeoutMs: number,
  run: (handle: ReturnType<Client['workflow']['getHandle']>) => Promise<MoneyOutOutcome>,
): Promise<MoneyOutOutcome | null> {
  const kind = MONEY_OUT_WORKFLOW[transaction.transaction_type];
  const handle = temporal.workflow.getHandle(workflowIds[kind](transaction.id));
  try {
    return await withDeadline(run(handle), timeoutMs);
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/**
 * `POST /api/v1/transactions/sync/{reference}` for a payout or cashout: asks its saga to ask
 * the provider now (the `sync` update); the status as it then stands.
 */
export async function syncMoneyOut(
  deps: Pick<ApiDeps, 'temporal' | 'config'>,
  transaction: TransactionRow,
): Promise<string> {
  if (!isMoneyOut(transaction.transaction_type) || transaction.status !== 'pending') {
    return transaction.status;
  }
  const type = transaction.transaction_type;
  const status = await updateMoneyOut(
    deps.temporal,
    { id: transaction.id, transaction_type: type },
    deps.config.api.requestTimeoutMs,
    (handle) => handle.executeUpdate(moneyOutUpdates.sync),
  );
  return status ?? transaction.status;
}

/**
 * A provider's payout notification (live webhook or the sandbox's simulated one): recorded,
 * matched to the cashout (by the provider's payout id, else our reference in its metadata), and
 * handed to its saga, which settles or gives back exactly once. A provider speaks for its own
 * mode only.
 */
export async function deliverPayoutNotification(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config'>,
  provider: { name: string; mode: Mode },
  notification: PayoutNotification,
  body: unknown,
): Promise<{ transactionId: string | null; status: MoneyOutOutcome | null }> {
  const lowered = notification.reference?.toLowerCase() ?? null;
  const reference = lowered && uuidPattern.test(lowered) ? lowered : null;
  const known = await findNotifiedMoneyOut(
    deps.pool,
    'mobile_money_cashout',
    notification.payoutId,
    reference,
  );
  await insertProviderNotification(deps.pool, {
    provider: provider.name,
    paymentReference: notification.payoutId,
    status: notification.status,
    transactionId: known?.id ?? null,
    body,
  });
  // The record is written before the provider is ever asked: a payout without one is not ours.
  if (!known || known.mode !== provider.mode) return { transactionId: null, status: null };
  const status = await updateMoneyOut(
    deps.temporal,
    { id: known.id, transaction_type: 'mobile_money_cashout' },
    deps.config.api.requestTimeoutMs,
    (handle) =>
      handle.executeUpdate(moneyOutUpdates.notify, { args: [{ status: notification.status }] }),
  );
  return { transactionId: known.id, status };
}

/**
 * `POST /api/v1/testing/simulate-mobile-money-webhook` naming a cashout: the sandbox settles
 * its payout and sends its signed notification through the path a live one takes.
 */
export async function simulateCashout(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config' | 'providers'>,
  transaction: TransactionRow,
  outcome: 'successful' | 'failed',
): Promise<{ message: string; transaction_id: string; status: string }> {
  const sandbox = deps.providers.sandboxMobileMoney;
  if (!transaction.provider_reference) {
    throw new AppError('invalid_request', 'The cashout has not reached the provider yet');
  }
  const payout = await sandbox.settlePayout(
    transaction.provider_reference,
    outcome === 'successful' ? 'completed' : 'failed',
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

export function cashoutRoutes(deps: ApiDeps): Route[] {
  const { pool, providers } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/transactions/wallet/mobile-money-cashout',
      summary:
        'Mobile-money cashout (a money-out saga in Temporal): reserves the amount and fees from ' +
        'the wallet, asks the provider to pay the phone, then settles or gives everything back',
      tag: 'Transactions',
      auth: 'mobile_money_cashouts',
      idempotent: true,
      body: CashoutRequest,
      responses: {
        200: {
          description:
            'The cashout, `pending` until the provider reports it paid (`completed`) or failed ' +
            '(`failed`, everything given back); amounts in the base currency',
          schema: MoneyOutBody,
        },
        400: errorResponse('Insufficient funds, or the provider refused the cashout'),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The wallet is disabled or belongs to another application or mode'),
        404: errorResponse('Wallet not found'),
        422: errorResponse('Validation failure, or an Idempotency-Key reused with another request'),
        429: errorResponse('Rate limit exceeded (`mobile_money_cashouts`)'),
        503: errorResponse('Live Mode provider credentials are not configured'),
      },
      handler: async ({ caller, body, idempotency }) => {
        const wallet = await activeWallet(pool, caller, body.wallet_id);
        if (caller.mode === 'live' && !providers.liveMobileMoney) {
          throw new AppError(
            'provider_unavailable',
            'Live mobile-money cashouts are not available: the provider credentials are not configured',
          );
        }
        const transactionId = idFromKey(caller, idempotency, 'mobile_money_cashout');
        const opened = unlessDeclined(
          await startPaymentWithUpdate(deps, mobileMoneyCashoutWorkflow, {
            workflowId: workflowIds.cashout(transactionId),
            args: [
              {
                kind: 'cashout',
                transactionId,
                applicationId: caller.applicationId,
                mode: caller.mode,
                walletId: wallet.id,
                amount: body.amount.toString(),
                destination: { phone_number: body.phone_number },
              },
            ],
            caller,
            type: 'mobile_money_cashout',
            walletIds: [wallet.id],
            update: moneyOutUpdates.open,
          }),
        );
        const record = await findMoneyOut(pool, opened.transactionId);
        if (!record) throw new Error(`cashout ${opened.transactionId} answered without a record`);
        return { body: moneyOutBody(record) };
      },
    }),
  ];
}
