import { z } from 'zod';
import {
  findEventWithDeliveries,
  listCallerEvents,
  type EventWithDeliveries,
} from '../../db/webhook-deliveries';
import { EVENT_TYPES } from '../../domain/events';
import { assertOwned } from '../access';
import type { ApiDeps } from '../deps';
import { errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import { PageQuery, pageEnvelope, pageWindow, toPage, uuidPattern } from '../schemas';

const DeliveryBody = z
  .object({
    subscription_id: z.string(),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int().meta({ description: 'Attempts made so far' }),
    last_status_code: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'HTTP status of the last attempt; null when it got no answer' }),
    last_error: z.string().nullable().meta({
      description: 'Why the last attempt failed, or why the delivery stopped; null after a 2xx',
    }),
    next_attempt_at: z
      .string()
      .nullable()
      .meta({ description: 'When the next attempt is due; null once delivered or failed' }),
    delivered_at: z.string().nullable(),
  })
  .meta({ id: 'WebhookDelivery' });

const EventBody = z
  .object({
    id: z.string(),
    type: z.enum(EVENT_TYPES),
    created_at: z.string(),
    mode: z.enum(['test', 'live']),
    data: z.record(z.string(), z.unknown()).meta({
      description:
        'What the event tells of: for payment events the Transaction record, amounts in the base currency',
    }),
    deliveries: z.array(DeliveryBody),
  })
  .meta({ id: 'Event' });

const ListQuery = PageQuery.extend({
  type: z
    .enum(EVENT_TYPES, { error: `must be one of ${EVENT_TYPES.join(', ')}` })
    .optional()
    .meta({ description: 'Only events of this kind' }),
});

const EventParams = z.object({ event_id: z.string() });

function eventBody(e: EventWithDeliveries): z.infer<typeof EventBody> {
  return {
    id: e.id,
    type: e.type as z.infer<typeof EventBody>['type'],
    created_at: e.created_at,
    mode: e.mode,
    data: e.data as Record<string, unknown>,
    deliveries: e.deliveries.map((d) => ({
      subscription_id: d.subscription_id,
      status: d.status,
      attempts: d.attempts,
      last_status_code: d.last_status_code,
      last_error: d.last_error,
      next_attempt_at: d.next_attempt_at,
      delivered_at: d.delivered_at,
    })),
  };
}

/** The events of the caller's application and mode, each with its webhook deliveries. */
export function eventRoutes(deps: ApiDeps): Route[] {
  const { pool } = deps;
  const tag = 'Events';
  const unauthenticated = errorResponse('Missing or invalid credentials');
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/events',
      summary: 'List events, newest first (page envelope), with their webhook deliveries',
      tag,
      auth: 'default',
      query: ListQuery,
      responses: {
        200: { description: 'A page of events', schema: pageEnvelope(EventBody) },
        401: unauthenticated,
        422: errorResponse('Invalid paging or an unknown event type'),
      },
      handler: async ({ caller, query }) => {
        const { rows, total } = await listCallerEvents(
          pool,
          caller,
          { type: query.type },
          pageWindow(query),
        );
        return { body: toPage(rows.map(eventBody), total, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/events/:event_id',
      summary: 'Get an event with its webhook deliveries',
      tag,
      auth: 'default',
      params: EventParams,
      responses: {
        200: { description: 'The event', schema: EventBody },
        401: unauthenticated,
        403: errorResponse('The event belongs to another application or mode'),
        404: errorResponse('Event not found'),
      },
      handler: async ({ caller, params }) => {
        const row = uuidPattern.test(params.event_id)
          ? await findEventWithDeliveries(pool, caller, params.event_id.toLowerCase())
          : null;
        return { body: eventBody(assertOwned(caller, row, 'Event')) };
      },
    }),
  ];
}
