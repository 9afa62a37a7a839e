import { z } from 'zod';
import { findApplication } from '../../db/applications';
import { computeDepositFees } from '../../domain/fees';
import { PAYMENT_METHODS } from '../../domain/types';
import type { ApiDeps } from '../deps';
import { errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import { PositiveAmount } from '../schemas';
import { DepositEstimateBody, depositEstimateBody } from '../serializers';

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
