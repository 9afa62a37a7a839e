import type Koa from 'koa';
import { z } from 'zod';
import { findApplication } from '../../db/applications';
import { findCardDeposit, findCardDepositByPayment } from '../../db/card-deposits';
import { findTransaction } from '../../db/transactions';
import { computeCardDepositFees } from '../../domain/fees';
import { minorToDecimalString, minorToMajorNumber } from '../../domain/money';
import { UnknownPaymentMethodError } from '../../providers/card';
import { ProviderNotConfiguredError } from '../../providers/mobile-money';
import { cardDepositWorkflow } from '../../workflows/card-deposit';
import { workflowIds } from '../../workflows/ids';
import {
  cardDepositUpdates,
  type CardDepositInput,
  type DepositOutcome,
} from '../../workflows/shared';
import { assertOwned } from '../access';
import type { ApiDeps } from '../deps';
import { startDeposit } from '../deposit-start';
import { AppError, errorResponse, notFound } from '../errors';
import { defineRoute, type Route } from '../route';
import { BodyId, Metadata, PositiveAmount, uuidPattern } from '../schemas';
import {
  CardDepositEstimateBody,
  depositEstimateBody,
  StatusBody,
  TransactionBody,
  transactionBodies,
} from '../serializers';
import { deliverCardEvent } from '../provider-notifications';
import { authenticationPage, HTML_HEADERS } from '../card-authentication-page';

const PaymentMethodId = z
  .string()
  .min(1)
  .max(255)
  .meta({
    description:
      'The card provider’s payment method (Test Mode: pm_card_visa, pm_card_chargeDeclined, ' +
      'pm_card_authenticationRequired, … as docs/api.md, Test Mode sandbox, lists)',
    example: 'pm_card_visa',
  });

const CardDepositRequest = z.object({
  wallet_id: BodyId,
  amount: PositiveAmount,
  payment_method_id: PaymentMethodId,
  metadata: Metadata.optional(),
});

const CardEstimateRequest = z.object({
  amount: PositiveAmount,
  payment_method_id: PaymentMethodId,
});

const CardDepositBody = TransactionBody.extend({
  provider_fee: z.number(),
  total_amount_paid: z.number().meta({ description: 'What the card was charged' }),
  provider_reference: z.string().nullable().meta({ description: 'The provider’s payment id' }),
  next_action: z
    .object({
      type: z.literal('authenticate'),
      url: z.string().meta({ description: 'Where the payer authenticates (3-D Secure)' }),
    })
    .nullable()
    .meta({ description: 'While pending: what the payer must do to finish the payment' }),
}).meta({ id: 'CardDeposit' });

const SimulateRequest = z.object({
  transaction_id: BodyId,
  status: z.enum(['successful', 'failed']).default('successful'),
});

/** The sandbox's payment id (`pi_sandbox_…`), unguessable: the page needs no credentials. */
const PaymentParams = z.object({ payment_id: z.string().min(1).max(255) });

const AuthenticationDecision = z.object({ status: z.enum(['successful', 'failed']) });

/**
 * The provider's action URL, made absolute from the request's origin when it is a path
 * (X-Forwarded-Proto and X-Forwarded-Host count only behind TRUST_PROXY proxies).
 */
function absoluteUrl(ctx: Koa.Context, url: string): string {
  return url.startsWith('/') ? `${ctx.protocol}://${ctx.host}${url}` : url;
}

/** A card provider's failure that is the caller's business, as its answer; else rethrown. */
function providerAnswer(error: unknown): never {
  if (error instanceof UnknownPaymentMethodError) {
    throw new AppError('payment_method_not_found', null, { cause: error });
  }
  if (error instanceof ProviderNotConfiguredError) {
    throw new AppError('provider_unavailable', error.message, { cause: error });
  }
  throw error;
}

export function cardDepositRoutes(deps: ApiDeps): Route[] {
  const { pool, providers } = deps;
  // Anyone may open the page: each client address gets so many requests a minute, both methods.
  const perAddress = {
    category: 'card_authentication_page',
    perMinute: deps.config.throttles.cardAuthenticationPage,
  };

  /** The sandbox authenticates (or fails) the payment, then sends its signed event. */
  async function authenticateInSandbox(
    paymentId: string,
    success: boolean,
  ): Promise<DepositOutcome | null> {
    const sandbox = providers.sandboxCard;
    const payment = await sandbox.authenticate(paymentId, success);
    const event = sandbox.eventFor(payment);
    const parsed = sandbox.parseEvent(event.body, event.headers);
    if (!parsed) throw new Error('the sandbox could not verify its own event');
    const delivered = await deliverCardEvent(
      deps,
      { name: sandbox.name, mode: 'test' },
      parsed,
      JSON.parse(event.body),
    );
    return delivered.status;
  }

  /**
   * Authenticates a pending deposit's payment in the sandbox and answers the deposit's status
   * after its event; a deposit already settled or expired is left as it is, so that its payment
   * cannot succeed at the provider after the deposit gave up on it.
   */
  async function authenticateIfPending(
    paymentId: string,
    transactionId: string,
    status: string,
    success: boolean,
  ): Promise<string> {
    if (status !== 'pending') return status;
    return (
      (await authenticateInSandbox(paymentId, success)) ??
      (await findTransaction(pool, transactionId))!.status
    );
  }

  /** The sandbox page's deposit: a Test Mode card deposit paid through this payment. */
  async function sandboxDeposit(paymentId: string) {
    const row = await findCardDepositByPayment(pool, paymentId, 'test');
    if (!row) throw notFound('Payment');
    return row;
  }

  /** The authentication page of a deposit's payment, with what it costs and where it stands. */
  async function page(paymentId: string, transactionId: string, status: string, message?: string) {
    const { row, meta } = (await findCardDeposit(pool, transactionId))!;
    return {
      headers: HTML_HEADERS,
      body: authenticationPage({
        paymentId,
        amount: minorToDecimalString(BigInt(meta.total_amount_paid)),
        currency: row.currency,
        status,
        message,
      }),
    };
  }

  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/transactions/wallet/card-deposit',
      summary:
        'Card deposit: charges the card for the amount plus the fees and credits the wallet ' +
        'the amount (a Temporal workflow); a card that needs 3-D Secure answers pending with ' +
        '`next_action`',
      tag: 'Deposits',
      auth: 'card_deposits',
      idempotent: true,
      body: CardDepositRequest,
      responses: {
        200: {
          description:
            'The deposit: `completed` once the card is charged, or `pending` with `next_action` ' +
            'while the payer must authenticate',
          schema: CardDepositBody,
        },
        400: errorResponse(
          'Card declined…; or no such payment method; or the wallet holds another currency than the application',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The wallet is disabled or belongs to another application or mode'),
        404: errorResponse('Wallet not found'),
        422: errorResponse('Validation failure'),
        503: errorResponse('Live Mode card provider keys are not configured, or it is unreachable'),
      },
      handler: async (request) => {
        const { transactionId, opened } = await startDeposit(deps, request, {
          type: 'card_deposit',
          live: {
            provider: providers.liveCard,
            what: 'card deposits',
            credentials: 'the Stripe keys',
          },
          workflow: cardDepositWorkflow,
          workflowId: workflowIds.cardDeposit,
          input: ({ metadata, ...fields }): CardDepositInput => ({
            ...fields,
            paymentMethodId: request.body.payment_method_id,
            ...(metadata && { metadata }),
            localSteps: true,
          }),
          update: cardDepositUpdates.open,
          // Charged and credited, or declined and recorded failed: a rerun of the task finds
          // the step made and answers the same. 3-D Secure and the rest go the update's way.
          answerLocally: (result) =>
            result.status === 'opened'
              ? result.outcome === 'completed'
              : result.code === 'card_declined',
        });
        const deposit = await findCardDeposit(pool, transactionId);
        if (!deposit) throw new Error(`card deposit ${transactionId} has no record`);
        const { row, meta } = deposit;
        const url = opened.payment.nextActionUrl;
        return {
          body: {
            ...(await transactionBodies(pool, [row]))[0]!,
            provider_fee: minorToMajorNumber(BigInt(meta.provider_fee)),
            total_amount_paid: minorToMajorNumber(BigInt(meta.total_amount_paid)),
            provider_reference: row.provider_reference,
            next_action:
              row.status === 'pending' && url
                ? { type: 'authenticate', url: absoluteUrl(request.ctx, url) }
                : null,
          } satisfies z.output<typeof CardDepositBody>,
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/fees/estimate/deposit/card-metadata',
      summary:
        'Estimate a card deposit’s fees from the card itself: its country and brand pick the ' +
        'domestic or international rate (nothing is written)',
      tag: 'Fees',
      auth: 'default',
      body: CardEstimateRequest,
      responses: {
        200: {
          description: 'The card detected and the fee breakdown, in decimal strings',
          schema: CardDepositEstimateBody,
        },
        400: errorResponse('No such payment method'),
        401: errorResponse('Missing or invalid credentials'),
        422: errorResponse('Validation failure'),
        503: errorResponse('Live Mode card provider keys are not configured'),
      },
      handler: async ({ caller, body }) => {
        const app = await findApplication(pool, caller.applicationId);
        if (!app) throw new Error('the caller’s application does not exist');
        const card = await Promise.resolve()
          .then(() => providers.card(caller.mode).getCardMetadata(body.payment_method_id))
          .catch(providerAnswer);
        const fees = computeCardDepositFees({
          card,
          baseCurrency: app.base_currency,
          amount: body.amount,
          applicationFeeBps: app.fee_bps.card,
        });
        const { brand, country, funding } = card;
        return {
          body: {
            ...depositEstimateBody(app, 'card', fees, fees.international),
            card_metadata: { brand, country, funding },
          },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/testing/simulate-card-authentication',
      summary:
        'Test Mode only: the payer approves or fails a pending card payment’s 3-D Secure; the ' +
        'sandbox then sends its signed event through the same path a live provider event takes',
      tag: 'Testing',
      auth: 'default',
      testModeOnly: true,
      body: SimulateRequest,
      responses: {
        200: { description: 'The deposit’s status after the event', schema: StatusBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('Live Mode credentials used, or another application’s transaction'),
        404: errorResponse('Transaction not found'),
        422: errorResponse('Validation failure'),
      },
      handler: async ({ caller, body }) => {
        const id = body.transaction_id.toLowerCase();
        const row = uuidPattern.test(id) ? await findTransaction(pool, id) : null;
        const transaction = assertOwned(caller, row, 'Transaction');
        if (transaction.transaction_type !== 'card_deposit' || !transaction.provider_reference) {
          throw notFound('Card deposit');
        }
        const status = await authenticateIfPending(
          transaction.provider_reference,
          transaction.id,
          transaction.status,
          body.status === 'successful',
        );
        return {
          body: {
            message: `Simulated ${body.status} card authentication; the deposit is ${status}`,
            transaction_id: transaction.id,
            status,
          },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/testing/card-authentication/:payment_id',
      summary:
        'Test Mode sandbox: the 3-D Secure page a pending card deposit’s `next_action` opens ' +
        '(HTML, no credentials: the payment id is unguessable)',
      tag: 'Testing',
      auth: null,
      throttle: perAddress,
      params: PaymentParams,
      opaqueParams: ['payment_id'],
      responses: {
        200: { description: 'An HTML page with Approve and Fail buttons' },
        404: errorResponse('Payment not found'),
      },
      handler: async ({ params }) => {
        const row = await sandboxDeposit(params.payment_id);
        return page(params.payment_id, row.id, row.status);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/testing/card-authentication/:payment_id',
      summary:
        'Test Mode sandbox: the 3-D Secure page’s form (Approve or Fail), which does what ' +
        'simulate-card-authentication does',
      tag: 'Testing',
      auth: null,
      throttle: perAddress,
      params: PaymentParams,
      opaqueParams: ['payment_id'],
      query: AuthenticationDecision,
      responses: {
        200: { description: 'An HTML page with the deposit’s status' },
        404: errorResponse('Payment not found'),
        422: errorResponse('Validation failure: status must be successful or failed'),
      },
      handler: async ({ params, query }) => {
        const row = await sandboxDeposit(params.payment_id);
        const status = await authenticateIfPending(
          params.payment_id,
          row.id,
          row.status,
          query.status === 'successful',
        );
        return page(
          params.payment_id,
          row.id,
          status,
          query.status === 'successful' ? 'Authentication approved.' : 'Authentication failed.',
        );
      },
    }),
  ];
}
