import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { RECON_MATCH_STATEMENT_MS, RECON_PAYMENT_TYPES } from '../domain/recon';
import type { BookedRecord } from './recon-books';
import { recordArrays } from './recon-imports';
import {
  reconExceptionAnswer,
  reconExceptionColumns,
  reconExceptionRow,
  toReconException,
  type ReconException,
} from './recon-exceptions';
import { getReconRun, reconRunAnswer, type ReconCounts, type ReconRun } from './recon-runs';

/**
 * What the provider books of an engine payment (docs/operations.md, Reconcile with a provider):
 * a deposit as what the payer paid, fees included (in SLE for mobile money); a cashout, payout or
 * refund as what the provider pays out, in its currency. Over `transactions t`.
 */
const theirAmount = sql.fragment`coalesce(CASE
  WHEN t.transaction_type IN ('mobile_money_deposit', 'card_deposit')
    THEN (t.metadata->>'total_amount_paid')::bigint
  ELSE (t.metadata->>'provider_amount')::bigint END, t.amount)`;
const theirCurrency = sql.fragment`coalesce(CASE t.transaction_type
  WHEN 'mobile_money_deposit' THEN 'SLE'
  WHEN 'card_deposit' THEN t.currency
  ELSE t.metadata->>'provider_currency' END, t.currency)`;

/** The provider's final status that agrees with the engine's (`p.status` against `t.status`). */
const statusesAgree = sql.fragment`(
  (p.status = 'succeeded' AND t.status = 'completed')
  OR (p.status IN ('failed', 'reversed') AND t.status IN ('failed', 'expired', 'reversed')))`;

/** The disagreement's name: its kind and the provider reference, else the payment. */
const identity = (kind: string, reference: string, transactionId: string) =>
  sql.fragment`${sql.identifier([kind])} || ':' || coalesce(${sql.identifier([reference])},
    'transaction:' || ${sql.identifier([transactionId])}::text)`;

const stamp = (column: string) =>
  sql.fragment`to_char(${sql.identifier(['p', column])} AT TIME ZONE 'UTC',
    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Writes a chunk of the provider's records, the first at `firstSeq`; a chunk written again after a
 * crash writes nothing twice. One statement over arrays, however long the chunk.
 */
export async function insertRunRecords(
  db: CommonQueryMethods,
  runId: string,
  firstSeq: number,
  records: readonly BookedRecord[],
): Promise<void> {
  if (records.length === 0) return;
  await db.query(sql.unsafe`
    INSERT INTO recon_run_records (run_id, seq, provider_reference, booked_at, amount, currency,
      fee, direction, status)
    SELECT ${runId}, ${firstSeq} + r.n - 1, r.reference, r.booked_at, r.amount, r.currency, r.fee,
      r.direction, r.status
    FROM unnest(${recordArrays(records)}) WITH ORDINALITY AS r (reference, booked_at, amount, currency, fee, direction, status, n)
    ON CONFLICT (run_id, seq) DO NOTHING`);
}

const countsRow = z.object({
  matched: z.number(),
  missing_internal: z.number(),
  missing_external: z.number(),
  amount_mismatch: z.number(),
  status_mismatch: z.number(),
  duplicate: z.number(),
});

/**
 * Matches the run's records to the engine's payments in one statement (docs/operations.md,
 * Reconcile with a provider) and keeps each disagreement as an exception: one found again is
 * the same row, refreshed, unless it was resolved. Answers the counts.
 */
export async function matchRun(
  trx: DatabaseTransactionConnection,
  run: ReconRun,
  graceSeconds: number,
): Promise<ReconCounts> {
  await trx.query(sql.unsafe`
    SELECT set_config('statement_timeout', ${String(RECON_MATCH_STATEMENT_MS)}, true)`);
  const types = sql.array([...RECON_PAYMENT_TYPES[run.provider]], 'text');
  const scope = sql.fragment`t.application_id = ${run.applicationId} AND t.mode = ${run.mode}
    AND t.transaction_type = ANY(${types})`;
  const c = await trx.one(sql.type(countsRow)`
    WITH refs AS (
      SELECT provider_reference,
        count(*) FILTER (WHERE status = 'succeeded')::int AS paid,
        coalesce(min(seq) FILTER (WHERE status = 'succeeded'), min(seq)) AS first_seq,
        (array_agg(status ORDER BY seq DESC) FILTER (WHERE status <> 'succeeded'))[1] AS undone
      FROM recon_run_records WHERE run_id = ${run.id} GROUP BY provider_reference
    ), records AS (
      -- A failure or reversal listed after the payment is its final status, not a second payment.
      SELECT r.provider_reference, r.booked_at, r.amount, r.currency, refs.paid,
        coalesce(refs.undone, r.status) AS status
      FROM refs JOIN recon_run_records r ON r.run_id = ${run.id} AND r.seq = refs.first_seq
      -- Another application's or mode's payment on a provider account they share is not ours.
      WHERE NOT EXISTS (SELECT FROM transactions o
        WHERE o.provider_reference = r.provider_reference
          AND (o.application_id <> ${run.applicationId} OR o.mode <> ${run.mode}))
    ), classified AS (
      SELECT p.provider_reference, p.booked_at, p.amount, p.currency, p.status, t.id AS tid,
        t.status AS t_status, ${theirAmount} AS t_amount, ${theirCurrency} AS t_currency,
        CASE
          WHEN p.paid > 1 THEN 'duplicate'
          WHEN t.id IS NULL THEN 'missing_internal'
          WHEN t.status = 'pending'
            AND t.created_at > now() - make_interval(secs => ${graceSeconds}) THEN 'grace'
          WHEN NOT ${statusesAgree} THEN 'status_mismatch'
          WHEN ${theirAmount} <> p.amount OR ${theirCurrency} <> p.currency THEN 'amount_mismatch'
          ELSE 'matched'
        END AS kind
      FROM records p
      LEFT JOIN transactions t ON ${scope} AND t.provider_reference = p.provider_reference
    ), missing AS (
      SELECT t.id AS tid, t.provider_reference, t.status AS t_status, ${theirAmount} AS t_amount,
        ${theirCurrency} AS t_currency
      FROM transactions t
      WHERE ${scope} AND t.status = 'completed'
        AND t.created_at >= ${run.from}::timestamptz AND t.created_at < ${run.to}::timestamptz
        AND NOT EXISTS (SELECT FROM recon_run_records r
          WHERE r.run_id = ${run.id} AND r.provider_reference = t.provider_reference)
    ), found AS (
      SELECT p.kind, p.tid, p.provider_reference,
        CASE WHEN p.tid IS NULL THEN NULL ELSE jsonb_build_object('amount', p.t_amount::text,
          'currency', p.t_currency, 'status', p.t_status) END AS ours,
        jsonb_build_object('amount', p.amount::text, 'currency', p.currency, 'status', p.status,
          'booked_at', ${stamp('booked_at')}) AS theirs
      FROM classified p WHERE p.kind NOT IN ('matched', 'grace')
      UNION ALL
      SELECT 'missing_external', m.tid, m.provider_reference,
        jsonb_build_object('amount', m.t_amount::text, 'currency', m.t_currency,
          'status', m.t_status), NULL
      FROM missing m
    ), kept AS (
      INSERT INTO recon_exceptions (id, application_id, mode, provider, identity, run_id, kind,
        transaction_id, provider_reference, ours, theirs)
      SELECT gen_random_uuid(), ${run.applicationId}, ${run.mode}, ${run.provider},
        ${identity('kind', 'provider_reference', 'tid')}, ${run.id}, kind, tid, provider_reference,
        ours, theirs
      FROM found
      ON CONFLICT (application_id, mode, provider, identity) DO UPDATE
        SET run_id = excluded.run_id, transaction_id = excluded.transaction_id,
          ours = excluded.ours, theirs = excluded.theirs, updated_at = now()
        WHERE recon_exceptions.status = 'open'
    )
    SELECT
      (SELECT count(*) FROM classified WHERE kind = 'matched')::int AS matched,
      (SELECT count(*) FROM classified WHERE kind = 'missing_internal')::int AS missing_internal,
      (SELECT count(*) FROM missing)::int AS missing_external,
      (SELECT count(*) FROM classified WHERE kind = 'amount_mismatch')::int AS amount_mismatch,
      (SELECT count(*) FROM classified WHERE kind = 'status_mismatch')::int AS status_mismatch,
      (SELECT count(*) FROM classified WHERE kind = 'duplicate')::int AS duplicate`);
  return {
    matched: c.matched,
    missingInternal: c.missing_internal,
    missingExternal: c.missing_external,
    amountMismatch: c.amount_mismatch,
    statusMismatch: c.status_mismatch,
    duplicate: c.duplicate,
  };
}

/**
 * The exceptions the run opened (first found by it), after `afterId`, at most `limit`: each gets
 * its event and its stale timer.
 */
export async function listOpenedExceptions(
  db: CommonQueryMethods,
  run: ReconRun,
  afterId: string | null,
  limit: number,
): Promise<ReconException[]> {
  const rows = await db.any(sql.type(reconExceptionRow)`
    SELECT ${reconExceptionColumns} FROM recon_exceptions
    WHERE run_id = ${run.id} AND created_at >= ${run.createdAt}::timestamptz
      AND (${afterId}::uuid IS NULL OR id > ${afterId}::uuid)
    ORDER BY id LIMIT ${limit}`);
  return rows.map(toReconException);
}

/**
 * Writes `reconciliation.exception.opened` for each exception, once: a retried activity writes
 * none twice (the events carry the exception's id as their own, so a second insert conflicts).
 */
export async function insertExceptionOpenedEvents(
  db: CommonQueryMethods,
  exceptions: readonly ReconException[],
): Promise<void> {
  if (exceptions.length === 0) return;
  await db.query(sql.unsafe`
    INSERT INTO events (id, application_id, mode, type, transaction_id, data)
    SELECT e.id, e.application_id, e.mode, 'reconciliation.exception.opened', NULL, e.data::jsonb
    FROM unnest(
      ${sql.array(
        exceptions.map((e) => e.id),
        'uuid',
      )},
      ${sql.array(
        exceptions.map((e) => e.applicationId),
        'uuid',
      )},
      ${sql.array(
        exceptions.map((e) => e.mode),
        'text',
      )},
      ${sql.array(
        exceptions.map((e) => JSON.stringify(reconExceptionAnswer(e))),
        'text',
      )}
    ) AS e (id, application_id, mode, data)
    ON CONFLICT (id) DO NOTHING`);
}

/** Writes one event of an exception (its transaction is in the data: events allow one a type). */
export async function insertExceptionEvent(
  db: CommonQueryMethods,
  e: ReconException,
  type: 'reconciliation.exception.stale',
  id: string,
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO events (id, application_id, mode, type, transaction_id, data)
    VALUES (${id}, ${e.applicationId}, ${e.mode}, ${type}, NULL,
      ${sql.jsonb(JSON.parse(JSON.stringify(reconExceptionAnswer(e))) as never)})
    ON CONFLICT (id) DO NOTHING`);
}

/**
 * Ends a running run: its counts, `completed`, and `reconciliation.run.completed` in one
 * transaction; its staging records go. A run already ended is left as it is.
 */
export async function completeReconRun(
  trx: DatabaseTransactionConnection,
  runId: string,
  counts: ReconCounts,
): Promise<ReconRun> {
  const ended = await trx.query(sql.unsafe`
    UPDATE recon_runs SET status = 'completed', completed_at = now(), matched = ${counts.matched},
      missing_internal = ${counts.missingInternal}, missing_external = ${counts.missingExternal},
      amount_mismatch = ${counts.amountMismatch}, status_mismatch = ${counts.statusMismatch},
      duplicate = ${counts.duplicate}
    WHERE id = ${runId} AND status = 'running'`);
  const run = await getReconRun(trx, runId);
  if (ended.rowCount === 1) {
    await trx.query(sql.unsafe`
      INSERT INTO events (id, application_id, mode, type, transaction_id, data)
      VALUES (gen_random_uuid(), ${run.applicationId}, ${run.mode}, 'reconciliation.run.completed',
        NULL, ${sql.jsonb(JSON.parse(JSON.stringify(reconRunAnswer(run))) as never)})`);
  }
  await trx.query(sql.unsafe`DELETE FROM recon_run_records WHERE run_id = ${runId}`);
  return run;
}

/** Ends a running run as `failed`, with why; its staging records go. */
export async function failReconRun(
  trx: DatabaseTransactionConnection,
  runId: string,
  failure: string,
): Promise<void> {
  await trx.query(sql.unsafe`
    UPDATE recon_runs SET status = 'failed', failure = ${failure}, completed_at = now()
    WHERE id = ${runId} AND status = 'running'`);
  await trx.query(sql.unsafe`DELETE FROM recon_run_records WHERE run_id = ${runId}`);
}

/**
 * Keeps a provider's contradiction of an ended payment as a `status_mismatch` exception (no run),
 * in the caller's transaction; answers it when this call opened it, with its event written.
 */
export async function openContradictionException(
  trx: DatabaseTransactionConnection,
  c: {
    transactionId: string;
    provider: 'mobile_money' | 'card';
    providerStatus: string;
    providerAmount: bigint | null;
  },
): Promise<ReconException | null> {
  const row = await trx.maybeOne(sql.type(reconExceptionRow.extend({ opened: z.boolean() }))`
    WITH p AS (SELECT now() AS booked_at), found AS (
      SELECT t.application_id, t.mode, t.id AS tid, t.provider_reference,
        jsonb_build_object('amount', ${theirAmount}::text, 'currency', ${theirCurrency},
          'status', t.status) AS ours,
        jsonb_build_object('amount', coalesce(${c.providerAmount?.toString() ?? null}::bigint,
          ${theirAmount})::text, 'currency', ${theirCurrency}, 'status', ${c.providerStatus}::text,
          'booked_at', ${stamp('booked_at')}) AS theirs,
        'status_mismatch' AS kind
      FROM transactions t, p WHERE t.id = ${c.transactionId}
    )
    INSERT INTO recon_exceptions AS x (id, application_id, mode, provider, identity, run_id, kind,
      transaction_id, provider_reference, ours, theirs)
    SELECT gen_random_uuid(), application_id, mode, ${c.provider},
      ${identity('kind', 'provider_reference', 'tid')}, NULL, kind, tid, provider_reference, ours,
      theirs
    FROM found
    ON CONFLICT (application_id, mode, provider, identity) DO UPDATE
      SET ours = excluded.ours, theirs = excluded.theirs, updated_at = now()
      WHERE x.status = 'open'
    RETURNING ${reconExceptionColumns}, (xmax = 0) AS opened`);
  if (!row?.opened) return null;
  const exception = toReconException(row);
  await insertExceptionOpenedEvents(trx, [exception]);
  return exception;
}
