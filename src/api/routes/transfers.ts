import { workflowIds } from '../../workflows/ids';
import { transferInput } from '../../workflows/payment-inputs';
import { transferWorkflow } from '../../workflows/transfer';
import { transferRules } from '../../domain/money-rules';
import type { ApiDeps } from '../deps';
import { unlessDeclined, errorResponse } from '../errors';
import { answerUnderKey, idFromKey } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { TransferRequest, transferFields } from '../payment-requests';
import { TransactionBody, madeStepAnswer } from '../serializers';
import { paymentSearchAttributes, runPaymentWorkflow } from '../workflow-starts';
import { transferAnsweredLocally } from '../../temporal/settlements';

export function transferRoutes(deps: ApiDeps): Route[] {
  const { pool, config } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/transactions/wallet/transfer',
      summary: 'Transfer between two wallets of the application (a Temporal workflow)',
      tag: 'Transactions',
      auth: 'transfers',
      idempotent: true,
      body: TransferRequest,
      responses: {
        200: { description: 'The completed transfer', schema: TransactionBody },
        400: errorResponse(
          'Insufficient funds, the same wallet on both sides, or wallets of different currencies',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('A wallet is disabled or belongs to another application or mode'),
        404: errorResponse('Wallet not found'),
        422: errorResponse('Validation failure, or an Idempotency-Key reused with another request'),
      },
      handler: async ({ caller, body, idempotency, answerEarly }) => {
        const transactionId = idFromKey(caller, idempotency, 'transfer');
        await answerEarly(
          transactionId,
          transferRules,
          {
            wallets: { from: body.from_wallet_id, to: body.to_wallet_id },
            params: {
              fromWalletId: body.from_wallet_id,
              toWalletId: body.to_wallet_id,
              amount: body.amount,
            },
          },
          deps.wallets,
        );
        const completed = unlessDeclined(
          await runPaymentWorkflow(deps, transferWorkflow, {
            workflowId: workflowIds.transfer(transactionId),
            taskQueue: config.temporal.taskQueue,
            timeoutMs: config.api.requestTimeoutMs,
            args: [
              {
                ...transferInput(caller, transactionId, transferFields(body)),
                ...answerUnderKey(idempotency),
              },
            ],
            typedSearchAttributes: paymentSearchAttributes(caller, 'transfer', [
              body.from_wallet_id,
              body.to_wallet_id,
            ]),
            answerLocally: transferAnsweredLocally,
          }),
        );
        return madeStepAnswer(pool, completed);
      },
    }),
  ];
}
