import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { minorToMajorNumber } from '../domain/money';
import type { Mode } from '../domain/types';
import { pageTotal } from './pages';
import { RECON_EXCEPTION_KINDS, RECON_PROVIDERS, type ReconExceptionKind } from './recon-runs';

export const RECON_EXCEPTION_STATUSES = ['open', 'resolved'] as const;
export type ReconExceptionStatus = (typeof RECON_EXCEPTION_STATUSES)[number];

/** The payment as the engine has it; the amount in minor units of `currency`. */
export type ReconOurs = { amount: bigint; currency: string; status: string };
/** The record as the provider booked it; the amount in minor units of `currency`. */
export type ReconTheirs = { amount: bigint; currency: string; status: string; bookedAt: string };

/** One disagreement between the ledger and a provider (docs/operations.md). */
export type ReconException = {
  id: string;
  applicationId: string;
  mode: Mode;
  provider: (typeof RECON_PROVIDERS)[number];
  /** The run that found it last; null when the engine found it itself (a contradiction). */
  runId: string | null;
  kind: ReconExceptionKind;
  transactionId: string | null;
  providerReference: string | null;
  ours: ReconOurs | null;
  theirs: ReconTheirs | null;
  status: ReconExceptionStatus;
  resolution: 'accept' | 'adjust' | null;
  note: string | null;
  resolvedBy: string | null;
  createdAt: string;
  updatedAt: string;
  resolvedAt: string | null;
};

/** `ours` and `theirs` as jsonb keeps them: amounts as decimal strings of minor units. */
const oursJson = z.object({ amount: z.string(), currency: z.string(), status: z.string() });
const theirsJson = oursJson.extend({ booked_at: z.string() });

export const reconExceptionRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  provider: z.enum(RECON_PROVIDERS),
  run_id: z.string().nullable(),
  kind: z.enum(RECON_EXCEPTION_KINDS),
  transaction_id: z.string().nullable(),
  provider_reference: z.string().nullable(),
  ours: oursJson.nullable(),
  theirs: theirsJson.nullable(),
  status: z.enum(RECON_EXCEPTION_STATUSES),
  resolution: z.enum(['accept', 'adjust']).nullable(),
  note: z.string().nullable(),
  resolved_by: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  resolved_at: z.string().nullable(),
});
export type ReconExceptionRow = z.infer<typeof reconExceptionRow>;

export const reconExceptionColumns = sql.fragment`id, application_id, mode, provider, run_id, kind,
  transaction_id, provider_reference, ours, theirs, status, resolution, note, resolved_by,
  created_at, updated_at, resolved_at`;

export function toReconException(r: ReconExceptionRow): ReconException {
  return {
    id: r.id,
    applicationId: r.application_id,
    mode: r.mode,
    provider: r.provider,
    runId: r.run_id,
    kind: r.kind,
    transactionId: r.transaction_id,
    providerReference: r.provider_reference,
    ours: r.ours
      ? { amount: BigInt(r.ours.amount), currency: r.ours.currency, status: r.ours.status }
      : null,
    theirs: r.theirs
      ? {
          amount: BigInt(r.theirs.amount),
          currency: r.theirs.currency,
          status: r.theirs.status,
          bookedAt: r.theirs.booked_at,
        }
      : null,
    status: r.status,
    resolution: r.resolution,
    note: r.note,
    resolvedBy: r.resolved_by,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    resolvedAt: r.resolved_at,
  };
}

export async function findReconException(
  db: CommonQueryMethods,
  key: { applicationId: string; mode: Mode; id: string },
): Promise<ReconException | null> {
  const row = await db.maybeOne(sql.type(reconExceptionRow)`
    SELECT ${reconExceptionColumns} FROM recon_exceptions
    WHERE id = ${key.id} AND application_id = ${key.applicationId} AND mode = ${key.mode}`);
  return row ? toReconException(row) : null;
}

/** An exception by its id alone, for its own workflow; `lock` holds its row to the end. */
export async function getReconException(
  db: CommonQueryMethods,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ReconException | null> {
  const lock = options.lock ? sql.fragment`FOR NO KEY UPDATE` : sql.fragment``;
  const row = await db.maybeOne(sql.type(reconExceptionRow)`
    SELECT ${reconExceptionColumns} FROM recon_exceptions WHERE id = ${id} ${lock}`);
  return row ? toReconException(row) : null;
}

export type ReconExceptionFilter = {
  status?: ReconExceptionStatus | undefined;
  kind?: ReconExceptionKind | undefined;
  runId?: string | undefined;
  transactionId?: string | undefined;
};

/** The application's exceptions in a mode, newest first. */
export async function listReconExceptions(
  db: CommonQueryMethods,
  owner: { applicationId: string; mode: Mode },
  filter: ReconExceptionFilter,
  page: { limit: number; offset: number },
): Promise<{ rows: ReconException[]; total: number }> {
  const status = filter.status ?? null;
  const kind = filter.kind ?? null;
  const runId = filter.runId ?? null;
  const transactionId = filter.transactionId ?? null;
  const where = sql.fragment`application_id = ${owner.applicationId} AND mode = ${owner.mode}
    AND (${status}::text IS NULL OR status = ${status}::text)
    AND (${kind}::text IS NULL OR kind = ${kind}::text)
    AND (${runId}::uuid IS NULL OR run_id = ${runId}::uuid)
    AND (${transactionId}::uuid IS NULL OR transaction_id = ${transactionId}::uuid)`;
  const order = sql.fragment`ORDER BY created_at DESC, id`;
  const total = await pageTotal(db, sql.fragment`recon_exceptions`, where, page, order);
  const rows = await db.any(sql.type(reconExceptionRow)`
    SELECT ${reconExceptionColumns} FROM recon_exceptions WHERE ${where}
    ${order} LIMIT ${page.limit} OFFSET ${page.offset}`);
  return { rows: rows.map(toReconException), total };
}

/**
 * An Exception as the API shows it and its events carry it: amounts in major units of the
 * currency each side has it in.
 */
export function reconExceptionAnswer(e: ReconException) {
  return {
    id: e.id,
    run_id: e.runId,
    kind: e.kind,
    transaction_id: e.transactionId,
    provider_reference: e.providerReference,
    ours: e.ours ? { amount: minorToMajorNumber(e.ours.amount), status: e.ours.status } : null,
    theirs: e.theirs
      ? {
          amount: minorToMajorNumber(e.theirs.amount),
          status: e.theirs.status,
          booked_at: e.theirs.bookedAt,
        }
      : null,
    status: e.status,
    resolution: e.resolution,
    note: e.note,
    resolved_by: e.resolvedBy,
    created_at: e.createdAt,
    resolved_at: e.resolvedAt,
  };
}
