import { z } from 'zod';
import { syncPayment } from '../../intake/notifications';
import { findTransactionByReference } from '../../db/transactions';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse, notFound } from '../errors';
import { defineRoute, type Route } from '../route';
import { StatusBody } from '../serializers';

export function syncRoutes(deps: ApiDeps): Route[] {
  const { pool, temporal, config } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/transactions/sync/:reference_id',
      summary:
        'Ask the provider now and reconcile the transaction at once, by provider reference or ' +
        'transaction id: every kind of transaction; a pending one a provider settles (a ' +
        'mobile-money or card deposit, a card payout, a mobile-money cashout) is synced as the ' +
        'scheduled reconciliation does, any other is answered as it stands',
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
        const status = await syncPayment(
          {
            pool,
            temporal,
            timeoutMs: config.api.requestTimeoutMs,
            timeoutError: () => new AppError('timeout'),
          },
          transaction,
        );
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
