import { randomUUID } from 'node:crypto';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { z } from 'zod';
import {
  batchAnswer,
  batchOwner,
  findBatch,
  insertBatch,
  listBatchItems,
  listBatches,
  requestBatchCancel,
  type BatchRow,
  type NewBatchItem,
} from '../../db/batches';
import {
  BATCH_ITEM_STATUSES,
  BATCH_KINDS,
  BATCH_LIMITS,
  BATCH_STATUSES,
  batchItemKey,
  type BatchKind,
} from '../../domain/batches';
import type { Caller } from '../../domain/types';
import { batchWorkflow } from '../../workflows/batch';
import { batchCancel, type BatchInput } from '../../workflows/batch-shared';
import { workflowIds } from '../../workflows/ids';
import { SearchAttributes } from '../../workflows/shared';
import { assertOwned } from '../access';
import { audited } from '../audit';
import type { ApiDeps } from '../deps';
import { AppError, assertLiveProvider, declineAnswer, errorResponse } from '../errors';
import {
  CardPayoutRequest,
  CashoutRequest,
  TransferRequest,
  cardPayoutFields,
  cashoutFields,
  transferFields,
} from '../payment-requests';
import { idFromKey } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { Metadata, PageQuery, pageEnvelope, pageWindow, toPage, uuidPattern } from '../schemas';
import { withDeadline } from '../workflow-starts';

/** The largest bulk payment body: its items at the size their single requests may reach. */
export const BATCH_MAX_BODY_BYTES = 16 * 1024 * 1024;

/** The bulk payment's path (src/api/app.ts gives it its larger body). */
export const takesBatchBody = (path: string): boolean => /^\/api\/v1\/batches\/?$/.test(path);

const Reference = z
  .string()
  .min(1, `must be 1 to ${BATCH_LIMITS.referenceLength} characters`)
  .max(BATCH_LIMITS.referenceLength, `must be 1 to ${BATCH_LIMITS.referenceLength} characters`)
  .meta({ description: 'The item’s own reference, unique in the batch' });

/** A batch's items: each the body its single endpoint takes, with an optional reference. */
const itemsOf = <T extends z.ZodType>(item: T) =>
  z
    .array(item)
    .min(1, `must hold 1 to ${BATCH_LIMITS.items.toLocaleString('en')} items`)
    .max(BATCH_LIMITS.items, `must hold 1 to ${BATCH_LIMITS.items.toLocaleString('en')} items`);

const referenced = { reference: Reference.optional() };
const TransferItem = TransferRequest.extend(referenced);
const CashoutItem = CashoutRequest.extend(referenced);
const CardPayoutItem = CardPayoutRequest.extend(referenced);

const Atomic = z.boolean().optional().meta({
  description: 'All items or none, in one ledger transaction (transfers only, at most 1,000 items)',
});
/** Only transfers can be atomic: the other kinds take `false` or nothing. */
const NotAtomic = z
  .literal(false, { error: 'only a batch of transfers' })
  .optional()
  .meta({ description: 'Only a batch of transfers can be atomic' });

const BatchRequest = z
  .discriminatedUnion(
    'kind',
    [
      z.object({
        kind: z.literal('transfer'),
        items: itemsOf(TransferItem),
        atomic: Atomic,
        metadata: Metadata.optional(),
      }),
      z.object({
        kind: z.literal('mobile_money_cashout'),
        items: itemsOf(CashoutItem),
        atomic: NotAtomic,
        metadata: Metadata.optional(),
      }),
      z.object({
        kind: z.literal('card_payout'),
        items: itemsOf(CardPayoutItem),
        atomic: NotAtomic,
        metadata: Metadata.optional(),
      }),
    ],
    { error: `must be one of ${BATCH_KINDS.join(', ')}` },
  )
  .superRefine((body, ctx) => {
    if (body.atomic && body.items.length > BATCH_LIMITS.atomicItems) {
      ctx.addIssue({
        code: 'custom',
        path: ['items'],
        message: `an atomic batch holds 1 to ${BATCH_LIMITS.atomicItems.toLocaleString('en')} items`,
      });
    }
    const seen = new Map<string, number>();
    for (const [index, item] of body.items.entries()) {
      // A batch answers before any wallet is read: an id that names no wallet is refused here.
      for (const [field, id] of Object.entries(item)) {
        if (field.endsWith('wallet_id') && typeof id === 'string' && !uuidPattern.test(id)) {
          ctx.addIssue({
            code: 'custom',
            path: ['items', index, field],
            message: 'must be a wallet id (a UUID)',
          });
        }
      }
      if (item.reference === undefined) continue;
      const first = seen.get(item.reference);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['items', index, 'reference'],
          message: `the same as items[${first}].reference: a reference is unique in the batch`,
        });
      } else {
        seen.set(item.reference, index);
      }
    }
  });
type BatchRequest = z.infer<typeof BatchRequest>;

const BatchBody = z
  .object({
    id: z.string(),
    kind: z.enum(BATCH_KINDS),
    atomic: z.boolean(),
    status: z.enum(BATCH_STATUSES),
    total: z.int(),
    succeeded: z.int(),
    failed: z.int(),
    canceled: z.int(),
    metadata: z.record(z.string(), z.string()),
    created_at: z.string(),
    completed_at: z.string().nullable(),
  })
  .meta({ id: 'Batch' });

const BatchItemBody = z
  .object({
    index: z.int().meta({ description: 'The item’s place in the request, from 0' }),
    reference: z.string().nullable(),
    status: z.enum(BATCH_ITEM_STATUSES),
    transaction_id: z
      .string()
      .nullable()
      .meta({ description: 'The item’s payment, once it was written; null before and if none' }),
    error: z
      .object({ status: z.int(), detail: z.string() })
      .nullable()
      .meta({ description: 'A failed item: what its single request would have answered' }),
  })
  .meta({ id: 'BatchItem' });

const ListQuery = PageQuery.extend({
  status: z
    .enum(BATCH_STATUSES, { error: `must be one of ${BATCH_STATUSES.join(', ')}` })
    .optional(),
});

const ItemsQuery = z.object({
  per_page: PageQuery.shape.per_page,
  starting_after: z.coerce
    .number({ error: 'must be an item index' })
    .int('must be an item index')
    .min(0, 'must be an item index')
    .max(BATCH_LIMITS.items, 'must be an item index')
    .optional()
    .meta({ description: 'A cursor: the items after this index' }),
  status: z
    .enum(BATCH_ITEM_STATUSES, { error: `must be one of ${BATCH_ITEM_STATUSES.join(', ')}` })
    .optional(),
});

const ItemsPage = z.object({
  data: z.array(BatchItemBody),
  per_page: z.int(),
  has_more: z.boolean().meta({ description: 'Whether more matching items follow' }),
});

const BatchParams = z.object({ batch_id: z.string() });

/** Each item as it is stored: its payment's id, derived from its key as its endpoint derives it. */
function storedItems(
  caller: Caller,
  idempotency: { key: string; claimedAt: string } | null,
  body: BatchRequest,
): NewBatchItem[] {
  const idOf = (index: number): string =>
    idempotency
      ? idFromKey(
          caller,
          { key: batchItemKey(idempotency.key, index), claimedAt: idempotency.claimedAt },
          body.kind,
        )
      : randomUUID();
  const fieldsOf = (kind: BatchKind, item: BatchRequest['items'][number]) => {
    if (kind === 'transfer') return transferFields(item as z.infer<typeof TransferRequest>);
    if (kind === 'mobile_money_cashout') {
      return cashoutFields(item as z.infer<typeof CashoutRequest>);
    }
    return cardPayoutFields(item as z.infer<typeof CardPayoutRequest>);
  };
  return body.items.map((item, index) => ({
    reference: item.reference ?? null,
    transactionId: idOf(index),
    body: fieldsOf(body.kind, item),
  }));
}

export function batchRoutes(deps: ApiDeps): Route[] {
  const { pool, config, providers, temporal } = deps;
  const tag = 'Bulk payments';
  const auth = 'batches';

  /** Starts the batch's workflow once; one running or ended already is left alone. */
  async function startBatch(batch: BatchRow): Promise<void> {
    const input: BatchInput = {
      batchId: batch.id,
      applicationId: batch.application_id,
      mode: batch.mode,
      kind: batch.kind,
      atomic: batch.atomic,
      total: batch.total,
      window: config.batches.itemsInFlight,
    };
    const start = temporal.workflow
      .start(batchWorkflow, {
        workflowId: workflowIds.batch(batch.id),
        taskQueue: config.temporal.taskQueue,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        typedSearchAttributes: [
          { key: SearchAttributes.ApplicationId, value: batch.application_id },
          { key: SearchAttributes.PaymentMode, value: batch.mode },
        ],
      })
      .catch((error: unknown) => {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      });
    await withDeadline(start, config.api.requestTimeoutMs);
  }

  async function ownedBatch(caller: Caller, id: string): Promise<BatchRow> {
    const owner = { applicationId: caller.applicationId, mode: caller.mode };
    const batch = await findBatch(pool, { ...owner, id });
    if (!batch) assertOwned(caller, await batchOwner(pool, id), 'Batch');
    return batch!;
  }

  const params = BatchParams;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/batches',
      summary:
        'Bulk payment: up to 10,000 transfers, mobile-money cashouts or card payouts, each the ' +
        'body its single endpoint takes, run as its own payment a bounded number at a time (a ' +
        'workflow, `batch-<id>`); `atomic` transfers move in one ledger transaction or not at all',
      tag,
      auth,
      idempotent: true,
      body: BatchRequest,
      responses: {
        202: { description: 'The batch, started', schema: BatchBody },
        401: errorResponse('Missing or invalid credentials'),
        413: errorResponse('Request body is larger than 16 MiB'),
        422: errorResponse(
          'Validation failure, naming `items[INDEX].FIELD` (nothing is started), or an ' +
            'Idempotency-Key reused with another request',
        ),
        429: errorResponse('Rate limit exceeded (`batches`)'),
        503: errorResponse('Live Mode provider credentials are not configured'),
      },
      handler: async ({ ctx, caller, body, idempotency }) => {
        const id = idFromKey(caller, idempotency, 'batch');
        const owner = { applicationId: caller.applicationId, mode: caller.mode };
        // A retry whose first attempt recorded the batch starts (or finds) its workflow.
        let batch =
          idempotency && !idempotency.fresh ? await findBatch(pool, { ...owner, id }) : null;
        if (!batch) {
          if (body.kind === 'mobile_money_cashout') {
            assertLiveProvider(caller, providers.liveMobileMoney, 'mobile-money cashouts');
          } else if (body.kind === 'card_payout') {
            assertLiveProvider(caller, providers.liveConnect, 'card payouts');
          }
          const made = {
            id,
            ...owner,
            // Its items count where its request did: the credential's, or the session's subject.
            pacedBy:
              caller.rateLimitSubject === undefined
                ? { credentialId: caller.credentialId }
                : { subject: caller.rateLimitSubject },
            kind: body.kind,
            atomic: body.atomic === true,
            metadata: body.metadata ?? {},
            idempotencyKey: idempotency?.key ?? null,
          };
          const items = storedItems(caller, idempotency, body);
          batch = await audited(
            pool,
            ctx,
            caller,
            (trx) => insertBatch(trx, made, items),
            (row) => ({
              action: 'batch.created',
              target: { type: 'batch', id: row.id },
              details: { kind: row.kind, atomic: row.atomic, total: row.total },
            }),
          );
        }
        await startBatch(batch);
        return { status: 202, body: batchAnswer(batch) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/batches',
      summary: 'List the bulk payments of the application and mode, newest first (page envelope)',
      tag,
      auth,
      query: ListQuery,
      responses: {
        200: { description: 'A page of batches', schema: pageEnvelope(BatchBody) },
        401: errorResponse('Missing or invalid credentials'),
        422: errorResponse('Invalid paging or filter'),
        429: errorResponse('Rate limit exceeded (`batches`)'),
      },
      handler: async ({ caller, query }) => {
        const { rows, total } = await listBatches(
          pool,
          { applicationId: caller.applicationId, mode: caller.mode },
          { status: query.status },
          pageWindow(query),
        );
        return { body: toPage(rows.map(batchAnswer), total, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/batches/:batch_id',
      summary: 'Get a bulk payment: its status and counts (read from Postgres)',
      tag,
      auth,
      params,
      responses: {
        200: { description: 'The batch', schema: BatchBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The batch belongs to another application or mode'),
        404: errorResponse('Batch not found'),
        429: errorResponse('Rate limit exceeded (`batches`)'),
      },
      handler: async ({ caller, params }) => ({
        body: batchAnswer(await ownedBatch(caller, params.batch_id.toLowerCase())),
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/batches/:batch_id/items',
      summary:
        'The items of a bulk payment in their order, a cursor page by `starting_after` (an ' +
        'index); filter by status',
      tag,
      auth,
      params,
      query: ItemsQuery,
      responses: {
        200: { description: 'A cursor page of items', schema: ItemsPage },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The batch belongs to another application or mode'),
        404: errorResponse('Batch not found'),
        422: errorResponse('Invalid paging or filter'),
        429: errorResponse('Rate limit exceeded (`batches`)'),
      },
      handler: async ({ caller, params, query }) => {
        const batch = await ownedBatch(caller, params.batch_id.toLowerCase());
        const { rows, hasMore } = await listBatchItems(pool, batch.id, {
          after: query.starting_after ?? -1,
          status: query.status,
          limit: query.per_page,
        });
        const data = rows.map((r) => ({
          index: r.item_index,
          reference: r.reference,
          status: r.status,
          transaction_id: r.transaction_id,
          error:
            r.error_code === null
              ? null
              : declineAnswer({ code: r.error_code, detail: r.error_detail }),
        }));
        return { body: { data, per_page: query.per_page, has_more: hasMore } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/batches/:batch_id/cancel',
      summary:
        'Cancel the items of a bulk payment that have not started; those running end as they ' +
        'would, and the batch then ends `canceled`',
      tag,
      auth,
      params,
      responses: {
        200: { description: 'The batch, its items not started canceled', schema: BatchBody },
        400: errorResponse('The batch has ended: nothing is left to cancel'),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The batch belongs to another application or mode'),
        404: errorResponse('Batch not found'),
        429: errorResponse('Rate limit exceeded (`batches`)'),
      },
      handler: async ({ ctx, caller, params }) => {
        const batch = await ownedBatch(caller, params.batch_id.toLowerCase());
        const ended = () => new AppError('invalid_request', BATCH_ENDED);
        if (batch.status !== 'processing') throw ended();
        try {
          await withDeadline(
            temporal.workflow.getHandle(workflowIds.batch(batch.id)).executeUpdate(batchCancel),
            config.api.requestTimeoutMs,
          );
        } catch (error) {
          // It ended meanwhile: the update found no running workflow.
          if (
            error instanceof WorkflowNotFoundError ||
            error instanceof WorkflowUpdateFailedError
          ) {
            throw ended();
          }
          throw error;
        }
        // Recorded once the workflow took the cancel: a batch that had ended keeps no entry.
        const canceled = await audited(
          pool,
          ctx,
          caller,
          (trx) => requestBatchCancel(trx, batch.id),
          (row) => ({
            action: 'batch.canceled',
            target: { type: 'batch', id: row.id },
            details: { canceled: row.canceled },
          }),
        );
        return { body: batchAnswer(canceled) };
      },
    }),
  ];
}

/** A cancel of a batch that has ended. */
export const BATCH_ENDED = 'The batch has ended: nothing is left to cancel';
