import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import {
  BATCH_ITEM_STATUSES,
  BATCH_KINDS,
  BATCH_STATUSES,
  endedBatchStatus,
  type BatchItemStatus,
  type BatchKind,
  type BatchStatus,
} from '../domain/batches';
import type { Mode } from '../domain/types';
import { pageTotal } from './pages';
import { prepare } from './pool';
import type { RateLimitKey } from './rate-limit';

const batchRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  credential_id: z.string().nullable(),
  rate_limit_subject: z.string().nullable(),
  kind: z.enum(BATCH_KINDS),
  atomic: z.boolean(),
  status: z.enum(BATCH_STATUSES),
  total: z.number(),
  succeeded: z.number(),
  failed: z.number(),
  canceled: z.number(),
  metadata: z.record(z.string(), z.string()),
  cancel_requested: z.boolean(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
});
export type BatchRow = z.infer<typeof batchRow>;

const columns = sql.fragment`id, application_id, mode, credential_id, rate_limit_subject, kind, atomic,
  status, total, succeeded, failed, canceled, metadata, cancel_requested, created_at, completed_at`;

/** A Batch as the API answers it and `batch.completed` carries it (docs/api.md, Bulk payments). */
export function batchAnswer(b: BatchRow) {
  return {
    id: b.id,
    kind: b.kind,
    atomic: b.atomic,
    status: b.status,
    total: b.total,
    succeeded: b.succeeded,
    failed: b.failed,
    canceled: b.canceled,
    metadata: b.metadata,
    created_at: b.created_at,
    completed_at: b.completed_at,
  };
}

export type NewBatch = {
  id: string;
  applicationId: string;
  mode: Mode;
  /**
   * Whose rate limits its items count against as they start: the credential that sent it, or
   * the subject of the dashboard session that did (src/db/rate-limit.ts `RateLimitKey`).
   */
  pacedBy: RateLimitKey;
  kind: BatchKind;
  atomic: boolean;
  metadata: Record<string, string>;
  idempotencyKey: string | null;
};

/** An item as it is stored: its payment's id and the body its workflow's input is made of. */
export type NewBatchItem = { reference: string | null; transactionId: string; body: unknown };

/**
 * Records a batch and its items in one transaction; an id taken already (a retried request whose
 * first attempt wrote it) writes nothing and answers the batch as it is.
 */
export async function insertBatch(
  db: CommonQueryMethods,
  batch: NewBatch,
  items: readonly NewBatchItem[],
): Promise<BatchRow> {
  return db.transaction(async (trx) => {
    const row = await trx.maybeOne(sql.type(batchRow)`
      INSERT INTO batches (id, application_id, mode, credential_id, rate_limit_subject, kind,
        atomic, total, metadata, idempotency_key)
      VALUES (${batch.id}, ${batch.applicationId}, ${batch.mode},
        ${'credentialId' in batch.pacedBy ? batch.pacedBy.credentialId : null},
        ${'subject' in batch.pacedBy ? batch.pacedBy.subject : null}, ${batch.kind},
        ${batch.atomic}, ${items.length}, ${sql.jsonb(batch.metadata)},
        ${batch.idempotencyKey})
      ON CONFLICT (id) DO NOTHING
      RETURNING ${columns}`);
    if (!row) return getBatch(trx, batch.id);
    await trx.query(sql.unsafe`
      INSERT INTO batch_items (batch_id, item_index, reference, transaction_id, body)
      SELECT ${batch.id}, i.n - 1, i.reference, i.transaction_id, i.body::jsonb
      FROM unnest(
        ${sql.array(
          items.map((i) => i.reference),
          'text',
        )},
        ${sql.array(
          items.map((i) => i.transactionId),
          'uuid',
        )},
        ${sql.array(
          items.map((i) => JSON.stringify(i.body)),
          'text',
        )}
      ) WITH ORDINALITY AS i (reference, transaction_id, body, n)`);
    return row;
  });
}

/** Whose rate limits a batch's items count against; null once its credential is gone. */
export function batchPacedBy(b: BatchRow): RateLimitKey | null {
  if (b.credential_id !== null) return { credentialId: b.credential_id };
  if (b.rate_limit_subject !== null) return { subject: b.rate_limit_subject };
  return null;
}

/** A batch by its id alone (its workflow's activities); throws when there is none. */
export async function getBatch(db: CommonQueryMethods, id: string): Promise<BatchRow> {
  return db.one(prepare(sql.type(batchRow)`SELECT ${columns} FROM batches WHERE id = ${id}`));
}

/** A batch of the application and mode, or null (another's too: see `batchOwner`). */
export async function findBatch(
  db: CommonQueryMethods,
  key: { applicationId: string; mode: Mode; id: string },
): Promise<BatchRow | null> {
  return db.maybeOne(sql.type(batchRow)`
    SELECT ${columns} FROM batches
    WHERE id = ${key.id} AND application_id = ${key.applicationId} AND mode = ${key.mode}`);
}

/** Whose a batch is: a batch not found in the caller's application and mode is told apart. */
export async function batchOwner(
  db: CommonQueryMethods,
  id: string,
): Promise<{ application_id: string; mode: Mode } | null> {
  return db.maybeOne(
    sql.type(z.object({ application_id: z.string(), mode: z.enum(['test', 'live']) }))`
      SELECT application_id, mode FROM batches WHERE id = ${id}`,
  );
}

/** The application's batches in a mode, newest first. */
export async function listBatches(
  db: CommonQueryMethods,
  owner: { applicationId: string; mode: Mode },
  filter: { status?: BatchStatus | undefined },
  page: { limit: number; offset: number },
): Promise<{ rows: readonly BatchRow[]; total: number }> {
  const status = filter.status ?? null;
  const where = sql.fragment`application_id = ${owner.applicationId} AND mode = ${owner.mode}
    AND (${status}::text IS NULL OR status = ${status}::text)`;
  const order = sql.fragment`ORDER BY created_at DESC, id`;
  const total = await pageTotal(db, sql.fragment`batches`, where, page, order);
  const rows = await db.any(sql.type(batchRow)`
    SELECT ${columns} FROM batches WHERE ${where}
    ${order} LIMIT ${page.limit} OFFSET ${page.offset}`);
  return { rows, total };
}

const itemRow = z.object({
  item_index: z.number(),
  reference: z.string().nullable(),
  status: z.enum(BATCH_ITEM_STATUSES),
  transaction_id: z.string().nullable(),
  error_code: z.string().nullable(),
  error_detail: z.string().nullable(),
});
export type BatchItemRow = z.infer<typeof itemRow>;

/**
 * A cursor page of a batch's items in index order, after `after` (-1: from the first), of one
 * status or all; `transaction_id` is the payment's once it was written, else null.
 */
export async function listBatchItems(
  db: CommonQueryMethods,
  batchId: string,
  filter: { after: number; status?: BatchItemStatus | undefined; limit: number },
): Promise<{ rows: BatchItemRow[]; hasMore: boolean }> {
  const status = filter.status ?? null;
  const rows = await db.any(sql.type(itemRow)`
    SELECT i.item_index, i.reference, i.status, t.id AS transaction_id, i.error_code,
      i.error_detail
    FROM batch_items i LEFT JOIN transactions t ON t.id = i.transaction_id
    WHERE i.batch_id = ${batchId} AND i.item_index > ${filter.after}
      AND (${status}::text IS NULL OR i.status = ${status}::text)
    ORDER BY i.item_index LIMIT ${filter.limit + 1}`);
  return { rows: rows.slice(0, filter.limit), hasMore: rows.length > filter.limit };
}

const pendingItemRow = z.object({
  item_index: z.number(),
  transaction_id: z.string(),
  body: z.unknown(),
});
export type PendingBatchItem = z.infer<typeof pendingItemRow>;

/** The batch's items still pending from index `from` on, in order, at most `limit`. */
export async function pendingBatchItems(
  db: CommonQueryMethods,
  batchId: string,
  from: number,
  limit: number,
): Promise<readonly PendingBatchItem[]> {
  return db.any(
    prepare(sql.type(pendingItemRow)`
      SELECT item_index, transaction_id, body FROM batch_items
      WHERE batch_id = ${batchId} AND item_index >= ${from} AND status = 'pending'
      ORDER BY item_index LIMIT ${limit}`),
  );
}

/** An item's end: `succeeded`, or `failed` with its decline's code and detail. */
export type BatchItemResult = {
  index: number;
  status: 'succeeded' | 'failed';
  code: string | null;
  detail: string | null;
};

/**
 * Records items' ends and adds them to the batch's counts in one statement; an item ended
 * already (a retried write) is neither changed nor counted again.
 */
export async function recordBatchItemResults(
  db: CommonQueryMethods,
  batchId: string,
  results: readonly BatchItemResult[],
): Promise<void> {
  if (results.length === 0) return;
  await db.query(
    prepare(sql.unsafe`
      WITH r AS (
        SELECT * FROM unnest(
          ${sql.array(
            results.map((r) => r.index),
            'int4',
          )},
          ${sql.array(
            results.map((r) => r.status),
            'text',
          )},
          ${sql.array(
            results.map((r) => r.code),
            'text',
          )},
          ${sql.array(
            results.map((r) => r.detail),
            'text',
          )}) AS r (item_index, status, code, detail)
      ), ended AS (
        UPDATE batch_items i SET status = r.status, error_code = r.code, error_detail = r.detail
        FROM r
        WHERE i.batch_id = ${batchId} AND i.item_index = r.item_index AND i.status = 'pending'
        RETURNING i.status
      )
      UPDATE batches SET
        succeeded = succeeded + (SELECT count(*) FROM ended WHERE status = 'succeeded'),
        failed = failed + (SELECT count(*) FROM ended WHERE status = 'failed')
      WHERE id = ${batchId}`),
  );
}

/** Marks the batch asked to cancel (its workflow cancels what it has not started); answers it. */
export async function requestBatchCancel(
  db: CommonQueryMethods,
  batchId: string,
): Promise<BatchRow> {
  return db.one(sql.type(batchRow)`
    UPDATE batches SET cancel_requested = true WHERE id = ${batchId} RETURNING ${columns}`);
}

/** Cancels the items still pending from index `from` on, and counts them; answers how many. */
export async function cancelPendingItems(
  db: CommonQueryMethods,
  batchId: string,
  from: number,
): Promise<number> {
  return db.oneFirst(sql.type(z.object({ count: z.number() }))`
    WITH canceled AS (
      UPDATE batch_items SET status = 'canceled'
      WHERE batch_id = ${batchId} AND item_index >= ${from} AND status = 'pending'
      RETURNING 1
    ), counted AS (
      UPDATE batches SET canceled = canceled + (SELECT count(*) FROM canceled)
      WHERE id = ${batchId}
    )
    SELECT count(*)::int AS count FROM canceled`);
}

/**
 * Ends a batch still processing: its status from its counts, `completed_at`, and
 * `batch.completed` in the same transaction. A batch ended already is left as it is.
 */
export async function endBatch(
  trx: DatabaseTransactionConnection,
  batchId: string,
): Promise<BatchRow> {
  const batch = await trx.one(
    sql.type(batchRow)`SELECT ${columns} FROM batches WHERE id = ${batchId} FOR UPDATE`,
  );
  if (batch.status !== 'processing') return batch;
  const ended = await trx.one(sql.type(batchRow)`
    UPDATE batches SET status = ${endedBatchStatus(batch)}, completed_at = now()
    WHERE id = ${batchId}
    RETURNING ${columns}`);
  await trx.query(sql.unsafe`
    INSERT INTO events (id, application_id, mode, type, transaction_id, data)
    VALUES (gen_random_uuid(), ${ended.application_id}, ${ended.mode}, 'batch.completed', NULL,
      ${sql.jsonb(JSON.parse(JSON.stringify(batchAnswer(ended))) as never)})`);
  return ended;
}

/** Every item of a batch with its body, in order (an atomic batch's one step reads them all). */
export async function allBatchItems(
  db: CommonQueryMethods,
  batchId: string,
): Promise<readonly PendingBatchItem[]> {
  return db.any(sql.type(pendingItemRow)`
    SELECT item_index, transaction_id, body FROM batch_items
    WHERE batch_id = ${batchId} ORDER BY item_index`);
}

/** Locks a batch's row and answers it (an atomic batch's step, which runs once). */
export async function lockBatch(
  trx: DatabaseTransactionConnection,
  batchId: string,
): Promise<BatchRow> {
  return trx.one(
    sql.type(batchRow)`SELECT ${columns} FROM batches WHERE id = ${batchId} FOR UPDATE`,
  );
}
