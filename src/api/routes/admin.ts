import { z } from 'zod';
import { adminAnalytics } from '../../db/analytics';
import { CURRENCIES, divideRoundHalfEven } from '../../domain/money';
import { TRANSACTION_TYPES } from '../../domain/types';
import { resolvePayment } from '../../intake/resolutions';
import { RESOLUTION_LIMITS, RESOLUTION_OUTCOMES } from '../../workflows/resolution';
import { requestActor } from '../audit';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse, notFound } from '../errors';
import { defineRoute, type Route } from '../route';
import { uuidPattern } from '../schemas';
import { exactMajorNumber, TransactionBody, transactionBodies, type RawJson } from '../serializers';

/** A real calendar day, `YYYY-MM-DD` (2026-02-30 is refused). */
const Day = z
  .string({ error: 'must be a date, YYYY-MM-DD' })
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date, YYYY-MM-DD')
  .refine((v) => {
    const date = new Date(`${v}T00:00:00Z`);
    return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(v);
  }, 'must be a real calendar date, YYYY-MM-DD');

const AdminAnalyticsQuery = z
  .object({
    application_id: z
      .string({ error: 'must be an application id' })
      .regex(uuidPattern, 'must be an application id (a UUID)')
      .transform((v) => v.toLowerCase())
      .optional(),
    mode: z.enum(['test', 'live'], { error: 'must be test or live' }).optional(),
    from: Day.optional().meta({ description: 'First UTC day counted (inclusive), YYYY-MM-DD' }),
    to: Day.optional().meta({ description: 'Last UTC day counted (inclusive), YYYY-MM-DD' }),
  })
  .refine((q) => !q.from || !q.to || q.from <= q.to, {
    message: 'from must not be after to',
    path: ['from'],
  });

const PerCurrency = z.partialRecord(z.enum(CURRENCIES), z.number()).meta({
  description:
    'Per currency, major units, written exactly (a platform-wide sum may pass 2^53 minor units: read it as a decimal); a currency without payments is absent',
});

export const AdminAnalyticsBody = z
  .object({
    success_rate: z.number().meta({
      description:
        'Completed transactions over all transactions (any status), 0 to 1, 4 decimals; 0 when none',
    }),
    average_amount: PerCurrency.meta({
      description: 'Average amount of a completed transaction, per currency, rounded half-even',
    }),
    total_count: z.int().meta({ description: 'Transactions of any status' }),
    volume_by_type: z
      .partialRecord(z.enum(TRANSACTION_TYPES), PerCurrency)
      .meta({ description: 'Completed volume per transaction type, per currency' }),
    volume_by_currency: PerCurrency.meta({ description: 'Completed volume per currency' }),
  })
  .meta({ id: 'AdminAnalytics' });

/** Text an operator writes: trimmed, not empty, at most `max` characters. */
const OperatorText = (max: number, description: string) =>
  z
    .string({ error: 'must be a string' })
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .meta({ description });

const ResolveRequest = z
  .object({
    outcome: z.enum(RESOLUTION_OUTCOMES, { error: 'must be completed or failed' }).meta({
      description: 'What the provider would have answered: completed settles, failed gives back',
    }),
    reason: OperatorText(
      RESOLUTION_LIMITS.reason,
      'Why (what the provider said when asked); kept in the workflow’s history',
    ),
    operator: OperatorText(RESOLUTION_LIMITS.operator, 'Who resolves it; kept in the history'),
    force: z
      .boolean({ error: 'must be a boolean' })
      .optional()
      .meta({
        description:
          'Settle without the provider’s answer when the provider cannot be reached (otherwise ' +
          '503); a provider that answers still decides. Kept in the history and on the timeline',
      }),
  })
  .meta({ id: 'PaymentResolution' });

/** The platform's figures across every application, and stuck payments, for its admins. */
export function adminRoutes({ pool, temporal, config, logger }: ApiDeps): Route[] {
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/admin/payments/:transaction_id/resolve',
      summary:
        'Platform admins: end a payment stuck on its provider (a pending deposit, card ' +
        'deposit, payout, cashout or refund) with `outcome`, once its provider confirms it: ' +
        'failed cancels the payment at the provider first, then gives the money back; ' +
        'completed needs the provider to say it was paid. Sent to the payment’s workflow as ' +
        'the `resolve` update; the operator, the reason, `force` and the admin credential’s id ' +
        'are kept in its history and shown on its timeline (docs/api.md, Resolve a stuck payment)',
      tag: 'Admin',
      auth: 'admin',
      admin: true,
      params: z.object({ transaction_id: z.string() }),
      body: ResolveRequest,
      responses: {
        200: { description: 'The payment, settled as resolved', schema: TransactionBody },
        400: errorResponse(
          'The payment cannot be resolved: not pending, not waiting on its provider, of a kind ' +
            'no provider settles (a transfer, an escrow hold), or its provider’s answer ' +
            'contradicts the outcome (paid, will not cancel, not paid); nothing moved; the ' +
            'detail says why',
        ),
        401: errorResponse('Missing or invalid admin credentials'),
        403: errorResponse('Application credentials (admin credentials only)'),
        404: errorResponse('Transaction not found'),
        429: errorResponse(
          'The admin rate limit, or this address is locked out after 5 failed authentications ' +
            'within 15 minutes (even with valid credentials); Retry-After gives the seconds',
        ),
        503: errorResponse(
          'The provider cannot be reached to confirm the outcome and `force` was not set; ' +
            'nothing moved',
        ),
      },
      handler: async ({ ctx, params, body }) => {
        const admin = (ctx.state as { admin?: { id: string } }).admin;
        if (!admin) throw new AppError('forbidden', 'This endpoint needs admin credentials');
        const answer = await resolvePayment(
          {
            pool,
            temporal,
            timeoutMs: config.api.requestTimeoutMs,
            timeoutError: () =>
              new AppError(
                'timeout',
                'The payment’s workflow did not answer in time: read the transaction to see ' +
                  'whether the resolution took effect',
              ),
          },
          params.transaction_id.toLowerCase(),
          { ...body, force: body.force === true, adminId: admin.id, via: 'api' },
          { actor: await requestActor(pool, ctx, null), ip: ctx.ip || null },
        );
        if (!answer.ok) {
          if (answer.refused === 'not_found') throw notFound('Transaction');
          if (answer.refused === 'unreachable') {
            throw new AppError('provider_unavailable', answer.detail);
          }
          throw new AppError('invalid_request', answer.detail);
        }
        // Beside the workflow's history: the API's log tells who resolved what, by admin id; a
        // forced resolution is a warning, since no provider confirmed it.
        logger[body.force ? 'warn' : 'info'](
          {
            transaction_id: answer.transaction.id,
            outcome: body.outcome,
            status: answer.transaction.status,
            operator: body.operator,
            admin_id: admin.id,
            force: body.force === true,
          },
          'payment resolved by an operator',
        );
        return { body: (await transactionBodies(pool, [answer.transaction]))[0]! };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/transactions/admin/analytics',
      summary:
        'Platform admins: success rate, average amount, transaction count and completed volume ' +
        'by type and by currency across every application, optionally of one application, one ' +
        'mode and a range of UTC days (by creation). Admin credentials only; five failed ' +
        'authentications from one address within 15 minutes lock it out for 15 minutes',
      tag: 'Admin',
      auth: 'admin',
      admin: true,
      query: AdminAnalyticsQuery,
      responses: {
        200: { description: 'The figures', schema: AdminAnalyticsBody },
        403: errorResponse('Application credentials (admin credentials only)'),
        429: errorResponse(
          'The admin rate limit, or this address is locked out after 5 failed authentications ' +
            'within 15 minutes (even with valid credentials); Retry-After gives the seconds',
        ),
      },
      handler: async ({ query }) => {
        const figures = await adminAnalytics(pool, {
          applicationId: query.application_id,
          mode: query.mode,
          from: query.from,
          to: query.to,
        });
        const completed = figures.byCurrency.reduce((n, c) => n + c.count, 0);
        const total = figures.byCurrency.reduce((n, c) => n + c.total, 0);
        const volumeByType: Record<string, Record<string, number | RawJson>> = {};
        for (const row of figures.byType) {
          (volumeByType[row.transaction_type] ??= {})[row.currency] = exactMajorNumber(row.volume);
        }
        return {
          body: {
            success_rate: total === 0 ? 0 : Math.round((completed / total) * 10_000) / 10_000,
            average_amount: Object.fromEntries(
              figures.byCurrency
                .filter((c) => c.count > 0)
                .map((c) => [
                  c.currency,
                  exactMajorNumber(divideRoundHalfEven(c.volume, BigInt(c.count))),
                ]),
            ),
            total_count: total,
            volume_by_type: volumeByType,
            volume_by_currency: Object.fromEntries(
              figures.byCurrency.map((c) => [c.currency, exactMajorNumber(c.volume)]),
            ),
          },
        };
      },
    }),
  ];
}
