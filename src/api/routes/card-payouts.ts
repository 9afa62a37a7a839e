import { findMoneyOut } from '../../db/money-out';
import {
  PAYOUTS_NOT_ENABLED,
  canReceivePayouts,
  findPayoutAccount,
} from '../../db/payout-accounts';
import { cardPayoutWorkflow } from '../../workflows/card-payout';
import { workflowIds } from '../../workflows/ids';
import { moneyOutInput } from '../../workflows/payment-inputs';
import { moneyOutUpdates } from '../../workflows/money-out-shared';
import { moneyOutReserveRules } from '../../domain/money-rules';
import type { ApiDeps } from '../deps';
import { AppError, assertLiveProvider, errorResponse, unlessDeclined } from '../errors';
import { idFromKey } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { CardPayoutRequest, cardPayoutFields } from '../payment-requests';
import { startPaymentWithUpdate } from '../workflow-starts';
import { MoneyOutBody, moneyOutBody } from '../serializers';

export function cardPayoutRoutes(deps: ApiDeps): Route[] {
  const { pool, providers } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/transactions/wallet/card-payout',
      summary:
        'Card payout (a money-out saga in Temporal): reserves the amount and fees from the ' +
        'wallet, asks the card provider to pay the owner’s debit card, then settles or gives ' +
        'everything back; needs the owner’s onboarding with payouts enabled and a payout card',
      tag: 'Transactions',
      auth: 'card_payouts',
      idempotent: true,
      body: CardPayoutRequest,
      responses: {
        200: {
          description:
            'The payout: `completed` when the provider paid at once, `pending` while it has ' +
            'not told, `failed` (everything given back) when it failed after accepting it',
          schema: MoneyOutBody,
        },
        400: errorResponse(
          'Payouts are not enabled for this wallet, insufficient funds, the provider refused, or the wallet holds another currency than the application',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The wallet is disabled or belongs to another application or mode'),
        404: errorResponse('Wallet not found'),
        422: errorResponse('Validation failure, or an Idempotency-Key reused with another request'),
        429: errorResponse('Rate limit exceeded (`card_payouts`)'),
        503: errorResponse('Live Mode provider credentials are not configured'),
      },
      handler: async ({ caller, body, idempotency, answerEarly }) => {
        const transactionId = idFromKey(caller, idempotency, 'card_payout');
        const account = await findPayoutAccount(pool, caller, body.wallet_id);
        await answerEarly(transactionId, moneyOutReserveRules, {
          wallets: { wallet: body.wallet_id },
          checks: () => {
            assertLiveProvider(caller, providers.liveConnect, 'card payouts');
            if (!canReceivePayouts(account)) {
              throw new AppError('invalid_request', PAYOUTS_NOT_ENABLED);
            }
          },
        });
        const opened = unlessDeclined(
          await startPaymentWithUpdate(deps, cardPayoutWorkflow, {
            workflowId: workflowIds.payout(transactionId),
            args: [
              moneyOutInput(
                'payout',
                caller,
                transactionId,
                // A retry whose payment exists skips the checks: its workflow keeps its first input.
                cardPayoutFields(body, account?.account_id),
              ),
            ],
            caller,
            type: 'card_payout',
            walletIds: [body.wallet_id],
            update: moneyOutUpdates.open,
          }),
        );
        const record = await findMoneyOut(pool, opened.transactionId);
        if (!record) throw new Error(`payout ${opened.transactionId} answered without a record`);
        return { body: moneyOutBody(record) };
      },
    }),
  ];
}
