import { Readable } from 'node:stream';
import type { Client } from '@temporalio/client';
import type Koa from 'koa';
import { z } from 'zod';
import { findAccountOwner } from '../../db/ledger';
import type { CommonQueryMethods } from '../../db/pool';
import {
  findTransaction,
  mergeTransactionMetadata,
  type TransactionRow,
} from '../../db/transactions';
import {
  countTransactionsUpTo,
  listTransactions,
  listTransactionsAfter,
  transactionStream,
  type ExportRow,
  type TransactionFilter,
} from '../../db/transaction-search';
import { minorToMajorNumber } from '../../domain/money';
import type { Logger } from '../../observability/logger';
import { csvNumber, csvRecord, TRANSACTIONS_CSV_HEADER } from '../csv';
import { EXPORT_RETRY_AFTER_SECONDS, ExportSlots } from '../export-slots';
import { TRANSACTION_STATUSES, TRANSACTION_TYPES, type Caller } from '../../domain/types';
import { assertOwned } from '../access';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import {
  AmountQuery,
  commaListQuery,
  InstantQuery,
  MetadataFilter,
  METADATA_TOO_MANY_KEYS,
  MetadataPatchBody,
  PageQuery,
  pageEnvelope,
  pageWindow,
  toPage,
  uuidPattern,
} from '../schemas';
import { TransactionBody, transactionBodies, transactionMetadata } from '../serializers';
import { isNotFound } from '../../temporal/connection';
import { reconExceptionsOfPayment } from '../../db/recon-resolutions';
import {
  buildTimeline,
  reconciliationSteps,
  TimelineStep,
  WORKFLOW_STATUSES,
} from '../../timeline';
import { decodePayloadsIn } from '../../temporal/data-converter';

const ListQuery = PageQuery.extend({
  // No default here: the handler must tell an explicit page from none (not with starting_after).
  page: PageQuery.shape.page
    .removeDefault()
    .optional()
    .meta({ description: 'The page, from 1 (default 1); not with starting_after' }),
  status: commaListQuery(TRANSACTION_STATUSES, 'Only transactions in this status').optional(),
  transaction_type: commaListQuery(TRANSACTION_TYPES, 'Only transactions of this type').optional(),
  wallet_id: z
    .string({ error: 'must be a wallet id' })
    .regex(uuidPattern, 'must be a wallet id (a UUID)')
    .transform((v) => v.toLowerCase())
    .optional()
    .meta({ description: 'Transactions this wallet sent or received' }),
  'created[gte]': InstantQuery('Created at or after this instant').optional(),
  'created[lt]': InstantQuery('Created before this instant').optional(),
  'amount[gte]': AmountQuery('An amount at least this').optional(),
  'amount[lte]': AmountQuery('An amount at most this').optional(),
  provider_reference: z
    .string({ error: 'must be a provider reference' })
    .min(1, 'must be a provider reference')
    .max(255, 'must be at most 255 characters')
    .optional()
    .meta({ description: 'The provider’s reference of the payment, exactly' }),
  metadata: MetadataFilter.optional(),
  starting_after: z
    .string({ error: 'must be a transaction id' })
    .regex(uuidPattern, 'must be a transaction id (a UUID)')
    .transform((v) => v.toLowerCase())
    .optional()
    .meta({
      format: 'uuid',
      description:
        'A cursor: the transactions after this one in the list’s order (older), answered as ' +
        '{data, per_page, has_more}; an id that is no transaction of the application and ' +
        'mode answers 404; not with page',
    }),
});
type ListQuery = z.infer<typeof ListQuery>;

/** The export takes the list's filters, the very same schema, without its paging. */
const ExportQuery = ListQuery.omit({ page: true, per_page: true, starting_after: true });

/** A cursor page: `starting_after` answers this instead of the page envelope. */
const CursorPage = z.object({
  data: z.array(TransactionBody),
  per_page: z.number().int(),
  has_more: z.boolean().meta({ description: 'Whether older matching transactions follow' }),
});

function filterOf(query: z.infer<typeof ExportQuery>): TransactionFilter {
  return {
    status: query.status,
    transaction_type: query.transaction_type,
    wallet_id: query.wallet_id,
    created_gte: query['created[gte]'],
    created_lt: query['created[lt]'],
    amount_gte: query['amount[gte]'],
    amount_lte: query['amount[lte]'],
    provider_reference: query.provider_reference,
    metadata: query.metadata,
  };
}

const TransactionParams = z.object({ transaction_id: z.string() });

export const TimelineBody = z
  .object({
    transaction_id: z.string(),
    workflow_id: z.string().nullable(),
    workflow_type: z.string().nullable(),
    status: z.enum(TRANSACTION_STATUSES).meta({ description: 'The transaction’s status' }),
    workflow_status: z.enum(WORKFLOW_STATUSES).nullable().meta({
      description: 'The workflow’s status; null when its history is not available',
    }),
    started_at: z.string().nullable(),
    ended_at: z.string().nullable(),
    steps: z.array(TimelineStep),
    note: z.string().nullable().meta({
      description: 'Why the steps are empty (no workflow, or its history no longer retained)',
    }),
  })
  .meta({ id: 'PaymentTimeline' });
type TimelineBody = z.infer<typeof TimelineBody>;

const NO_WORKFLOW = 'This transaction was not made by a workflow, so it has no steps to show';
const NOT_RETAINED =
  'The workflow history of this transaction is no longer retained, so its steps cannot be shown';

/** A wallet filter naming a wallet of another application or mode is refused, as a read is. */
async function assertWalletFilter(db: CommonQueryMethods, caller: Caller, walletId: string) {
  const owner = await findAccountOwner(db, walletId);
  if (owner && (owner.application_id !== caller.applicationId || owner.mode !== caller.mode)) {
    throw new AppError('wallet_forbidden');
  }
}

async function timelineOf(temporal: Client, row: TransactionRow): Promise<TimelineBody> {
  const empty = (note: string): TimelineBody => ({
    transaction_id: row.id,
    workflow_id: row.workflow_id,
    workflow_type: null,
    status: row.status,
    workflow_status: null,
    started_at: null,
    ended_at: null,
    steps: [],
    note,
  });
  if (!row.workflow_id) return empty(NO_WORKFLOW);
  const handle = temporal.workflow.getHandle(row.workflow_id);
  let events;
  try {
    events = (await handle.fetchHistory()).events ?? [];
    await decodePayloadsIn(events, temporal.options.loadedDataConverter.payloadCodecs);
  } catch (error) {
    if (isNotFound(error)) return empty(NOT_RETAINED);
    throw error;
  }
  if (events.length === 0) return empty(NOT_RETAINED);
  let timeline = buildTimeline(events, { providerReference: row.provider_reference });
  if (timeline.workflow_status === 'running') {
    // A running activity's attempt and last failure are in the description only.
    try {
      const { raw } = await handle.describe();
      timeline = buildTimeline(events, {
        providerReference: row.provider_reference,
        pendingActivities: raw.pendingActivities,
      });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  return {
    transaction_id: row.id,
    workflow_id: row.workflow_id,
    workflow_type: timeline.workflow_type,
    status: row.status,
    workflow_status: timeline.workflow_status,
    started_at: timeline.started_at,
    ended_at: timeline.ended_at,
    steps: timeline.steps,
    note: null,
  };
}

export function transactionRoutes(deps: ApiDeps): Route[] {
  const { pool, temporal, config, logger } = deps;
  const owned = async (caller: Caller, id: string) =>
    assertOwned(caller, await findTransaction(pool, id), 'Transaction');
  const exportSlots = new ExportSlots(config.exports);
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/transactions/',
      summary:
        'List transactions of the application and mode, newest first (page envelope); ' +
        'filters (all combinable): status, transaction_type, wallet_id (sender or recipient), ' +
        'created[gte], created[lt], amount[gte], amount[lte], provider_reference, ' +
        'metadata[KEY]=VALUE; with ' +
        'starting_after, a cursor page {data, per_page, has_more} instead',
      tag: 'Transactions',
      auth: 'default',
      query: ListQuery,
      responses: {
        200: {
          description: 'A page of transactions, or a cursor page with starting_after',
          schema: z.union([pageEnvelope(TransactionBody), CursorPage]),
        },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('wallet_id names a wallet of another application or mode'),
        404: errorResponse('starting_after names no transaction of the application and mode'),
        422: errorResponse('Invalid paging or filter, or page with starting_after'),
      },
      handler: async ({ caller, query }) => {
        if (query.starting_after !== undefined && query.page !== undefined) {
          throw new AppError(
            'validation_failed',
            'page: not with starting_after; a list pages by one or the other',
          );
        }
        if (query.wallet_id) await assertWalletFilter(pool, caller, query.wallet_id);
        if (query.starting_after !== undefined) {
          const found = await listTransactionsAfter(
            pool,
            caller,
            filterOf(query),
            query.starting_after,
            query.per_page,
          );
          if (!found) {
            throw new AppError(
              'not_found',
              'starting_after: no transaction of this application and mode has this id',
            );
          }
          const data = await transactionBodies(pool, found.rows);
          return { body: { data, per_page: query.per_page, has_more: found.hasMore } };
        }
        const paging = { page: query.page ?? 1, per_page: query.per_page };
        const { rows, total } = await listTransactions(
          pool,
          caller,
          filterOf(query),
          pageWindow(paging),
        );
        return { body: toPage(await transactionBodies(pool, rows), total, paging) };
      },
    }),
    // Before `:transaction_id`, which would otherwise take `export` for an id.
    defineRoute({
      method: 'get',
      path: '/api/v1/transactions/export',
      summary:
        'Every transaction the list’s filters select, newest first, as CSV (RFC 4180) streamed ' +
        'batch by batch; at most the export’s limit of rows',
      tag: 'Transactions',
      auth: 'default',
      query: ExportQuery,
      responses: {
        200: {
          description: 'The transactions as CSV, a header row first; `metadata` a JSON object',
          otherContent: {
            'text/csv': {
              schema: { type: 'string' },
              example: `${TRANSACTIONS_CSV_HEADER.join(',')}\r\n`,
            },
          },
        },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('wallet_id names a wallet of another application or mode'),
        422: errorResponse(
          `Invalid filter, or a filter selecting more than ${config.exports.maxRows} transactions`,
        ),
        429: errorResponse(
          `The application already streams ${config.exports.perApplication} exports, or the API ` +
            `${config.exports.perProcess}, the most at a time; Retry-After says when to try again ` +
            `(${EXPORT_RETRY_AFTER_SECONDS} seconds)`,
        ),
      },
      handler: async ({ ctx, caller, query }) => {
        const release = exportSlots.take(caller.applicationId);
        let body: Readable;
        try {
          body = await exportBody(ctx, caller, query, release);
        } catch (error) {
          release();
          throw error;
        }
        return {
          body,
          headers: {
            'Content-Type': 'text/csv; charset=utf-8',
            'Content-Disposition': 'attachment; filename="transactions.csv"',
          },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/transactions/:transaction_id',
      summary: 'Get a transaction',
      tag: 'Transactions',
      auth: 'default',
      params: TransactionParams,
      responses: {
        200: { description: 'The transaction', schema: TransactionBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The transaction belongs to another application or mode'),
        404: errorResponse('Transaction not found'),
      },
      handler: async ({ caller, params }) => ({
        body: (await transactionBodies(pool, [await owned(caller, params.transaction_id)]))[0]!,
      }),
    }),
    defineRoute({
      method: 'patch',
      path: '/api/v1/transactions/:transaction_id',
      summary:
        'Update a payment’s metadata: merged into what is stored; "" or null removes a key. ' +
        'Nothing else of a payment changes, and no event is sent (the answer is the record)',
      tag: 'Transactions',
      auth: 'default',
      params: TransactionParams,
      body: MetadataPatchBody,
      responses: {
        200: { description: 'The updated transaction', schema: TransactionBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The transaction belongs to another application or mode'),
        404: errorResponse('Transaction not found'),
        422: errorResponse('Another field than metadata, or metadata breaking a limit'),
      },
      handler: async ({ caller, params, body }) => {
        await owned(caller, params.transaction_id);
        const row = await mergeTransactionMetadata(pool, params.transaction_id, body.metadata);
        // No row: the merged metadata broke the key limit, and nothing was written.
        if (!row) throw new AppError('validation_failed', METADATA_TOO_MANY_KEYS);
        return { body: (await transactionBodies(pool, [row]))[0]! };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/transactions/:transaction_id/timeline',
      summary:
        'The payment’s timeline, read from its workflow’s history: the workflow’s start and end, ' +
        'each activity (attempts of the last try, last failure), update, signal and timer, ' +
        'with times (ISO 8601 UTC, to the nanosecond) and the provider reference where there ' +
        'is one, then the payment’s reconciliation exceptions (kind `reconciliation`) and ' +
        'their resolutions. When the history is no longer retained (or the transaction had no ' +
        'workflow) the answer is still 200, with no workflow steps and a `note` saying why',
      tag: 'Transactions',
      auth: 'default',
      params: TransactionParams,
      responses: {
        200: { description: 'The timeline', schema: TimelineBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The transaction belongs to another application or mode'),
        404: errorResponse('Transaction not found'),
      },
      handler: async ({ caller, params }) => {
        const row = await owned(caller, params.transaction_id);
        const timeline = await timelineOf(temporal, row);
        const exceptions = await reconExceptionsOfPayment(pool, row.id);
        return {
          body: { ...timeline, steps: [...timeline.steps, ...reconciliationSteps(exceptions)] },
        };
      },
    }),
  ];

  /** The CSV stream; its slot is released once the stream has ended, whichever way it ends. */
  async function exportBody(
    ctx: Koa.Context,
    caller: Caller,
    query: z.infer<typeof ExportQuery>,
    release: () => void,
  ): Promise<Readable> {
    if (query.wallet_id) await assertWalletFilter(pool, caller, query.wallet_id);
    const filter = filterOf(query);
    const { maxRows, chunkRows, timeLimitMs } = config.exports;
    // Counted before any byte is sent, so that too wide a filter is still a 422.
    if ((await countTransactionsUpTo(pool, caller, filter, maxRows + 1)) > maxRows) {
      throw new AppError(
        'validation_failed',
        `The filters select more than ${maxRows} transactions, the most an export holds: narrow them (created[gte], created[lt])`,
      );
    }
    const batches = transactionStream(pool, caller, filter, chunkRows, maxRows);
    const lines = exportLines(ctx, batches, logger, release);
    // A stream never read never runs the generator's `finally`: the closed response releases it.
    let started = false;
    const timer = setTimeout(() => {
      logger.warn({ timeLimitMs }, 'transactions export stopped: it reached its time limit');
      // Cut, not ended: a client must not take a partial CSV for the whole export.
      ctx.res.destroy();
    }, timeLimitMs);
    ctx.res.once('close', () => {
      clearTimeout(timer);
      if (!started) release();
    });
    // Not object mode: the cursor is read on only once the last chunk has drained to the socket.
    return Readable.from(
      (async function* () {
        started = true;
        yield* lines;
      })(),
      { objectMode: false },
    );
  }
}

function exportRecord(row: ExportRow): string {
  const major = (minor: bigint | null) =>
    minor === null ? '' : csvNumber(String(minorToMajorNumber(minor)));
  return csvRecord([
    row.id,
    row.created_at,
    row.transaction_type,
    row.status,
    major(row.amount),
    row.currency,
    major(row.application_fee),
    major(row.provider_fee === null ? null : BigInt(row.provider_fee)),
    row.wallet_id ?? '',
    row.recipient_wallet_id ?? '',
    row.description,
    row.provider_reference ?? '',
    JSON.stringify(transactionMetadata(row)),
  ]);
}

/** The CSV, chunk by chunk; a client gone stops the reading before the next chunk. */
async function* exportLines(
  ctx: Koa.Context,
  batches: AsyncGenerator<readonly ExportRow[]>,
  logger: Logger,
  release: () => void,
): AsyncGenerator<string> {
  let rows = 0;
  let finished = false;
  try {
    yield csvRecord(TRANSACTIONS_CSV_HEADER);
    for await (const batch of batches) {
      if (ctx.res.destroyed || ctx.req.destroyed) break;
      rows += batch.length;
      yield batch.map(exportRecord).join('');
    }
    finished = !ctx.res.destroyed;
  } finally {
    await batches.return(undefined);
    release();
    if (!finished) logger.info({ rows }, 'transactions export stopped: the client went away');
  }
}
