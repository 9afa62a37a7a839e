import { z } from 'zod';
import { listAuditLog, type AuditRow } from '../../db/audit-log';
import { AUDIT_ACTOR_TYPES } from '../../domain/audit';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import { InstantQuery, PageQuery, uuidPattern } from '../schemas';

const AuditQuery = z.object({
  per_page: PageQuery.shape.per_page,
  starting_after: z
    .string({ error: 'must be an audit entry id' })
    .regex(uuidPattern, 'must be an audit entry id (a UUID)')
    .transform((v) => v.toLowerCase())
    .optional()
    .meta({
      format: 'uuid',
      description:
        'A cursor: the entries after this one in the list’s order (older); an id that is no ' +
        'entry the credentials may see answers 404',
    }),
  application_id: z
    .string({ error: 'must be an application id' })
    .regex(uuidPattern, 'must be an application id (a UUID)')
    .transform((v) => v.toLowerCase())
    .optional()
    .meta({
      description:
        'Only this application’s entries (admin credentials; application credentials may name ' +
        'only their own)',
    }),
  action: z
    .string({ error: 'must be an action' })
    .regex(/^[a-z_]+(\.[a-z_]+)+$/, 'must be an action such as credential.created')
    .max(100, 'must be at most 100 characters')
    .optional()
    .meta({ description: 'Only entries of this action, exactly (e.g. `credential.created`)' }),
  actor_id: z
    .string({ error: 'must be an actor id' })
    .min(1, 'must be an actor id')
    .max(200, 'must be at most 200 characters')
    .optional()
    .meta({ description: 'Only entries of this actor (its `actor.id`)' }),
  'created[gte]': InstantQuery('Recorded at or after this instant').optional(),
  'created[lt]': InstantQuery('Recorded before this instant').optional(),
});

export const AuditEntryBody = z
  .object({
    id: z.string(),
    at: z.string().meta({ format: 'date-time', description: 'When the change was recorded' }),
    actor: z.object({
      type: z.enum(AUDIT_ACTOR_TYPES),
      id: z.string().meta({
        description:
          'The dashboard account’s, admin’s or credential’s id; the operating system’s user ' +
          'for the command line',
      }),
      name: z.string().meta({
        description: 'The account’s email, the admin’s name, the API key’s hint, user@host',
      }),
    }),
    action: z.string().meta({ description: 'Dotted: `credential.created`, `payment.resolved`' }),
    target: z.object({ type: z.string(), id: z.string().nullable() }),
    ip: z.string().nullable().meta({ description: 'The client’s address; null from the CLI' }),
    details: z
      .record(z.string(), z.unknown())
      .meta({ description: 'What changed; never a secret (keys, passwords, tokens)' }),
  })
  .meta({ id: 'AuditEntry' });

const AuditPage = z.object({
  data: z.array(AuditEntryBody),
  per_page: z.number().int(),
  has_more: z.boolean().meta({ description: 'Whether older matching entries follow' }),
});

function auditEntryBody(row: AuditRow): z.infer<typeof AuditEntryBody> {
  return {
    id: row.id,
    at: row.at,
    actor: { type: row.actor_type, id: row.actor_id, name: row.actor_name },
    action: row.action,
    target: { type: row.target_type, id: row.target_id },
    ip: row.ip,
    details: row.details,
  };
}

/** The audit log (docs/security.md, Audit log): an application's entries, or every one for admins. */
export function auditLogRoutes({ pool }: ApiDeps): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/audit-log',
      summary:
        'The audit log, newest first, as cursor pages {data, per_page, has_more}: who changed ' +
        'what (dashboard accounts, admins, the command line, credentials). Application ' +
        'credentials see their application’s entries; admin credentials see every entry and may ' +
        'filter by application_id. Filters: action, actor_id, created[gte], created[lt]',
      tag: 'Audit log',
      auth: 'default',
      adminToo: true,
      query: AuditQuery,
      responses: {
        200: { description: 'A page of entries', schema: AuditPage },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('application_id names another application (application credentials)'),
        404: errorResponse('starting_after names no entry these credentials may see'),
        422: errorResponse('Invalid paging or filter'),
        429: errorResponse('Rate limit exceeded'),
      },
      handler: async ({ ctx, caller, query }) => {
        const admin = (ctx.state as { admin?: unknown }).admin !== undefined;
        if (!admin && query.application_id !== undefined) {
          if (query.application_id !== caller.applicationId) {
            throw new AppError(
              'forbidden',
              'application_id: application credentials see their own application’s entries only',
            );
          }
        }
        const found = await listAuditLog(
          pool,
          {
            applicationId: admin ? query.application_id : caller.applicationId,
            action: query.action,
            actorId: query.actor_id,
            atGte: query['created[gte]'],
            atLt: query['created[lt]'],
          },
          { startingAfter: query.starting_after, limit: query.per_page },
        );
        if (!found) {
          throw new AppError('not_found', 'starting_after: no audit entry you may see has this id');
        }
        return {
          body: {
            data: found.rows.map(auditEntryBody),
            per_page: query.per_page,
            has_more: found.hasMore,
          },
        };
      },
    }),
  ];
}
