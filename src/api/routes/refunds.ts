import { z } from 'zod';
import { readCardCase } from '../../db/card-cases';
import { depositFacts } from '../../db/card-cases';
import { findMoneyOut } from '../../db/money-out';
import { cardRefundRules } from '../../domain/money-rules';
import { cardRefundWorkflow } from '../../workflows/card-refund';
import { workflowIds } from '../../workflows/ids';
import { moneyOutUpdates } from '../../workflows/money-out-shared';
import { auditEntry } from '../audit';
import type { ApiDeps } from '../deps';
import { assertLiveProvider, errorResponse, unlessDeclined } from '../errors';
import { idFromKey } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { Metadata, PositiveAmount, uuidPattern } from '../schemas';
import { RefundBody, refundBody } from '../serializers';
import { startPaymentWithUpdate } from '../workflow-starts';

const REFUND_REASONS = ['requested_by_customer', 'duplicate', 'fraudulent'] as const;

const RefundRequest = z
  .object({
    amount: PositiveAmount.optional().meta({
      description: 'Major units of the base currency; all that is left to refund when absent',
    }),
    reason: z
      .enum(REFUND_REASONS, { error: `must be one of ${REFUND_REASONS.join(', ')}` })
      .optional(),
    metadata: Metadata.optional(),
  })
  .optional()
  .transform((v) => v ?? {});

const RefundParams = z.object({ transaction_id: z.string() });

export function refundRoutes(deps: ApiDeps): Route[] {
  const { pool, providers } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/transactions/:transaction_id/refund',
      summary:
        'Refund a completed card deposit, in whole or in part (a money-out saga in Temporal): ' +
        'reserves the amount from the wallet the deposit credited, asks the card provider to ' +
        'refund the card, then settles or gives the money back; fees already paid stay paid',
      tag: 'Transactions',
      auth: 'refunds',
      idempotent: true,
      params: RefundParams,
      body: RefundRequest,
      responses: {
        200: {
          description:
            'The refund: `completed` when the provider refunded at once, `pending` while it ' +
            'has not told, `failed` (the amount given back) when it failed after accepting it',
          schema: RefundBody,
        },
        400: errorResponse(
          'Not a completed card deposit, more than is left to refund, insufficient funds, the provider refused, or the wallet holds another currency than the deposit',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse(
          'The deposit belongs to another application or mode, or its wallet is disabled',
        ),
        404: errorResponse('Transaction not found'),
        422: errorResponse('Validation failure, or an Idempotency-Key reused with another request'),
        429: errorResponse('Rate limit exceeded (`refunds`)'),
        503: errorResponse('Live Mode card provider keys are not configured'),
      },
      handler: async ({ ctx, caller, params, body, idempotency, answerEarly }) => {
        const transactionId = idFromKey(caller, idempotency, 'card_refund');
        // A retry whose first attempt reserved the refund, then died before its answer was
        // stored, answers that refund: the rules would now count it against what is left.
        const made =
          idempotency && !idempotency.fresh ? await findMoneyOut(pool, transactionId) : null;
        if (made) return { body: refundBody(made) };
        const id = params.transaction_id.toLowerCase();
        const facts = uuidPattern.test(id) ? await readCardCase(pool, id) : null;
        await answerEarly(transactionId, cardRefundRules, {
          wallets: { wallet: facts?.deposit.wallet_id ?? null },
          subjects: { deposit: facts && depositFacts(facts) },
          params: { amount: body.amount ?? null },
        });
        assertLiveProvider(caller, providers.liveCard, 'card refunds', 'the Stripe keys');
        const { deposit, left } = facts!;
        const walletId = deposit.wallet_id!;
        unlessDeclined(
          await startPaymentWithUpdate(deps, cardRefundWorkflow, {
            workflowId: workflowIds.refund(transactionId),
            args: [
              {
                kind: 'refund',
                transactionId,
                applicationId: caller.applicationId,
                mode: caller.mode,
                walletId,
                // All that is left when the request names no amount (decided again under the lock).
                amount: (body.amount ?? left).toString(),
                destination: {
                  deposit_id: deposit.id,
                  ...(body.reason && { reason: body.reason }),
                },
                ...(body.metadata && { metadata: body.metadata }),
                localSteps: true,
                audit: await auditEntry(pool, ctx, caller, {
                  action: 'refund.created',
                  target: { type: 'refund', id: transactionId },
                  details: {
                    deposit_id: deposit.id,
                    amount: (body.amount ?? left).toString(),
                    reason: body.reason ?? null,
                  },
                }),
              },
            ],
            caller,
            type: 'card_refund',
            walletIds: [walletId],
            update: moneyOutUpdates.open,
            // Settled on the provider's answer: a rerun of the task finds every step made. A
            // decline or a refund still pending goes the update's way, as the workflow records.
            answerLocally: (result) => result.status === 'opened' && result.outcome !== 'pending',
          }),
        );
        const record = await findMoneyOut(pool, transactionId);
        if (!record) throw new Error(`refund ${transactionId} answered without a record`);
        return { body: refundBody(record) };
      },
    }),
  ];
}
