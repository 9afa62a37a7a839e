import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type Koa from 'koa';
import { z } from 'zod';
import {
  getReconException,
  listReconExceptions,
  type ReconException,
} from '../../db/recon-exceptions';
import { findReconImport, saveReconImport } from '../../db/recon-imports';
import {
  acceptReconExceptions,
  reconRunOwner,
  type ReconRefusal,
  type ReconScope,
} from '../../db/recon-resolutions';
import {
  findReconRun,
  insertReconRun,
  listReconRuns,
  RECON_EXCEPTION_KINDS,
  RECON_PROVIDERS,
} from '../../db/recon-runs';
import { DISCREPANCY_KINDS, simulateProviderDiscrepancy } from '../../db/sandbox-discrepancies';
import { findTransaction } from '../../db/transactions';
import type { Caller } from '../../domain/types';
import { parseSettlementFile, type SettlementFile } from '../../providers/settlement-file';
import {
  signalReconExceptionResolved,
  startReconciliationRun,
  type ReconExceptionTimer,
} from '../../temporal/recon-runs';
import { taskQueueOf } from '../../temporal/task-queues';
import { workflowIds } from '../../workflows/ids';
import { reconAdjustWorkflow } from '../../workflows/recon-adjust';
import { assertOwned } from '../access';
import { audited, auditEntry, type AuditNote } from '../audit';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse, notFound, unlessDeclined } from '../errors';
import { parseInstant } from '../../domain/instant';
import { idFromKey } from '../pipeline';
import { defineRoute, type Route } from '../route';
import {
  BodyId,
  ErrorBody,
  PageQuery,
  pageEnvelope,
  pageWindow,
  toPage,
  uuidPattern,
} from '../schemas';
import {
  ReconExceptionBody,
  ReconImportBody,
  ReconRunBody,
  RefusedReconImportBody,
  reconExceptionBody,
  reconImportBody,
  reconRunBody,
} from '../serializers';
import { withDeadline } from '../workflow-starts';

/** A settlement file is at most 50 MiB (docs/api.md, Reconciliation). */
export const MAX_SETTLEMENT_FILE_BYTES = 50 * 1024 * 1024;

/** What a multipart form around the file may add (boundaries, part headers, `provider`). */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/** The longest window a run reads. */
export const MAX_RUN_WINDOW_DAYS = 31;

export const RECON_IMPORTS_PATH = '/api/v1/reconciliation/imports';

/** The import route streams its multipart body itself (src/api/middleware/body.ts skips it). */
export const streamsReconImport = (path: string): boolean =>
  /^\/api\/v1\/reconciliation\/imports\/?$/.test(path);

const Provider = z.enum(RECON_PROVIDERS, { error: 'must be mobile_money or card' });

const Instant = z
  .string({ error: 'must be an RFC 3339 time such as 2026-01-31T00:00:00Z' })
  .transform((text, ctx) => {
    const at = parseInstant(text);
    if (at) return at;
    ctx.addIssue({
      code: 'custom',
      message: 'must be an RFC 3339 time such as 2026-01-31T00:00:00Z',
    });
    return z.NEVER;
  })
  .meta({ type: 'string', format: 'date-time' });

const RunRequest = z
  .object({
    provider: Provider,
    from: Instant.meta({ description: 'The window’s start (inclusive)' }),
    to: Instant.meta({ description: 'The window’s end (exclusive), not in the future' }),
    import_id: BodyId.optional().meta({
      description: 'A settlement file of the same provider, read instead of the provider’s list',
    }),
  })
  .superRefine((body, ctx) => {
    if (body.from.getTime() >= body.to.getTime()) {
      ctx.addIssue({ code: 'custom', path: ['from'], message: 'must be before to' });
    } else if (body.to.getTime() - body.from.getTime() > MAX_RUN_WINDOW_DAYS * 86_400_000) {
      ctx.addIssue({
        code: 'custom',
        path: ['to'],
        message: `must be at most ${MAX_RUN_WINDOW_DAYS} days after from`,
      });
    }
    if (body.to.getTime() > Date.now()) {
      ctx.addIssue({ code: 'custom', path: ['to'], message: 'must not be in the future' });
    }
  })
  .meta({ id: 'ReconciliationRunRequest' });

const RunsQuery = PageQuery.extend({
  status: z
    .enum(['running', 'completed', 'failed'], { error: 'must be running, completed or failed' })
    .optional(),
  provider: Provider.optional(),
});

const Uuid = (what: string) =>
  z
    .string({ error: `must be ${what}` })
    .regex(uuidPattern, `must be ${what} (a UUID)`)
    .transform((v) => v.toLowerCase());

const ExceptionsQuery = PageQuery.extend({
  status: z.enum(['open', 'resolved'], { error: 'must be open or resolved' }).optional(),
  kind: z
    .enum(RECON_EXCEPTION_KINDS, { error: `must be one of ${RECON_EXCEPTION_KINDS.join(', ')}` })
    .optional(),
  run_id: Uuid('a run id').optional(),
  transaction_id: Uuid('a transaction id').optional(),
});

/** The note an operator writes with a resolution. */
const Note = z
  .string({ error: 'must be a string' })
  .trim()
  .min(1, 'must not be empty')
  .max(1000, 'must be at most 1000 characters')
  .meta({ description: 'Why: what explains the difference (1 to 1,000 characters)' });

const ResolveRequest = z
  .object({
    action: z.enum(['accept', 'adjust'], { error: 'must be accept or adjust' }).meta({
      description:
        'accept: the difference is known and explained, nothing moves; adjust (admin ' +
        'credentials only): one ledger transaction between the wallet and the provider’s ' +
        'clearing account for the difference',
    }),
    note: Note,
  })
  .meta({ id: 'ReconciliationResolution' });

/** The most exceptions one bulk resolution takes. */
export const MAX_BULK_RESOLVE = 1000;

const BulkResolveRequest = z
  .object({
    ids: z
      .array(Uuid('an exception id'), { error: 'must be an array of exception ids' })
      .min(1, 'must name at least one exception')
      .max(MAX_BULK_RESOLVE, `must name at most ${MAX_BULK_RESOLVE} exceptions`),
    action: z.literal('accept', { error: 'must be accept' }),
    note: Note,
  })
  .meta({ id: 'ReconciliationBulkResolution' });

const BulkResolvedBody = z
  .object({ data: z.array(ReconExceptionBody) })
  .meta({ id: 'ReconciliationBulkResolved' });

const DiscrepancyRequest = z.object({
  transaction_id: BodyId.meta({ description: 'A payment the sandbox keeps a record of' }),
  kind: z.enum(DISCREPANCY_KINDS, { error: 'must be missing, amount or status' }).meta({
    description:
      'missing: the sandbox forgets the payment; amount: it books one minor unit more; status: ' +
      'a success becomes a failure and a failure a success',
  }),
});

const DiscrepancyBody = z
  .object({
    transaction_id: z.string(),
    provider_reference: z.string(),
    kind: z.enum(DISCREPANCY_KINDS),
  })
  .meta({ id: 'ProviderDiscrepancy' });

const ALREADY_RESOLVED = 'The exception is already resolved';

type Upload = {
  provider: string | undefined;
  parsed: Promise<SettlementFile> | null;
  /** `file` came as a plain field (no filename): text, not a file. */
  fileAsText: boolean;
};

const tooLarge = () =>
  new AppError('payload_too_large', 'The settlement file is larger than 50 MiB');

/**
 * Reads the multipart form as it streams in: the `file` part is checked row by row as it
 * arrives (413 as soon as it passes 50 MiB), never kept whole; `provider` is a field.
 */
function readSettlementUpload(ctx: Koa.Context): Promise<Upload> {
  if (!ctx.is('multipart/form-data')) {
    return Promise.reject(
      new AppError(
        'invalid_request',
        'Send the settlement file as multipart/form-data with the fields file and provider',
      ),
    );
  }
  if (
    Number(ctx.get('content-length') || '0') >
    MAX_SETTLEMENT_FILE_BYTES + MULTIPART_OVERHEAD_BYTES
  ) {
    return Promise.reject(tooLarge());
  }
  return new Promise<Upload>((resolve, reject) => {
    const request = ctx.req;
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: request.headers,
        limits: {
          fileSize: MAX_SETTLEMENT_FILE_BYTES,
          files: 1,
          fields: 4,
          fieldSize: 1024,
          parts: 6,
        },
      });
    } catch (error) {
      reject(new AppError('invalid_request', 'The multipart body is malformed', { cause: error }));
      return;
    }
    const upload: Upload = { provider: undefined, parsed: null, fileAsText: false };
    let settled = false;
    /** Stops reading for good: the rest of the body is discarded, never buffered. */
    const fail = (error: AppError) => {
      if (settled) return;
      settled = true;
      request.unpipe(parser);
      request.resume();
      ctx.set('Connection', 'close');
      reject(error);
    };
    parser.on('file', (name, stream: Readable) => {
      if (name !== 'file' || upload.parsed) {
        stream.resume();
        return;
      }
      stream.on('limit', () => fail(tooLarge()));
      upload.parsed = parseSettlementFile(stream);
      // Awaited once the form is read; a failure before then is not unhandled.
      upload.parsed.catch(() => undefined);
    });
    parser.on('field', (name, value) => {
      if (name === 'provider') upload.provider = value;
      if (name === 'file') upload.fileAsText = true;
    });
    for (const limit of ['partsLimit', 'fieldsLimit', 'filesLimit'] as const) {
      parser.on(limit, () =>
        fail(
          new AppError(
            'invalid_request',
            'The form has too many parts: send the fields file and provider only',
          ),
        ),
      );
    }
    parser.on('error', (error) =>
      fail(new AppError('invalid_request', 'The multipart body is malformed', { cause: error })),
    );
    parser.on('close', () => {
      if (settled) return;
      settled = true;
      resolve(upload);
    });
    request.pipe(parser);
  });
}

/** Who resolves: an admin by id, else the application's credential by id. */
function resolverOf(ctx: Koa.Context, caller: Caller | null): string {
  const admin = (ctx.state as { admin?: { id: string } }).admin;
  if (admin) return `admin:${admin.id}`;
  return `credential:${caller!.credentialId}`;
}

/** An application's caller sees its own application and mode; an admin sees every one. */
function scopeOf(ctx: Koa.Context, caller: Caller | null): ReconScope {
  return (ctx.state as { admin?: unknown }).admin
    ? { admin: true }
    : { applicationId: caller!.applicationId, mode: caller!.mode };
}

/** The audit entry of an exception accepted (in its own application, an admin's too). */
const accepted =
  (note: string) =>
  (e: Pick<ReconException, 'id' | 'applicationId' | 'mode'>): AuditNote => ({
    action: 'reconciliation_exception.accepted',
    target: { type: 'reconciliation_exception', id: e.id },
    details: { note },
    applicationId: e.applicationId,
    mode: e.mode,
  });

/** A bulk or single resolution's refusal, as HTTP. */
function refusal(r: ReconRefusal, bulk: boolean): AppError {
  const which = bulk ? `: ${r.id}` : '';
  switch (r.refused) {
    case 'not_found':
      return new AppError(
        'not_found',
        bulk ? `Exception not found: ${r.id}` : 'Exception not found',
      );
    case 'forbidden':
      return new AppError(
        'forbidden',
        `You do not have permission to access this exception${which}`,
      );
    case 'resolved':
      return new AppError('invalid_request', `${ALREADY_RESOLVED}${which}`);
    case 'insufficient_funds':
      return new AppError('insufficient_funds');
    case 'not_adjustable':
      return new AppError('invalid_request', r.detail);
  }
}

/**
 * Signals each resolved exception's stale timer, a few at a time (the resolution is written):
 * one still delayed is dispatched by it, and ends.
 */
async function signalResolved(
  deps: ApiDeps,
  exceptions: readonly ReconExceptionTimer[],
): Promise<void> {
  const queue = taskQueueOf(deps.config, 'maintenance');
  for (let i = 0; i < exceptions.length; i += 20) {
    await Promise.all(
      exceptions.slice(i, i + 20).map((e) => signalReconExceptionResolved(deps.temporal, queue, e)),
    );
  }
}

export function reconciliationRoutes(deps: ApiDeps): Route[] {
  const { pool, temporal, config } = deps;
  const maintenanceQueue = taskQueueOf(config, 'maintenance');

  /** 404 for an id that names nothing, 403 for another application's (admins see every one). */
  const ownedException = async (ctx: Koa.Context, caller: Caller | null, id: string) => {
    const found = await getReconException(pool, id.toLowerCase());
    if (!found) throw notFound('Exception');
    const scope = scopeOf(ctx, caller);
    if ('admin' in scope) return found;
    assertOwned(caller!, { application_id: found.applicationId, mode: found.mode }, 'Exception');
    return found;
  };

  const auth = 'reconciliation' as const;
  const tag = 'Reconciliation';
  return [
    defineRoute({
      method: 'post',
      path: RECON_IMPORTS_PATH,
      summary:
        'Upload a provider’s settlement file (multipart/form-data: `file`, a CSV of at most ' +
        '50 MiB and 200,000 rows, and `provider`) for a run to read instead of the provider’s ' +
        'list; a file with any bad row is refused whole, the same file again answers its first ' +
        'import',
      tag,
      auth,
      responses: {
        200: {
          description: 'The same file was imported before: its import',
          schema: ReconImportBody,
        },
        201: { description: 'The import', schema: ReconImportBody },
        400: errorResponse('Not multipart/form-data, or a malformed form'),
        401: errorResponse('Missing or invalid credentials'),
        413: errorResponse('The file is larger than 50 MiB'),
        422: {
          description:
            'provider or file missing or invalid, or the file has bad rows (then `errors` names ' +
            'them, at most 100, and nothing is imported)',
          schema: z.union([RefusedReconImportBody, ErrorBody]),
        },
        429: errorResponse('Rate limit exceeded (`reconciliation`)'),
      },
      handler: async ({ ctx, caller }) => {
        const upload = await readSettlementUpload(ctx);
        const provider = Provider.safeParse(upload.provider);
        if (!upload.parsed && upload.fileAsText) {
          throw new AppError(
            'invalid_request',
            'file must be sent as a file part of the form (with a filename), not as a text field',
          );
        }
        if (!upload.parsed) throw new AppError('validation_failed', 'file: required');
        const file = await upload.parsed;
        if (upload.provider === undefined)
          throw new AppError('validation_failed', 'provider: required');
        if (!provider.success) {
          throw new AppError('validation_failed', 'provider: must be mobile_money or card');
        }
        if (file.rowsBad > 0 || file.errors.length > 0) {
          return {
            status: 422,
            body: {
              detail: `The file has ${file.rowsBad || 'some'} bad rows; nothing was imported`,
              id: null,
              provider: provider.data,
              rows: file.rows,
              rows_bad: file.rowsBad,
              errors: file.errors,
              sha256: file.sha256,
              created_at: null,
            },
          };
        }
        const saved = await audited(
          pool,
          ctx,
          caller,
          (trx) =>
            saveReconImport(trx, {
              id: randomUUID(),
              applicationId: caller.applicationId,
              mode: caller.mode,
              provider: provider.data,
              sha256: file.sha256,
              records: file.records,
            }),
          (done) =>
            done.created
              ? {
                  action: 'reconciliation_import.created',
                  target: { type: 'reconciliation_import', id: done.import.id },
                  details: { provider: done.import.provider, rows: done.import.rows },
                }
              : null,
        );
        return { status: saved.created ? 201 : 200, body: reconImportBody(saved.import) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/reconciliation/runs',
      summary:
        'Reconcile the ledger with a provider’s books over the window [from, to) (at most 31 ' +
        'days, not in the future): a workflow, `recon-run-<id>`, reads the provider’s records ' +
        '(or the import’s), matches them to the payments and opens an exception for each ' +
        'disagreement',
      tag,
      auth,
      idempotent: true,
      body: RunRequest,
      responses: {
        202: { description: 'The run, started', schema: ReconRunBody },
        401: errorResponse('Missing or invalid credentials'),
        404: errorResponse('Import not found (in this application and mode)'),
        422: errorResponse(
          'Validation failure: from not before to, a window over 31 days, to in the future, or ' +
            'an import of another provider; or an Idempotency-Key reused with another request',
        ),
        429: errorResponse('Rate limit exceeded (`reconciliation`)'),
      },
      handler: async ({ ctx, caller, body, idempotency }) => {
        const runId = idFromKey(caller, idempotency, 'recon_run');
        const owner = { applicationId: caller.applicationId, mode: caller.mode };
        // A retry whose first attempt recorded the run starts (or finds) its workflow.
        let run =
          idempotency && !idempotency.fresh
            ? await findReconRun(pool, { ...owner, id: runId })
            : null;
        if (!run) {
          const importId = body.import_id?.toLowerCase() ?? null;
          if (importId !== null) {
            const found = uuidPattern.test(importId)
              ? await findReconImport(pool, { ...owner, id: importId })
              : null;
            if (!found) throw notFound('Import');
            if (found.provider !== body.provider) {
              throw new AppError(
                'validation_failed',
                `import_id: the import is a ${found.provider} settlement file, not ${body.provider}`,
              );
            }
          }
          run = await audited(
            pool,
            ctx,
            caller,
            (trx) =>
              insertReconRun(trx, {
                id: runId,
                ...owner,
                provider: body.provider,
                from: body.from.toISOString(),
                to: body.to.toISOString(),
                importId,
                origin: 'api',
              }),
            (inserted) =>
              inserted && {
                action: 'reconciliation_run.started',
                target: { type: 'reconciliation_run', id: inserted.id },
                details: {
                  provider: body.provider,
                  from: body.from.toISOString(),
                  to: body.to.toISOString(),
                  import_id: importId,
                },
              },
          );
          run ??= await findReconRun(pool, { ...owner, id: runId });
          if (!run) throw new Error(`reconciliation run ${runId} was neither inserted nor found`);
        }
        await startReconciliationRun(temporal, maintenanceQueue, run.id);
        return { status: 202, body: reconRunBody(run) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/reconciliation/runs',
      summary: 'List reconciliation runs of the application and mode, newest first (page envelope)',
      tag,
      auth,
      query: RunsQuery,
      responses: {
        200: { description: 'A page of runs', schema: pageEnvelope(ReconRunBody) },
        401: errorResponse('Missing or invalid credentials'),
        422: errorResponse('Invalid paging or filter'),
        429: errorResponse('Rate limit exceeded (`reconciliation`)'),
      },
      handler: async ({ caller, query }) => {
        const { rows, total } = await listReconRuns(
          pool,
          { applicationId: caller.applicationId, mode: caller.mode },
          { status: query.status, provider: query.provider },
          pageWindow(query),
        );
        return { body: toPage(rows.map(reconRunBody), total, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/reconciliation/runs/:run_id',
      summary: 'Get a reconciliation run: its status and counts',
      tag,
      auth,
      params: z.object({ run_id: z.string() }),
      responses: {
        200: { description: 'The run', schema: ReconRunBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The run belongs to another application or mode'),
        404: errorResponse('Run not found'),
        429: errorResponse('Rate limit exceeded (`reconciliation`)'),
      },
      handler: async ({ caller, params }) => {
        const id = params.run_id.toLowerCase();
        const run = await findReconRun(pool, {
          applicationId: caller.applicationId,
          mode: caller.mode,
          id,
        });
        if (!run) assertOwned(caller, await reconRunOwner(pool, id), 'Run');
        return { body: reconRunBody(run!) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/reconciliation/exceptions',
      summary:
        'List reconciliation exceptions of the application and mode, newest first (page ' +
        'envelope); filter by status, kind, run_id and transaction_id',
      tag,
      auth,
      query: ExceptionsQuery,
      responses: {
        200: { description: 'A page of exceptions', schema: pageEnvelope(ReconExceptionBody) },
        401: errorResponse('Missing or invalid credentials'),
        422: errorResponse('Invalid paging or filter'),
        429: errorResponse('Rate limit exceeded (`reconciliation`)'),
      },
      handler: async ({ caller, query }) => {
        const { rows, total } = await listReconExceptions(
          pool,
          { applicationId: caller.applicationId, mode: caller.mode },
          {
            status: query.status,
            kind: query.kind,
            runId: query.run_id,
            transactionId: query.transaction_id,
          },
          pageWindow(query),
        );
        return { body: toPage(rows.map(reconExceptionBody), total, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/reconciliation/exceptions/:exception_id',
      summary: 'Get a reconciliation exception',
      tag,
      auth,
      params: z.object({ exception_id: z.string() }),
      responses: {
        200: { description: 'The exception', schema: ReconExceptionBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The exception belongs to another application or mode'),
        404: errorResponse('Exception not found'),
        429: errorResponse('Rate limit exceeded (`reconciliation`)'),
      },
      handler: async ({ ctx, caller, params }) => ({
        body: reconExceptionBody(await ownedException(ctx, caller, params.exception_id)),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/reconciliation/exceptions/resolve',
      summary:
        'Accept many exceptions at once (1 to 1,000 ids), in one database transaction: all or ' +
        'none. The first id that is unknown (404), another application’s (403) or already ' +
        'resolved (400) refuses the request, and its detail names that id',
      tag,
      auth,
      adminToo: true,
      body: BulkResolveRequest,
      responses: {
        200: {
          description: 'The exceptions, resolved, in the order of ids',
          schema: BulkResolvedBody,
        },
        400: errorResponse(
          'An exception is already resolved (the detail names it); nothing written',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('An exception belongs to another application or mode'),
        404: errorResponse('An exception does not exist (the detail names it)'),
        422: errorResponse('Validation failure: ids, action or note'),
        429: errorResponse('Rate limit exceeded (`reconciliation`)'),
      },
      handler: async ({ ctx, caller, body }) => {
        const outcome = await audited(
          pool,
          ctx,
          caller,
          (trx) =>
            acceptReconExceptions(trx, scopeOf(ctx, caller), body.ids, {
              note: body.note,
              resolvedBy: resolverOf(ctx, caller),
            }),
          (done) => ('refused' in done ? null : done.resolved.map(accepted(body.note))),
        );
        if ('refused' in outcome) throw refusal(outcome, true);
        await signalResolved(deps, outcome.resolved);
        const byId = new Map(outcome.resolved.map((e) => [e.id, e]));
        const order = [...new Set(body.ids)];
        return { body: { data: order.map((id) => reconExceptionBody(byId.get(id)!)) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/reconciliation/exceptions/:exception_id/resolve',
      summary:
        'Resolve an exception with a note. accept (application or admin credentials): the ' +
        'difference is explained, nothing moves. adjust (admin credentials only): a workflow, ' +
        '`recon-adjust-<id>`, writes one balanced ledger transaction between the payment’s ' +
        'wallet and the provider’s clearing account for the difference (a wallet never goes ' +
        'negative), a reconciliation adjustment record, and the resolution',
      tag,
      auth,
      adminToo: true,
      idempotent: true,
      params: z.object({ exception_id: z.string() }),
      body: ResolveRequest,
      responses: {
        200: { description: 'The exception, resolved', schema: ReconExceptionBody },
        400: errorResponse(
          'The exception is already resolved; adjust: insufficient funds, no payment of a ' +
            'wallet to adjust, nothing to adjust, or amounts in another currency than the ' +
            'wallet’s; nothing written',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse(
          'The exception belongs to another application or mode, or adjust with application ' +
            'credentials (admin credentials only)',
        ),
        404: errorResponse('Exception not found'),
        422: errorResponse('Validation failure: action or note'),
        429: errorResponse('Rate limit exceeded (`reconciliation`)'),
        504: errorResponse('The adjustment did not finish in time; calling again is safe'),
      },
      handler: async ({ ctx, caller, params, body }) => {
        const exception = await ownedException(ctx, caller, params.exception_id);
        const scope = scopeOf(ctx, caller);
        if (body.action === 'adjust' && !('admin' in scope)) {
          throw new AppError(
            'forbidden',
            'Adjusting an exception moves money: it needs admin credentials',
          );
        }
        if (exception.status === 'resolved')
          throw new AppError('invalid_request', ALREADY_RESOLVED);
        const resolvedBy = resolverOf(ctx, caller);
        if (body.action === 'accept') {
          const outcome = await audited(
            pool,
            ctx,
            caller,
            (trx) =>
              acceptReconExceptions(trx, scope, [exception.id], { note: body.note, resolvedBy }),
            (done) => ('refused' in done ? null : done.resolved.map(accepted(body.note))),
          );
          if ('refused' in outcome) throw refusal(outcome, false);
        } else {
          // Concurrent adjustments of one exception share the workflow; a finished one (done or
          // declined) may run again: it then finds the exception as it now is.
          const handle = await temporal.workflow.start(reconAdjustWorkflow, {
            workflowId: workflowIds.reconAdjust(exception.id),
            taskQueue: maintenanceQueue,
            args: [
              {
                exceptionId: exception.id,
                note: body.note,
                resolvedBy,
                audit: await auditEntry(pool, ctx, caller, {
                  action: 'reconciliation_exception.adjusted',
                  target: { type: 'reconciliation_exception', id: exception.id },
                  details: { note: body.note, transaction_id: exception.transactionId },
                  applicationId: exception.applicationId,
                  mode: exception.mode,
                }),
              },
            ],
            workflowIdConflictPolicy: 'USE_EXISTING',
            workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          });
          unlessDeclined(await withDeadline(handle.result(), config.api.requestTimeoutMs));
        }
        await signalResolved(deps, [exception]);
        return { body: reconExceptionBody((await getReconException(pool, exception.id))!) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/testing/simulate-provider-discrepancy',
      summary:
        'Test Mode only: the sandbox changes its own record of a payment, so that the next ' +
        'reconciliation run finds it: missing (the record is deleted), amount (one minor unit ' +
        'more), status (a success becomes a failure, a failure a success)',
      tag: 'Testing',
      auth,
      testModeOnly: true,
      body: DiscrepancyRequest,
      responses: {
        200: { description: 'The record was changed', schema: DiscrepancyBody },
        400: errorResponse(
          'The payment has no sandbox record (none, or already missing), its record is not ' +
            'final yet, or (missing) the sandbox refunded the card payment',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('Live Mode credentials used, or another application’s transaction'),
        404: errorResponse('Transaction not found'),
        422: errorResponse('Validation failure: kind must be missing, amount or status'),
        429: errorResponse('Rate limit exceeded (`reconciliation`)'),
      },
      handler: async ({ caller, body }) => {
        const id = body.transaction_id.toLowerCase();
        const payment = assertOwned(
          caller,
          uuidPattern.test(id) ? await findTransaction(pool, id) : null,
          'Transaction',
        );
        const reference = payment.provider_reference;
        const outcome = reference
          ? await simulateProviderDiscrepancy(pool, reference, body.kind)
          : ({ changed: false, reason: 'no_record' } as const);
        if (!outcome.changed) {
          const why = {
            no_record: 'The sandbox has no record of this payment',
            not_final: 'The sandbox’s record of this payment is not final yet',
            has_refunds: 'The sandbox refunded this card payment: its record cannot go missing',
          };
          throw new AppError('invalid_request', why[outcome.reason]);
        }
        return {
          body: { transaction_id: payment.id, provider_reference: reference!, kind: body.kind },
        };
      },
    }),
  ];
}
