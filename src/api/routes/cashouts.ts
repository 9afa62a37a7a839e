import { findMoneyOut } from '../../db/money-out';
import { mobileMoneyCashoutWorkflow } from '../../workflows/cashout';
import { workflowIds } from '../../workflows/ids';
import { moneyOutInput } from '../../workflows/payment-inputs';
import { moneyOutUpdates } from '../../workflows/money-out-shared';
import { moneyOutReserveRules } from '../../domain/money-rules';
import type { ApiDeps } from '../deps';
import { assertLiveProvider, errorResponse, unlessDeclined } from '../errors';
import { idFromKey } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { CashoutRequest, cashoutFields } from '../payment-requests';
import { MoneyOutBody, moneyOutBody } from '../serializers';
import { startPaymentWithUpdate } from '../workflow-starts';

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
      handler: async ({ caller, body, idempotency, answerEarly }) => {
        const transactionId = idFromKey(caller, idempotency, 'mobile_money_cashout');
        await answerEarly(transactionId, moneyOutReserveRules, {
          wallets: { wallet: body.wallet_id },
        });
        assertLiveProvider(caller, providers.liveMobileMoney, 'mobile-money cashouts');
        const opened = unlessDeclined(
          await startPaymentWithUpdate(deps, mobileMoneyCashoutWorkflow, {
            workflowId: workflowIds.cashout(transactionId),
            args: [moneyOutInput('cashout', caller, transactionId, cashoutFields(body))],
            caller,
            type: 'mobile_money_cashout',
            walletIds: [body.wallet_id],
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
