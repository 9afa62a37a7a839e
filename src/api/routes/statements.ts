import { Readable } from 'node:stream';
import { z } from 'zod';
import {
  allStatementEntries,
  balanceAt,
  balanceNow,
  statementPage,
  statementSummary,
  type StatementEntry,
  type StatementWindow,
} from '../../db/statements';
import { minorToDecimalString, minorToMajorNumber } from '../../domain/money';
import { TRANSACTION_TYPES } from '../../domain/types';
import { ownedWallet } from '../access';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { InstantQuery } from '../../domain/instant';
import { defineRoute, type Route } from '../route';
import { PageQuery, pageWindow } from '../schemas';
import { csvNumber, csvRecord, STATEMENT_CSV_HEADER } from '../csv';

/** The window of a statement asked without `from`. */
export const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;

/** The most entries one CSV statement holds, as the transactions export's rows. */
export const MAX_CSV_ENTRIES = 1_000_000;

const StatementEntryBody = z
  .object({
    transaction_id: z.string().nullable().meta({
      description: 'The payment record the entry belongs to (null for a ledger-only movement)',
    }),
    transaction_type: z.enum(TRANSACTION_TYPES).nullable(),
    created_at: z.string().meta({ description: 'When the ledger recorded the entry' }),
    amount: z.number().meta({
      description: 'Signed, in major units: a credit is positive, a debit negative',
    }),
    balance_after: z.number(),
    description: z.string(),
  })
  .meta({ id: 'StatementEntry' });

const StatementBody = z
  .object({
    wallet_id: z.string(),
    currency: z.enum(['USD', 'SLE']),
    from: z.string().meta({ description: 'The window’s start, inclusive' }),
    to: z.string().meta({ description: 'The window’s end, exclusive' }),
    opening_balance: z.number().meta({ description: 'The balance just before `from`' }),
    closing_balance: z.number().meta({
      description: 'The balance just before `to`: opening_balance plus every entry of the window',
    }),
    total_credits: z.number().meta({ description: 'The window’s credits, whatever the page' }),
    total_debits: z.number().meta({
      description: 'The window’s debits, as a positive number, whatever the page',
    }),
    entries: z.array(StatementEntryBody).meta({ description: 'This page’s entries, oldest first' }),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int().meta({ description: 'The window’s entries, counted exactly' }),
    total_pages: z.number().int(),
  })
  .meta({ id: 'Statement' });

const BalanceBody = z
  .object({
    wallet_id: z.string(),
    currency: z.enum(['USD', 'SLE']),
    balance: z.number(),
    at: z.string(),
  })
  .meta({ id: 'BalanceAt' });

const INSTANT = 'An ISO 8601 time with an offset, or a date (its midnight UTC), to the millisecond';

const StatementQuery = PageQuery.extend({
  from: InstantQuery.optional().meta({
    description: `${INSTANT}: the window’s start, inclusive; default: ${DEFAULT_DAYS} days before \`to\``,
  }),
  to: InstantQuery.optional().meta({
    description: `${INSTANT}: the window’s end, exclusive; default: now`,
  }),
});

const ACCESS_RESPONSES = {
  401: errorResponse('Missing or invalid credentials'),
  403: errorResponse('The wallet belongs to another application or mode'),
  404: errorResponse('Wallet not found'),
};

export function statementRoutes(deps: ApiDeps): Route[] {
  const { pool } = deps;
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/wallets/:wallet_id/statement',
      summary: 'A wallet’s statement over a window, read from the ledger (JSON, or CSV)',
      tag: 'Wallets',
      auth: 'default',
      params: z.object({ wallet_id: z.string() }),
      query: StatementQuery,
      responses: {
        200: {
          description:
            'The statement: the page’s entries, and the whole window’s balances and totals. ' +
            'With `Accept: text/csv`, every entry of the window as CSV (RFC 4180), unpaged',
          schema: StatementBody,
          otherContent: {
            'text/csv': {
              schema: { type: 'string' },
              example: `${STATEMENT_CSV_HEADER.join(',')}\r\n`,
            },
          },
        },
        ...ACCESS_RESPONSES,
        422: errorResponse(
          `A malformed from, to or paging; from not before to; or a CSV of more than ${MAX_CSV_ENTRIES} entries`,
        ),
      },
      handler: async ({ ctx, caller, params, query }) => {
        const wallet = await ownedWallet(pool, caller, params.wallet_id);
        const window = statementWindow(query.from, query.to, new Date());
        const account = { id: wallet.id, created_at: wallet.created_at };
        const head = {
          wallet_id: wallet.id,
          currency: wallet.currency,
          from: window.from.toISOString(),
          to: window.to.toISOString(),
        };
        if (ctx.accepts('application/json', 'text/csv') === 'text/csv') {
          const summary = await statementSummary(pool, account, window);
          if (summary.count > MAX_CSV_ENTRIES) {
            throw new AppError(
              'validation_failed',
              `The window holds more than ${MAX_CSV_ENTRIES} entries, the most a CSV statement holds: ask a shorter window`,
            );
          }
          const batches = allStatementEntries(pool, wallet.id, window, summary.opening);
          return {
            body: Readable.from(csvLines(batches)),
            headers: {
              'Content-Type': 'text/csv; charset=utf-8',
              'Content-Disposition': `attachment; filename="statement-${wallet.id}.csv"`,
            },
          };
        }
        const { summary, entries } = await statementPage(pool, account, window, pageWindow(query));
        return {
          body: {
            ...head,
            opening_balance: minorToMajorNumber(summary.opening),
            closing_balance: minorToMajorNumber(summary.closing),
            total_credits: minorToMajorNumber(summary.credits),
            total_debits: minorToMajorNumber(summary.debits),
            entries: entries.map((e) => ({
              ...e,
              amount: minorToMajorNumber(e.amount),
              balance_after: minorToMajorNumber(e.balance_after),
            })),
            page: query.page,
            per_page: query.per_page,
            total: summary.count,
            total_pages: Math.ceil(summary.count / query.per_page),
          } satisfies z.infer<typeof StatementBody>,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/wallets/:wallet_id/balance',
      summary: 'What a wallet held at an instant, read from the ledger (now by default)',
      tag: 'Wallets',
      auth: 'default',
      params: z.object({ wallet_id: z.string() }),
      query: z.object({
        at: InstantQuery.optional().meta({
          description:
            `${INSTANT}: entries recorded at or before it count; ` +
            'default: now. An instant to come answers what the ledger holds now',
        }),
      }),
      responses: {
        200: { description: 'The balance at the instant', schema: BalanceBody },
        ...ACCESS_RESPONSES,
        422: errorResponse('A malformed at'),
      },
      handler: async ({ caller, params, query }) => {
        const wallet = await ownedWallet(pool, caller, params.wallet_id);
        const head = { wallet_id: wallet.id, currency: wallet.currency };
        if (!query.at) {
          const now = await balanceNow(pool, wallet.id);
          return { body: { ...head, balance: minorToMajorNumber(now.balance), at: now.at } };
        }
        const balance = await balanceAt(pool, wallet, query.at);
        return {
          body: { ...head, balance: minorToMajorNumber(balance), at: query.at.toISOString() },
        };
      },
    }),
  ];
}

/** The window asked, with its defaults: `to` now, `from` the default days before `to`. */
function statementWindow(from: Date | undefined, to: Date | undefined, now: Date): StatementWindow {
  const end = to ?? now;
  const start = from ?? new Date(end.getTime() - DEFAULT_DAYS * DAY_MS);
  if (start.getTime() >= end.getTime()) {
    throw new AppError(
      'validation_failed',
      to
        ? 'from must be before to'
        : `from must be before to, which defaults to now (${end.toISOString()})`,
    );
  }
  return { from: start, to: end };
}

async function* csvLines(batches: AsyncGenerator<StatementEntry[]>): AsyncGenerator<string> {
  yield csvRecord(STATEMENT_CSV_HEADER);
  for await (const batch of batches) {
    yield batch
      .map((e) =>
        csvRecord([
          e.transaction_id ?? '',
          e.transaction_type ?? '',
          e.created_at,
          csvNumber(minorToDecimalString(e.amount)),
          csvNumber(minorToDecimalString(e.balance_after)),
          e.description,
        ]),
      )
      .join('');
  }
}
