import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { minorToMajorNumber } from '../domain/money';
import type { Caller, Mode } from '../domain/types';
import type { DisputeRecord, DisputeStatus } from '../workflows/dispute-shared';
import { pageTotal } from './pages';

export const DISPUTE_STATUSES = ['needs_response', 'under_review', 'won', 'lost'] as const;

/**
 * A dispute the provider has not decided yet, over the `disputes` table's columns: the one
 * definition that deleting a user and switching the currency wait for, as the reconciliation does.
 */
export const disputeIsOpen = sql.fragment`status IN ('needs_response', 'under_review')`;

export const disputeRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  transaction_id: z.string(),
  wallet_id: z.string(),
  currency: z.enum(['USD', 'SLE']),
  amount: z.bigint(),
  reserved_amount: z.bigint(),
  uncovered_amount: z.bigint(),
  reason: z.string(),
  status: z.enum(DISPUTE_STATUSES),
  evidence: z.string().nullable(),
  evidence_due_by: z.string(),
  provider_reference: z.string().nullable(),
  workflow_id: z.string(),
  /** The merchant's metadata (src/api/schemas.ts `Metadata`). */
  metadata: z.record(z.string(), z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});
export type DisputeRow = z.infer<typeof disputeRow>;

const columns = sql.fragment`id, application_id, mode, transaction_id, wallet_id, currency, amount,
  reserved_amount, uncovered_amount, reason, status, evidence, evidence_due_by, provider_reference,
  workflow_id, metadata, created_at, updated_at`;

/**
 * A Dispute as the API shows it and its events carry it (docs/api.md, Refunds and
 * disputes): amounts in major units of the base currency, as on Transaction records.
 */
export function disputeAnswer(d: DisputeRow) {
  return {
    id: d.id,
    transaction_id: d.transaction_id,
    wallet_id: d.wallet_id,
    amount: minorToMajorNumber(d.amount),
    reserved_amount: minorToMajorNumber(d.reserved_amount),
    uncovered_amount: minorToMajorNumber(d.uncovered_amount),
    reason: d.reason,
    status: d.status,
    evidence_due_by: d.evidence_due_by,
    metadata: d.metadata,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

/** A dispute row as JSON, for a workflow's answer (amounts as decimal strings). */
export function disputeRecord(row: DisputeRow): DisputeRecord {
  return {
    ...row,
    amount: row.amount.toString(),
    reserved_amount: row.reserved_amount.toString(),
    uncovered_amount: row.uncovered_amount.toString(),
  };
}

export function disputeFromRecord(record: DisputeRecord): DisputeRow {
  return {
    ...record,
    amount: BigInt(record.amount),
    reserved_amount: BigInt(record.reserved_amount),
    uncovered_amount: BigInt(record.uncovered_amount),
    // Absent from records of answers recorded before disputes carried it.
    metadata: record.metadata ?? {},
  };
}

export type NewDispute = {
  id: string;
  applicationId: string;
  mode: Mode;
  transactionId: string;
  walletId: string;
  currency: string;
  amount: bigint;
  reserved: bigint;
  reason: string;
  evidenceDueBy: string;
  providerReference: string | null;
  workflowId: string;
  metadata?: Readonly<Record<string, string>> | undefined;
};

export async function insertDispute(
  trx: DatabaseTransactionConnection,
  d: NewDispute,
): Promise<DisputeRow> {
  return trx.one(sql.type(disputeRow)`
    INSERT INTO disputes (id, application_id, mode, transaction_id, wallet_id, currency, amount,
      reserved_amount, uncovered_amount, reason, status, evidence_due_by, provider_reference,
      workflow_id, metadata)
    VALUES (${d.id}, ${d.applicationId}, ${d.mode}, ${d.transactionId}, ${d.walletId},
      ${d.currency}, ${d.amount.toString()}, ${d.reserved.toString()},
      ${(d.amount - d.reserved).toString()}, ${d.reason}, 'needs_response', ${d.evidenceDueBy},
      ${d.providerReference}, ${d.workflowId}, ${sql.jsonb({ ...d.metadata })})
    RETURNING ${columns}`);
}

export async function findDispute(db: CommonQueryMethods, id: string): Promise<DisputeRow | null> {
  return db.maybeOne(sql.type(disputeRow)`SELECT ${columns} FROM disputes WHERE id = ${id}`);
}

/** The dispute, its row locked: each of its steps checks its status under this lock first. */
export async function lockDispute(
  trx: DatabaseTransactionConnection,
  id: string,
): Promise<DisputeRow | null> {
  return trx.maybeOne(
    sql.type(disputeRow)`SELECT ${columns} FROM disputes WHERE id = ${id} FOR NO KEY UPDATE`,
  );
}

/** The dispute an application's provider knows by its own id, in that mode. */
export async function findDisputeByProviderReference(
  db: CommonQueryMethods,
  owner: { applicationId: string; mode: Mode },
  providerReference: string,
): Promise<DisputeRow | null> {
  return db.maybeOne(sql.type(disputeRow)`
    SELECT ${columns} FROM disputes
    WHERE application_id = ${owner.applicationId} AND mode = ${owner.mode}
      AND provider_reference = ${providerReference}`);
}

/** Moves a dispute to `status` (with the evidence sent, when given); the row as it now is. */
export async function setDisputeStatus(
  db: CommonQueryMethods,
  id: string,
  status: DisputeStatus,
  evidence?: string,
): Promise<DisputeRow> {
  return db.one(sql.type(disputeRow)`
    UPDATE disputes SET status = ${status}, updated_at = now(),
      evidence = coalesce(${evidence ?? null}::text, evidence)
    WHERE id = ${id}
    RETURNING ${columns}`);
}

export async function listDisputes(
  db: CommonQueryMethods,
  caller: Caller,
  filter: { status?: string | undefined; transaction_id?: string | undefined },
  page: { limit: number; offset: number },
): Promise<{ rows: readonly DisputeRow[]; total: number }> {
  const status = filter.status ?? null;
  const transactionId = filter.transaction_id ?? null;
  const where = sql.fragment`application_id = ${caller.applicationId} AND mode = ${caller.mode}
    AND (${status}::text IS NULL OR status = ${status}::text)
    AND (${transactionId}::uuid IS NULL OR transaction_id = ${transactionId}::uuid)`;
  const total = await pageTotal(db, sql.fragment`disputes`, where, page);
  const rows = await db.any(sql.type(disputeRow)`
    SELECT ${columns} FROM disputes WHERE ${where}
    ORDER BY created_at DESC, id LIMIT ${page.limit} OFFSET ${page.offset}`);
  return { rows, total };
}

/**
 * Disputes still open that a live provider decides (they carry its reference), oldest first:
 * the scheduled reconciliation asks the provider about each.
 */
export async function listOpenProviderDisputes(
  db: CommonQueryMethods,
  limit: number,
): Promise<DisputeRow[]> {
  const rows = await db.any(sql.type(disputeRow)`
    SELECT ${columns} FROM disputes
    WHERE ${disputeIsOpen} AND provider_reference IS NOT NULL
    ORDER BY created_at LIMIT ${limit}`);
  return [...rows];
}
