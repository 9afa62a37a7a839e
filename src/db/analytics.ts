import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Currency } from '../domain/money';
import { TRANSACTION_TYPES, type Mode, type TransactionType } from '../domain/types';
import { transactionColumns, transactionRow, type TransactionRow } from './transactions';

/**
 * The dashboard's and the admins' figures, summed from `analytics_daily` (kept by a trigger in the
 * same transaction as every money step), so their cost does not grow with the payments. Money is
 * bigint minor units; the API turns it into major units. See docs/api.md, Analytics and admins.
 */

export const CHART_DAYS = 14;

export type DashboardAnalytics = {
  currency: Currency;
  /** Sum of `amount` over completed transactions of every type. */
  total_volume: bigint;
  /** Application fees and escrow fees collected (completed transactions). */
  net_revenue: bigint;
  /** Completed transactions. */
  transaction_count: number;
  total_users: number;
  /** Users not disabled. */
  active_users: number;
  wallets: { total: number; active: number };
  /** Sum of the balances of the scope's user wallets in the base currency. */
  total_balance: bigint;
  /** The last 14 UTC days, oldest first, today last; days without activity at 0. */
  volume_chart: { date: string; volume: bigint; count: number }[];
  /** The 10 newest payment records. */
  recent_activity: readonly TransactionRow[];
};

const totalsRow = z.object({
  currency: z.enum(['USD', 'SLE']),
  total_volume: z.bigint(),
  net_revenue: z.bigint(),
  transaction_count: z.number(),
  total_users: z.number(),
  active_users: z.number(),
  wallets_total: z.number(),
  wallets_active: z.number(),
  total_balance: z.bigint(),
});

const chartRow = z.object({ date: z.string(), volume: z.bigint(), count: z.number() });

/** The date (UTC) of `now`, as `YYYY-MM-DD`. */
function utcDate(now: Date): string {
  return now.toISOString().slice(0, 10);
}

export async function dashboardAnalytics(
  pool: CommonQueryMethods,
  scope: { applicationId: string; mode: Mode },
  now = new Date(),
): Promise<DashboardAnalytics> {
  const { applicationId, mode } = scope;
  const totals = await pool.one(sql.type(totalsRow)`
    WITH app AS (SELECT base_currency FROM applications WHERE id = ${applicationId}),
    money AS (
      SELECT coalesce(sum(d.completed_volume), 0)::bigint AS total_volume,
        coalesce(sum(d.fees), 0)::bigint AS net_revenue,
        coalesce(sum(d.completed_count), 0)::int AS transaction_count
      FROM analytics_daily d, app
      WHERE d.application_id = ${applicationId} AND d.mode = ${mode}
        AND d.currency = app.base_currency),
    people AS (
      SELECT count(*)::int AS total_users, count(*) FILTER (WHERE is_active)::int AS active_users
      FROM users WHERE application_id = ${applicationId} AND mode = ${mode}),
    purses AS (
      SELECT count(*)::int AS wallets_total,
        count(*) FILTER (WHERE w.is_active)::int AS wallets_active,
        coalesce(sum(a.balance) FILTER (WHERE a.currency = app.base_currency), 0)::bigint
          AS total_balance
      FROM wallets w JOIN ledger_accounts a ON a.id = w.id, app
      WHERE w.application_id = ${applicationId} AND w.mode = ${mode})
    SELECT app.base_currency AS currency, money.*, people.*, purses.*
    FROM app, money, people, purses`);
  const today = utcDate(now);
  const chart = await pool.any(sql.type(chartRow)`
    WITH days AS (
      SELECT generate_series(${today}::date - ${CHART_DAYS - 1}::int, ${today}::date,
        interval '1 day')::date AS day)
    SELECT to_char(days.day, 'YYYY-MM-DD') AS date,
      coalesce(sum(d.completed_volume), 0)::bigint AS volume,
      coalesce(sum(d.completed_count), 0)::int AS count
    FROM days
    LEFT JOIN analytics_daily d ON d.day = days.day AND d.application_id = ${applicationId}
      AND d.mode = ${mode}
      AND d.currency = (SELECT base_currency FROM applications WHERE id = ${applicationId})
    GROUP BY days.day ORDER BY days.day`);
  const recent = await pool.any(sql.type(transactionRow)`
    SELECT ${transactionColumns} FROM transactions
    WHERE application_id = ${applicationId} AND mode = ${mode}
    ORDER BY created_at DESC, id LIMIT 10`);
  return {
    currency: totals.currency,
    total_volume: totals.total_volume,
    net_revenue: totals.net_revenue,
    transaction_count: totals.transaction_count,
    total_users: totals.total_users,
    active_users: totals.active_users,
    wallets: { total: totals.wallets_total, active: totals.wallets_active },
    total_balance: totals.total_balance,
    volume_chart: [...chart],
    recent_activity: recent,
  };
}

export type AdminAnalyticsFilter = {
  applicationId?: string | undefined;
  mode?: Mode | undefined;
  /** First UTC day counted, `YYYY-MM-DD`, inclusive. */
  from?: string | undefined;
  /** Last UTC day counted, `YYYY-MM-DD`, inclusive. */
  to?: string | undefined;
};

export type AdminAnalytics = {
  /** Per currency: completed volume and count, and every payment whatever its status. */
  byCurrency: { currency: Currency; volume: bigint; count: number; total: number }[];
  /** Per type and currency: completed volume and count. */
  byType: {
    transaction_type: TransactionType;
    currency: Currency;
    volume: bigint;
    count: number;
  }[];
};

const groupRow = z.object({
  currency: z.enum(['USD', 'SLE']),
  transaction_type: z.enum(TRANSACTION_TYPES).nullable(),
  volume: z.bigint(),
  count: z.number(),
  total: z.number(),
});

/** Across every application (or the filtered one), from the same daily rollup, in one query. */
export async function adminAnalytics(
  pool: CommonQueryMethods,
  filter: AdminAnalyticsFilter,
): Promise<AdminAnalytics> {
  const rows = await pool.any(sql.type(groupRow)`
    SELECT currency, transaction_type,
      sum(completed_volume)::bigint AS volume,
      sum(completed_count)::int AS count,
      sum(total_count)::int AS total
    FROM analytics_daily
    WHERE (${filter.applicationId ?? null}::uuid IS NULL OR application_id = ${filter.applicationId ?? null}::uuid)
      AND (${filter.mode ?? null}::text IS NULL OR mode = ${filter.mode ?? null}::text)
      AND (${filter.from ?? null}::date IS NULL OR day >= ${filter.from ?? null}::date)
      AND (${filter.to ?? null}::date IS NULL OR day <= ${filter.to ?? null}::date)
    GROUP BY GROUPING SETS ((currency), (currency, transaction_type))
    ORDER BY currency, transaction_type NULLS FIRST`);
  return {
    byCurrency: rows
      .filter((r) => r.transaction_type === null)
      .map(({ currency, volume, count, total }) => ({ currency, volume, count, total })),
    byType: rows.flatMap(({ transaction_type, currency, volume, count }) =>
      transaction_type ? [{ transaction_type, currency, volume, count }] : [],
    ),
  };
}
