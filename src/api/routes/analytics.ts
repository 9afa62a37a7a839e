import { z } from 'zod';
import { dashboardAnalytics } from '../../db/analytics';
import { minorToMajorNumber } from '../../domain/money';
import type { ApiDeps } from '../deps';
import { errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import { TransactionBody, transactionBody } from '../serializers';

export const DashboardAnalyticsBody = z
  .object({
    currency: z.enum(['USD', 'SLE']).meta({ description: 'The application’s base currency' }),
    total_volume: z.number().meta({
      description: 'Sum of `amount` over completed transactions of every type, major units',
    }),
    net_revenue: z.number().meta({
      description: 'Application fees and escrow fees collected (completed transactions)',
    }),
    transaction_count: z.int().meta({ description: 'Completed transactions' }),
    total_users: z.int(),
    active_users: z.int().meta({ description: 'Users not disabled' }),
    wallets: z.object({
      total: z.int(),
      active: z.int().meta({ description: 'Wallets not disabled' }),
    }),
    total_balance: z.number().meta({ description: 'Sum of the user wallets’ balances' }),
    volume_chart: z
      .array(
        z.object({
          date: z.string().meta({ description: 'A UTC day, YYYY-MM-DD' }),
          volume: z
            .number()
            .meta({ description: 'Completed volume of the payments made that day' }),
          count: z.int().meta({ description: 'Completed payments made that day' }),
        }),
      )
      .meta({ description: 'The last 14 UTC days, oldest first, today last; quiet days at 0' }),
    recent_activity: z
      .array(TransactionBody)
      .meta({ description: 'The 10 newest transactions, newest first' }),
  })
  .meta({ id: 'DashboardAnalytics' });

/** The application's figures; the dashboard's Overview page reads the same query. */
export function analyticsRoutes({ pool }: ApiDeps): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/analytics/dashboard',
      summary:
        'Aggregates of the application and mode: completed volume, net revenue (application and ' +
        'escrow fees), transaction, user and wallet counts, the wallets’ total balance, a ' +
        '14-day volume chart (UTC days) and the 10 newest transactions. Amounts in the base ' +
        'currency, major units',
      tag: 'Analytics',
      auth: 'default',
      responses: {
        200: { description: 'The figures', schema: DashboardAnalyticsBody },
        403: errorResponse('Admin credentials'),
      },
      handler: async ({ caller }) => {
        const a = await dashboardAnalytics(pool, caller);
        return {
          body: {
            currency: a.currency,
            total_volume: minorToMajorNumber(a.total_volume),
            net_revenue: minorToMajorNumber(a.net_revenue),
            transaction_count: a.transaction_count,
            total_users: a.total_users,
            active_users: a.active_users,
            wallets: a.wallets,
            total_balance: minorToMajorNumber(a.total_balance),
            volume_chart: a.volume_chart.map((day) => ({
              date: day.date,
              volume: minorToMajorNumber(day.volume),
              count: day.count,
            })),
            recent_activity: a.recent_activity.map((t) => transactionBody(t)),
          },
        };
      },
    }),
  ];
}
