import { z } from 'zod';
import { findTransaction, findTransactionByReference } from '../../db/transactions';
import { cardDepositUpdates, depositUpdates } from '../../workflows/shared';
import type { ApiDeps } from '../deps';
import { errorResponse, notFound } from '../errors';
import { defineRoute, type Route } from '../route';
import { StatusBody } from '../serializers';
import { updateDeposit } from '../temporal';

export function syncRoutes(deps: ApiDeps): Route[] {
  const { pool, temporal, config } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/transactions/sync/:reference_id',
      summary:
        'Ask the provider now and reconcile the transaction at once (a pending mobile-money or ' +
        'card deposit), by provider reference or transaction id',
      tag: 'Transactions',
      auth: 'default',
      params: z.object({ reference_id: z.string().min(1).max(255) }),
      opaqueParams: ['reference_id'],
      responses: {
        200: { description: 'The transaction’s status after reconciliation', schema: StatusBody },
        401: errorResponse('Missing or invalid credentials'),
        404: errorResponse('Transaction not found'),
      },
      handler: async ({ caller, params }) => {
        const transaction = await findTransactionByReference(pool, caller, params.reference_id);
        if (!transaction) throw notFound('Transaction');
        let status: string = transaction.status;
        const type = transaction.transaction_type;
        if (
          (type === 'mobile_money_deposit' || type === 'card_deposit') &&
          transaction.status === 'pending'
        ) {
          const card = type === 'card_deposit';
          status =
            (await updateDeposit(
              temporal,
              transaction.id,
              config.api.requestTimeoutMs,
              (handle) =>
                handle.executeUpdate(card ? cardDepositUpdates.sync : depositUpdates.sync),
              card ? 'cardDeposit' : 'deposit',
            )) ?? (await findTransaction(pool, transaction.id))!.status;
        }
        return {
          body: {
            status,
            transaction_id: transaction.id,
            message:
              status === transaction.status
                ? `Transaction is ${status}; the provider reports no change`
                : `Transaction reconciled with the provider: ${transaction.status} -> ${status}`,
          },
        };
      },
    }),
  ];
}
