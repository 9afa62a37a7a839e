import { z } from 'zod';
import { findApplication } from '../../db/applications';
import type { ApplicationRow } from '../../db/applications';
import { computeDepositFees, type DepositFees } from '../../domain/fees';
import { minorToDecimalString } from '../../domain/money';
import { PAYMENT_METHODS, type PaymentMethod } from '../../domain/types';
import type { ApiDeps } from '../deps';
import { errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import { PositiveAmount } from '../schemas';

const DepositEstimateRequest = z.object({
  amount: PositiveAmount,
  payment_method: z
    .enum(PAYMENT_METHODS, {
      error: `must be one of ${PAYMENT_METHODS.join(', ')}`,
    })
    .meta({ description: 'How the payer pays' }),
  is_international: z
    .boolean({ error: 'must be a boolean' })
    .default(false)
    .meta({ description: 'For card deposits: use the international card rate' }),
});

const Decimal = z
  .string()
  .regex(/^\d+\.\d{2}$/)
  .meta({ description: 'Major units of the base currency, 2 decimals', example: '12.50' });

const FeeBreakdownBody = z
  .object({
    transaction_amount: Decimal,
    application_fee: Decimal,
    estimated_provider_fee: Decimal,
    total_fees: Decimal,
    total_amount_to_pay: Decimal,
    net_amount: Decimal,
  })
  .meta({ id: 'FeeBreakdown' });

export const DepositEstimateBody = z
  .object({
    transaction_type: z.literal('deposit'),
    payment_method: z.enum(PAYMENT_METHODS),
    fee_enabled: z.boolean().meta({ description: 'Whether the application fee applies' }),
    fee_breakdown: FeeBreakdownBody,
    message: z.string(),
  })
  .meta({ id: 'DepositFeeEstimate' });

/** The card-aware estimate's answer: the generic one and the card it detected. */
export const CardDepositEstimateBody = DepositEstimateBody.extend({
  card_metadata: z
    .object({
      brand: z.string().meta({ example: 'visa' }),
      country: z.string().meta({ description: 'ISO 3166-1 alpha-2', example: 'US' }),
      funding: z.string().meta({ description: 'credit, debit, prepaid or unknown' }),
    })
    .meta({ description: 'The card detected from the payment method' }),
}).meta({ id: 'CardDepositFeeEstimate' });

/**
 * The answer of a deposit's fee estimate, the generic one and the card-aware one alike: the
 * card's rate is named when the method is `card`.
 */
export function depositEstimateBody(
  app: Pick<ApplicationRow, 'base_currency'>,
  method: PaymentMethod,
  fees: DepositFees,
  international: boolean,
): z.output<typeof DepositEstimateBody> {
  const rate =
    method === 'card' ? ` at the ${international ? 'international' : 'domestic'} card rate` : '';
  return {
    transaction_type: 'deposit',
    payment_method: method,
    fee_enabled: fees.feeEnabled,
    fee_breakdown: {
      transaction_amount: minorToDecimalString(fees.transactionAmount),
      application_fee: minorToDecimalString(fees.applicationFee),
      estimated_provider_fee: minorToDecimalString(fees.providerFee),
      total_fees: minorToDecimalString(fees.totalFees),
      total_amount_to_pay: minorToDecimalString(fees.totalAmountToPay),
      net_amount: minorToDecimalString(fees.netAmount),
    },
    message:
      `Estimated fees for a ${method} deposit of ` +
      `${minorToDecimalString(fees.transactionAmount)} ${app.base_currency}${rate}; ` +
      'no money has moved',
  };
}

export function feeRoutes(deps: ApiDeps): Route[] {
  const { pool } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/fees/estimate/deposit',
      summary: 'Estimate the fees of a deposit (no money moves, nothing is written)',
      tag: 'Fees',
      auth: 'default',
      body: DepositEstimateRequest,
      responses: {
        200: { description: 'The fee breakdown, in decimal strings', schema: DepositEstimateBody },
        401: errorResponse('Missing or invalid credentials'),
        422: errorResponse(
          'Validation failure: amount not greater than 0, or an unknown payment method',
        ),
      },
      handler: async ({ caller, body }) => {
        const app = await findApplication(pool, caller.applicationId);
        if (!app) throw new Error('the caller’s application does not exist');
        const fees = computeDepositFees({
          method: body.payment_method,
          international: body.is_international,
          amount: body.amount,
          applicationFeeBps: app.fee_bps[body.payment_method],
        });
        return {
          body: depositEstimateBody(app, body.payment_method, fees, body.is_international),
        };
      },
    }),
  ];
}
