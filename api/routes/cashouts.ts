import { z } from 'zod';
import { receiveNotification } from '../../activities/reconciliation';
import { findMoneyOut, type MoneyOutRecord } from '../../db/money-out';
import type { TransactionRow } from '../../db/transactions';
import { minorToMajorNumber } from '../../domain/money';
import type { Mode } from '../../domain/types';
import type { PayoutNotification } from '../../providers/mobile-money';
import { mobileMoneyCashoutWorkflow } from '../../workflows/cashout';
import { workflowIds } from '../../workflows/ids';
import { moneyOutUpdates, type MoneyOutOutcome } from '../../workflows/money-out-shared';
import { activeWallet } from '../access';
import type { ApiDeps } from '../deps';
import { AppError, assertLiveProvider, errorResponse, unlessDeclined } from '../errors';
import { idFromKey } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { BodyId, PositiveMinorUnits } from '../schemas';
import { TransactionBody, transactionBody } from '../serializers';
import { startPaymentWithUpdate } from '../temporal';

const CashoutRequest = z.object({
  wallet_id: BodyId,
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

/**
 * A provider's payout notification (live webhook or the sandbox's simulated one), through the
 * engine's one path for provider messages (activities/reconciliation.ts `receiveNotification`,
 * kind `cashout`): kept, matched to the cashout and handed to its saga, which settles or gives
 * back exactly once. A provider speaks for its own mode only.
 */
export async function deliverPayoutNotification(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config'>,
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
        400: errorResponse(
          'Insufficient funds, the provider refused the cashout, or the wallet holds another currency than the application',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The wallet is disabled or belongs to another application or mode'),
        404: errorResponse('Wallet not found'),
        422: errorResponse(
          'Validation failure (an amount below 0.01 once converted for a USD application), or an Idempotency-Key reused with another request',
        ),
        429: errorResponse('Rate limit exceeded (`mobile_money_cashouts`)'),
        503: errorResponse('Live Mode provider credentials are not configured'),
      },
      handler: async ({ caller, body, idempotency }) => {
        const wallet = await activeWallet(pool, caller, body.wallet_id);
        assertLiveProvider(caller, providers.liveMobileMoney, 'mobile-money cashouts');
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
