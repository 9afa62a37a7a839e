import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Mode } from '../domain/types';
import { pageTotal } from './pages';

export const RECON_PROVIDERS = ['mobile_money', 'card'] as const;
export type ReconProvider = (typeof RECON_PROVIDERS)[number];

export const RECON_RUN_STATUSES = ['running', 'completed', 'failed'] as const;
export type ReconRunStatus = (typeof RECON_RUN_STATUSES)[number];

export const RECON_EXCEPTION_KINDS = [
  'missing_internal',
  'missing_external',
  'amount_mismatch',
  'status_mismatch',
  'duplicate',
] as const;
export type ReconExceptionKind = (typeof RECON_EXCEPTION_KINDS)[number];

/** How many of a run's records and payments fell in each class. */
export type ReconCounts = {
  matched: number;
  missingInternal: number;
  missingExternal: number;
  amountMismatch: number;
  statusMismatch: number;
  duplicate: number;
};

/** One run over a provider's records of the window `[from, to)` (docs/operations.md). */
export type ReconRun = {
  id: string;
  applicationId: string;
  mode: Mode;
  provider: ReconProvider;
  from: string;
  to: string;
  importId: string | null;
  origin: 'api' | 'schedule';
  status: ReconRunStatus;
  counts: ReconCounts;
  /** Why a failed run could never succeed; null otherwise. */
  failure: string | null;
  createdAt: string;
  completedAt: string | null;
};

const runRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  provider: z.enum(RECON_PROVIDERS),
  window_from: z.string(),
  window_to: z.string(),
  import_id: z.string().nullable(),
  origin: z.enum(['api', 'schedule']),
  status: z.enum(RECON_RUN_STATUSES),
  matched: z.number(),
  missing_internal: z.number(),
  missing_external: z.number(),
  amount_mismatch: z.number(),
  status_mismatch: z.number(),
  duplicate: z.number(),
  failure: z.string().nullable(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
});
type RunRow = z.infer<typeof runRow>;

const columns = sql.fragment`id, application_id, mode, provider, window_from, window_to, import_id,
  origin, status, matched, missing_internal, missing_external, amount_mismatch, status_mismatch,
  duplicate, failure, created_at, completed_at`;

function toRun(r: RunRow): ReconRun {
  return {
    id: r.id,
    applicationId: r.application_id,
    mode: r.mode,
    provider: r.provider,
    from: r.window_from,
    to: r.window_to,
    importId: r.import_id,
    origin: r.origin,
    status: r.status,
    counts: {
      matched: r.matched,
      missingInternal: r.missing_internal,
      missingExternal: r.missing_external,
      amountMismatch: r.amount_mismatch,
      statusMismatch: r.status_mismatch,
      duplicate: r.duplicate,
    },
    failure: r.failure,
    createdAt: r.created_at,
    completedAt: r.completed_at,
  };
}

export type NewReconRun = {
  id: string;
  applicationId: string;
  mode: Mode;
  provider: ReconProvider;
  from: string;
  to: string;
  importId: string | null;
  origin: 'api' | 'schedule';
};

/**
 * Records a run as `running`. The schedule's run of a day exists once (a unique index): a second
 * insert of it answers null, as does an id already taken.
 */
export async function insertReconRun(
  db: CommonQueryMethods,
  run: NewReconRun,
): Promise<ReconRun | null> {
  const row = await db.maybeOne(sql.type(runRow)`
    INSERT INTO recon_runs (id, application_id, mode, provider, window_from, window_to, import_id,
      origin)
    VALUES (${run.id}, ${run.applicationId}, ${run.mode}, ${run.provider}, ${run.from}, ${run.to},
      ${run.importId}, ${run.origin})
    ON CONFLICT DO NOTHING
    RETURNING ${columns}`);
  return row ? toRun(row) : null;
}

export async function findReconRun(
  db: CommonQueryMethods,
  key: { applicationId: string; mode: Mode; id: string },
): Promise<ReconRun | null> {
  const row = await db.maybeOne(sql.type(runRow)`
    SELECT ${columns} FROM recon_runs
    WHERE id = ${key.id} AND application_id = ${key.applicationId} AND mode = ${key.mode}`);
  return row ? toRun(row) : null;
}

/** A run by its id alone, for the run's own workflow. */
export async function getReconRun(
  db: CommonQueryMethods,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ReconRun> {
  const lock = options.lock ? sql.fragment`FOR UPDATE` : sql.fragment``;
  return toRun(
    await db.one(sql.type(runRow)`SELECT ${columns} FROM recon_runs WHERE id = ${id} ${lock}`),
  );
}

/** The application's runs in a mode, newest first. */
export async function listReconRuns(
  db: CommonQueryMethods,
  owner: { applicationId: string; mode: Mode },
  filter: { status?: ReconRunStatus | undefined; provider?: ReconProvider | undefined },
  page: { limit: number; offset: number },
): Promise<{ rows: ReconRun[]; total: number }> {
  const status = filter.status ?? null;
  const provider = filter.provider ?? null;
  const where = sql.fragment`application_id = ${owner.applicationId} AND mode = ${owner.mode}
    AND (${status}::text IS NULL OR status = ${status}::text)
    AND (${provider}::text IS NULL OR provider = ${provider}::text)`;
  const order = sql.fragment`ORDER BY created_at DESC, id`;
  const total = await pageTotal(db, sql.fragment`recon_runs`, where, page, order);
  const rows = await db.any(sql.type(runRow)`
    SELECT ${columns} FROM recon_runs WHERE ${where}
    ${order} LIMIT ${page.limit} OFFSET ${page.offset}`);
  return { rows: rows.map(toRun), total };
}

/** A Run as the API shows it and `reconciliation.run.completed` carries it. */
export function reconRunAnswer(run: ReconRun) {
  return {
    id: run.id,
    provider: run.provider,
    from: run.from,
    to: run.to,
    import_id: run.importId,
    status: run.status,
    counts: {
      matched: run.counts.matched,
      missing_internal: run.counts.missingInternal,
      missing_external: run.counts.missingExternal,
      amount_mismatch: run.counts.amountMismatch,
      status_mismatch: run.counts.statusMismatch,
      duplicate: run.counts.duplicate,
    },
    created_at: run.createdAt,
    completed_at: run.completedAt,
  };
}

/**
 * The schedule's runs of the window `[from, to)`: one per application and each (mode, provider)
 * of `books`, written once whichever worker asks (a unique index); answers those still running.
 */
export async function insertScheduledReconRuns(
  db: CommonQueryMethods,
  window: { from: string; to: string },
  books: ReadonlyArray<{ mode: Mode; provider: ReconProvider }>,
): Promise<string[]> {
  if (books.length === 0) return [];
  const modes = sql.array(
    books.map((b) => b.mode),
    'text',
  );
  const providers = sql.array(
    books.map((b) => b.provider),
    'text',
  );
  await db.query(sql.unsafe`
    INSERT INTO recon_runs (id, application_id, mode, provider, window_from, window_to, origin)
    SELECT gen_random_uuid(), a.id, b.mode, b.provider, ${window.from}::timestamptz,
      ${window.to}::timestamptz, 'schedule'
    FROM applications a CROSS JOIN unnest(${modes}, ${providers}) AS b (mode, provider)
    ON CONFLICT DO NOTHING`);
  const ids = await db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM recon_runs
    WHERE origin = 'schedule' AND window_from = ${window.from}::timestamptz AND status = 'running'
    ORDER BY id`);
  return [...ids];
}
