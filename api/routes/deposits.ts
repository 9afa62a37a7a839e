import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import {
  findTransaction,
  transactionColumns,
  transactionRow,
  type TransactionRow,
} from '../../db/transactions';
import { AppError, isErrorCode } from '../../domain/errors';
import type { Caller, Mode } from '../../domain/types';
import type { MobileMoneyNotification } from '../../providers/mobile-money';
import { SANDBOX_SIGNATURE_HEADER } from '../../providers/sandbox-mobile-money';
import { mobileMoneyDepositWorkflow } from '../../workflows/deposit';
import {
  depositUpdates,
  depositWorkflowId,
  SearchAttributes,
  type DepositOpened,
  type DepositOutcome,
} from '../../workflows/shared';
import { assertOwned, ownedWallet } from '../access';
import type { ApiDeps } from '../deps';
import { idFromKey } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { ErrorBody } from '../schemas';
import { paymentSearchAttributes, withDeadline } from '../temporal';

const err = (description: string) => ({ description, schema: ErrorBody });

const DepositRequest = z.object({
  wallet_id: z.string().min(1),
  amount: z
    .number({ error: 'amount must be an integer count of SLE cents' })
    .int('amount must be an integer count of SLE cents')
    .positive('amount must be greater than 0')
    .max(1e13, 'amount is too large')
    .transform((v) => BigInt(v)),
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
    }),
  })
  .meta({ id: 'MobileMoneyDeposit' });

function depositBody(o: DepositOpened): z.infer<typeof DepositResponse> {
  return {
    transaction_id: o.transactionId,
    payment_code: {
      status: o.paymentCode.status,
      result: {
        id: o.paymentCode.id,
        code: o.paymentCode.code,
        amount: Number(o.paymentCode.amount),
        currency: 'SLE',
        instructions: o.paymentCode.instructions,
        expires_at: o.paymentCode.expiresAt,
      },
    },
    transaction: {
      id: o.transactionId,
      wallet_id: o.deposit.walletId,
      amount: Number(o.deposit.amount),
      currency: 'SLE',
      status: 'pending',
      total_amount_paid: Number(o.deposit.totalAmountPaid),
      provider_fee: Number(o.deposit.providerFee),
      application_fee: Number(o.deposit.applicationFee),
    },
  };
}

/** A transaction of the caller's by our id or by the provider's reference; 404 otherwise. */
async function findByReference(
  db: CommonQueryMethods,
  caller: Caller,
  reference: string,
): Promise<TransactionRow> {
  const row = await db.maybeOne(sql.type(transactionRow)`
    SELECT ${transactionColumns}
    FROM transactions
    WHERE application_id = ${caller.applicationId} AND mode = ${caller.mode}
      AND (provider_reference = ${reference} OR id::text = ${reference.toLowerCase()})
    LIMIT 1`);
  if (!row) throw new AppError('not_found', 'Transaction not found');
  return row;
}

/**
 * The one path of a provider's notification into the engine, for the live provider's webhook
 * and the sandbox's simulated one alike: record it, find the deposit (by the provider's
 * reference, else by our reference in the notification's metadata), and hand it to the
 * deposit's workflow, which settles it exactly once.
 */
export async function deliverNotification(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config'>,
  provider: { name: string; mode: Mode },
  notification: MobileMoneyNotification,
  body: unknown,
): Promise<{ transactionId: string | null; status: DepositOutcome | null }> {
  const reference = notification.reference?.toLowerCase() ?? null;
  const known = await deps.pool.maybeOne(sql.type(
    z.object({ id: z.string(), mode: z.enum(['test', 'live']) }),
  )`
    SELECT id, mode FROM transactions
    WHERE transaction_type = 'mobile_money_deposit'
      AND (provider_reference = ${notification.paymentCodeId}
           OR id::text = ${reference && UUID.test(reference) ? reference : ''})
    ORDER BY (provider_reference = ${notification.paymentCodeId}) DESC
    LIMIT 1`);
  const transactionId = known?.id ?? (reference && UUID.test(reference) ? reference : null);
  await deps.pool.query(sql.unsafe`
    INSERT INTO provider_notifications (id, provider, payment_reference, status, transaction_id, body)
    VALUES (${randomUUID()}, ${provider.name}, ${notification.paymentCodeId}, ${notification.status},
      ${transactionId}, ${sql.jsonb(body as never)})`);
  if (!transactionId) return { transactionId: null, status: null };
  // A provider speaks for its own mode only: the sandbox (Test Mode) can never settle a Live
  // Mode deposit, whatever references its notification carries, nor the reverse.
  const mode = known?.mode ?? (await depositMode(deps.temporal, transactionId));
  if (mode !== provider.mode) return { transactionId: null, status: null };
  const status = await updateDeposit(
    deps.temporal,
    transactionId,
    deps.config.api.requestTimeoutMs,
    (handle) =>
      handle.executeUpdate(depositUpdates.notify, { args: [{ status: notification.status }] }),
  );
  return { transactionId, status };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The mode of a deposit known only to Temporal (its record was never written), or null. */
async function depositMode(temporal: Client, transactionId: string): Promise<Mode | null> {
  try {
    const described = await temporal.workflow
      .getHandle(depositWorkflowId(transactionId))
      .describe();
    const mode = described.typedSearchAttributes.get(SearchAttributes.PaymentMode);
    return mode === 'test' || mode === 'live' ? mode : null;
  } catch {
    return null;
  }
}

type DepositHandle = ReturnType<Client['workflow']['getHandle']>;

/** Runs an update on a deposit's workflow; null when that workflow is not running any more. */
async function updateDeposit(
  temporal: Client,
  transactionId: string,
  timeoutMs: number,
  run: (handle: DepositHandle) => Promise<DepositOutcome>,
): Promise<DepositOutcome | null> {
  const handle = temporal.workflow.getHandle(depositWorkflowId(transactionId));
  try {
    return await withDeadline(run(handle), timeoutMs);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof WorkflowNotFoundError) return null;
    // An update on a workflow that has completed is refused; the record tells its outcome.
    if (/workflow execution already completed|not found/i.test((error as Error).message))
      return null;
    throw error;
  }
}

const SimulateRequest = z.object({
  transaction_id: z.string().min(1),
  status: z.enum(['successful', 'failed']).default('successful'),
});

const StatusBody = z.object({
  status: z.string(),
  transaction_id: z.string(),
  message: z.string(),
});

export function depositRoutes(deps: ApiDeps): Route[] {
  const { pool, temporal, config, providers } = deps;
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
        400: err('The provider failed to create the payment code'),
        401: err('Missing or invalid credentials'),
        403: err('The wallet is disabled or belongs to another application or mode'),
        404: err('Wallet not found'),
        422: err('Validation failure: amount must be a positive integer of SLE cents'),
        503: err('Live Mode provider credentials are not configured'),
      },
      handler: async ({ caller, body, idempotency }) => {
        const wallet = await ownedWallet(pool, caller, body.wallet_id);
        if (!wallet.is_active) throw new AppError('wallet_disabled', 'Wallet is disabled');
        if (caller.mode === 'live' && !providers.liveMobileMoney) {
          throw new AppError(
            'provider_unavailable',
            'Live mobile-money deposits are not available: the provider credentials are not configured',
          );
        }
        const transactionId = idempotency
          ? idFromKey(caller, idempotency, 'mobile_money_deposit')
          : randomUUID();
        const start = new WithStartWorkflowOperation(mobileMoneyDepositWorkflow, {
          workflowId: depositWorkflowId(transactionId),
          taskQueue: config.temporal.taskQueue,
          workflowIdConflictPolicy: 'USE_EXISTING',
          args: [
            {
              transactionId,
              applicationId: caller.applicationId,
              mode: caller.mode,
              walletId: wallet.id,
              amount: body.amount.toString(),
            },
          ],
          typedSearchAttributes: paymentSearchAttributes(caller, 'mobile_money_deposit', [
            wallet.id,
          ]),
        });
        const result = await withDeadline(
          temporal.workflow.executeUpdateWithStart(depositUpdates.open, {
            startWorkflowOperation: start,
          }),
          config.api.requestTimeoutMs,
        );
        if (result.status === 'declined') {
          throw new AppError(
            isErrorCode(result.code) ? result.code : 'provider_refused',
            result.detail,
          );
        }
        return { body: depositBody(result) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/testing/simulate-mobile-money-webhook',
      summary:
        'Test Mode only: the sandbox provider settles a pending deposit and sends its signed ' +
        'notification through the same path a live provider notification takes',
      tag: 'Testing',
      auth: 'default',
      testModeOnly: true,
      body: SimulateRequest,
      responses: {
        200: { description: 'The deposit’s status after the notification', schema: StatusBody },
        401: err('Missing or invalid credentials'),
        403: err('Live Mode credentials used, or another application’s transaction'),
        404: err('Transaction not found'),
        422: err('Validation failure'),
      },
      handler: async ({ caller, body }) => {
        const id = body.transaction_id.toLowerCase();
        const row = /^[0-9a-f-]{36}$/.test(id) ? await findTransaction(pool, id) : null;
        const transaction = assertOwned(caller, row, 'Transaction');
        if (
          transaction.transaction_type !== 'mobile_money_deposit' ||
          !transaction.provider_reference
        ) {
          throw new AppError('not_found', 'Mobile-money deposit not found');
        }
        const sandbox = providers.sandboxMobileMoney;
        const code = await sandbox.settle(
          transaction.provider_reference,
          body.status === 'successful' ? 'completed' : 'failed',
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
    defineRoute({
      method: 'post',
      path: '/api/v1/webhooks/providers/mobile-money',
      summary: 'Inbound mobile-money provider notification (signed); 200 once recorded',
      tag: 'Webhooks',
      auth: null,
      responses: {
        200: {
          description: 'Recorded',
          schema: z.object({
            received: z.boolean(),
            transaction_id: z.string().nullable(),
            status: z.string().nullable(),
          }),
        },
        400: err('Bad signature or body'),
      },
      handler: async ({ ctx }) => {
        const raw = (ctx.state as { rawBody?: string }).rawBody ?? '';
        const headers = Object.fromEntries(
          Object.entries(ctx.headers).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v]),
        );
        const sandbox = headers[SANDBOX_SIGNATURE_HEADER] !== undefined;
        const provider = sandbox ? providers.sandboxMobileMoney : providers.liveMobileMoney;
        const notification = provider?.parseNotification(raw, headers) ?? null;
        if (!provider || !notification) {
          throw new AppError('invalid_request', 'Invalid notification signature');
        }
        const delivered = await deliverNotification(
          deps,
          { name: provider.name, mode: sandbox ? 'test' : 'live' },
          notification,
          ctx.state.body,
        );
        return {
          body: {
            received: true,
            transaction_id: delivered.transactionId,
            status: delivered.status,
          },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/transactions/sync/:reference_id',
      summary:
        'Ask the provider now and reconcile the transaction at once (provider reference or transaction id)',
      tag: 'Transactions',
      auth: 'default',
      params: z.object({ reference_id: z.string().min(1).max(255) }),
      opaqueParams: ['reference_id'],
      responses: {
        200: { description: 'The transaction’s status after reconciliation', schema: StatusBody },
        401: err('Missing or invalid credentials'),
        404: err('Transaction not found'),
      },
      handler: async ({ caller, params }) => {
        const transaction = await findByReference(pool, caller, params.reference_id);
        let status: string = transaction.status;
        if (
          transaction.transaction_type === 'mobile_money_deposit' &&
          transaction.status === 'pending'
        ) {
          status =
            (await updateDeposit(temporal, transaction.id, config.api.requestTimeoutMs, (handle) =>
              handle.executeUpdate(depositUpdates.sync),
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
