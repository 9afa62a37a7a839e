import { z } from 'zod';
import { findTransaction } from '../../db/transactions';
import { minorTextToWireInteger } from '../../domain/money';
import { mobileMoneyDepositWorkflow } from '../../workflows/deposit';
import { workflowIds } from '../../workflows/ids';
import { depositUpdates, type DepositOpened } from '../../workflows/shared';
import { assertOwned } from '../access';
import type { ApiDeps } from '../deps';
import { startDeposit } from '../deposit-start';
import { AppError, errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import { BodyId, Metadata, PositiveMinorUnits } from '../schemas';
import { MetadataRecord, StatusBody } from '../serializers';
import { deliverNotification, sandboxRecord, simulateCashout } from '../provider-notifications';

const DepositRequest = z.object({
  wallet_id: BodyId,
  amount: PositiveMinorUnits,
  metadata: Metadata.optional(),
});

const DepositResponse = z
  .object({
    transaction_id: z.string(),
    payment_code: z.object({
      status: z.string(),
      result: z.object({
        id: z.string(),
        code: z.string(),
        amount: z.number().int(),
        currency: z.literal('SLE'),
        instructions: z.string(),
        expires_at: z.string(),
      }),
    }),
    transaction: z.object({
      id: z.string(),
      wallet_id: z.string(),
      amount: z.number().int(),
      currency: z.literal('SLE'),
      status: z.string(),
      total_amount_paid: z.number().int(),
      provider_fee: z.number().int(),
      application_fee: z.number().int(),
      metadata: MetadataRecord,
    }),
  })
  .meta({ id: 'MobileMoneyDeposit' });

/** `metadata` is the request's: the row was written with it (a retry's body is the same). */
function depositBody(
  o: DepositOpened,
  metadata: Record<string, string>,
): z.infer<typeof DepositResponse> {
  return {
    transaction_id: o.transactionId,
    payment_code: {
      status: o.paymentCode.status,
      result: {
        id: o.paymentCode.id,
        code: o.paymentCode.code,
        amount: minorTextToWireInteger(o.paymentCode.amount),
        currency: 'SLE',
        instructions: o.paymentCode.instructions,
        expires_at: o.paymentCode.expiresAt,
      },
    },
    transaction: {
      id: o.transactionId,
      wallet_id: o.deposit.walletId,
      amount: minorTextToWireInteger(o.deposit.amount),
      currency: 'SLE',
      status: 'pending',
      total_amount_paid: minorTextToWireInteger(o.deposit.totalAmountPaid),
      provider_fee: minorTextToWireInteger(o.deposit.providerFee),
      application_fee: minorTextToWireInteger(o.deposit.applicationFee),
      metadata,
    },
  };
}

const SimulateRequest = z.object({
  transaction_id: BodyId,
  status: z.enum(['successful', 'failed']).default('successful'),
});

export function depositRoutes(deps: ApiDeps): Route[] {
  const { pool, providers } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/transactions/wallet/mobile-money-deposit',
      summary:
        'Mobile-money deposit: answers with the payment code once the provider created it; ' +
        'the deposit completes when the payer pays (a Temporal workflow)',
      tag: 'Deposits',
      auth: 'mobile_money_deposits',
      idempotent: true,
      body: DepositRequest,
      responses: {
        200: {
          description: 'The payment code and the pending deposit (amounts in SLE cents)',
          schema: DepositResponse,
        },
        400: errorResponse(
          'The provider failed to create the payment code; or the wallet holds another currency than the application (Wallets hold different currencies)',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The wallet is disabled or belongs to another application or mode'),
        404: errorResponse('Wallet not found'),
        422: errorResponse(
          'Validation failure: amount must be a positive integer of SLE cents, and convert to at least 0.01 of a USD application',
        ),
        503: errorResponse('Live Mode provider credentials are not configured'),
      },
      handler: async (request) => {
        const { opened } = await startDeposit(deps, request, {
          type: 'mobile_money_deposit',
          live: { provider: providers.liveMobileMoney, what: 'mobile-money deposits' },
          workflow: mobileMoneyDepositWorkflow,
          workflowId: workflowIds.deposit,
          input: (fields) => fields,
          update: depositUpdates.open,
        });
        return { body: depositBody(opened, request.body.metadata ?? {}) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/testing/simulate-mobile-money-webhook',
      summary:
        'Test Mode only: the sandbox provider settles a pending deposit (or pays or fails a ' +
        'pending cashout) and sends its signed notification through the same path a live ' +
        'provider notification takes',
      tag: 'Testing',
      auth: 'default',
      testModeOnly: true,
      body: SimulateRequest,
      responses: {
        200: { description: 'The deposit’s status after the notification', schema: StatusBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('Live Mode credentials used, or another application’s transaction'),
        404: errorResponse('Transaction not found, or the sandbox has no record of it'),
        422: errorResponse('Validation failure'),
      },
      handler: async ({ caller, body }) => {
        const id = body.transaction_id.toLowerCase();
        const row = /^[0-9a-f-]{36}$/.test(id) ? await findTransaction(pool, id) : null;
        const transaction = assertOwned(caller, row, 'Transaction');
        if (transaction.transaction_type === 'mobile_money_cashout') {
          return { body: await simulateCashout(deps, transaction, body.status) };
        }
        if (
          transaction.transaction_type !== 'mobile_money_deposit' ||
          !transaction.provider_reference
        ) {
          throw new AppError('not_found', 'Mobile-money deposit not found');
        }
        const sandbox = providers.sandboxMobileMoney;
        const code = await sandboxRecord(
          sandbox.settle(
            transaction.provider_reference,
            body.status === 'successful' ? 'completed' : 'failed',
          ),
        );
        const notification = sandbox.notificationFor(code, Math.floor(Date.now() / 1000));
        const parsed = sandbox.parseNotification(notification.body, notification.headers);
        if (!parsed) throw new Error('the sandbox could not verify its own notification');
        const delivered = await deliverNotification(
          deps,
          { name: sandbox.name, mode: 'test' },
          parsed,
          JSON.parse(notification.body),
        );
        const status = delivered.status ?? (await findTransaction(pool, transaction.id))!.status;
        return {
          body: {
            message: `Simulated ${body.status} mobile-money payment; the deposit is ${status}`,
            transaction_id: transaction.id,
            status,
          },
        };
      },
    }),
  ];
}
