import { z } from 'zod';
import { WEBHOOK_ERROR_DOC } from '../../outbound/webhook-post';
import {
  EVENT_DELIVERIES,
  findEventWithDeliveries,
  HISTORY_ATTEMPTS,
  insertRedeliveries,
  REDELIVERIES_PER_DAY,
  listCallerEvents,
  type EventWithDeliveries,
} from '../../db/webhook-deliveries';
import {
  findWebhookSubscription,
  listActiveSubscriptionsFor,
} from '../../db/webhook-subscriptions';
import { EVENT_TYPES } from '../../domain/events';
import type { Caller } from '../../domain/types';
import { startWebhookDelivery } from '../../temporal/webhook-deliveries';
import { assertOwned } from '../access';
import { audited } from '../audit';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { RateLimitedError } from '../middleware/errors';
import { defineRoute, type Route } from '../route';
import { BodyId, PageQuery, pageEnvelope, pageWindow, toPage, uuidPattern } from '../schemas';

const AttemptBody = z
  .object({
    attempted_at: z.string(),
    status_code: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'HTTP status of the answer; null when none came' }),
    duration_ms: z.number().int().meta({ description: 'From the request sent to the answer read' }),
    error: z.string().nullable().meta({ description: WEBHOOK_ERROR_DOC }),
  })
  .meta({ id: 'WebhookAttempt' });

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
    last_error: z
      .string()
      .nullable()
      .meta({
        description: `The last attempt's \`error\`, or why the delivery stopped. ${WEBHOOK_ERROR_DOC}`,
      }),
    next_attempt_at: z
      .string()
      .nullable()
      .meta({ description: 'When the next attempt is due; null once delivered or failed' }),
    delivered_at: z.string().nullable(),
    history: z.array(AttemptBody).meta({
      description: `The last ${HISTORY_ATTEMPTS} attempts of this delivery, oldest first`,
    }),
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
    deliveries: z.array(DeliveryBody).meta({
      description: `The event's latest ${EVENT_DELIVERIES} deliveries, oldest first`,
    }),
  })
  .meta({ id: 'Event' });

const ListQuery = PageQuery.extend({
  type: z
    .enum(EVENT_TYPES, { error: `must be one of ${EVENT_TYPES.join(', ')}` })
    .optional()
    .meta({ description: 'Only events of this kind' }),
});

const EventParams = z.object({ event_id: z.string() });

const RedeliverRequest = z.object({
  subscription_id: BodyId.optional().meta({
    description: 'Only to this subscription; absent: every active one that selects it',
  }),
});

/** How far back an event may be sent again (docs/api.md, "Webhooks"). */
export const REDELIVERY_WINDOW_MS = 30 * 24 * 60 * 60 * 1000;

/** 429: the event went to the subscription as many times today as it may. */
class RedeliveryCapError extends RateLimitedError {
  override readonly detail: string;
  constructor(subscriptionId: string, retryAfter: number) {
    super(retryAfter);
    this.detail =
      `The event was already redelivered ${REDELIVERIES_PER_DAY} times to webhook subscription ` +
      `${subscriptionId} in the last 24 hours, the most allowed: retry in ${retryAfter} seconds`;
    this.message = this.detail;
  }
}

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
      history: d.history.map((a) => ({
        attempted_at: a.attempted_at,
        status_code: a.status_code,
        duration_ms: a.duration_ms,
        error: a.error,
      })),
    })),
  };
}

/** The events of the caller's application and mode, each with its webhook deliveries. */
export function eventRoutes(deps: ApiDeps): Route[] {
  const { pool, temporal } = deps;
  const taskQueue = deps.config.temporal.webhookTaskQueue;

  /** The subscription a redelivery names: the caller's, active, and selecting `type`. */
  async function namedSubscription(caller: Caller, id: string, type: string) {
    const row = assertOwned(
      caller,
      uuidPattern.test(id) ? await findWebhookSubscription(pool, id.toLowerCase()) : null,
      'Webhook subscription',
    );
    if (!row.is_active) throw new AppError('invalid_request', 'Webhook subscription is disabled');
    if (!row.events.includes(type)) {
      throw new AppError(
        'invalid_request',
        `Webhook subscription does not select events of type ${type}`,
      );
    }
    return row;
  }

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
    defineRoute({
      method: 'post',
      path: '/api/v1/events/:event_id/redeliver',
      summary:
        'Send an event again, as a new delivery with attempts of its own, to one subscription or to every active one that selects its type',
      tag,
      auth: 'default',
      params: EventParams,
      body: RedeliverRequest,
      responses: {
        202: {
          description: 'The event with its deliveries, the new ones pending',
          schema: EventBody,
        },
        400: errorResponse(
          'The event is older than 30 days, or the subscription named is disabled or does not select its type',
        ),
        401: unauthenticated,
        403: errorResponse('The event or the subscription belongs to another application or mode'),
        404: errorResponse('Event or webhook subscription not found'),
        422: errorResponse('Validation failure'),
        429: errorResponse(
          `The event was already redelivered ${REDELIVERIES_PER_DAY} times in the last 24 hours to a subscription it would go to; Retry-After says when another is allowed, and nothing is sent`,
        ),
      },
      handler: async ({ ctx, caller, params, body }) => {
        const id = params.event_id.toLowerCase();
        const event = assertOwned(
          caller,
          uuidPattern.test(id) ? await findEventWithDeliveries(pool, caller, id) : null,
          'Event',
        );
        const subscriptions = body.subscription_id
          ? [await namedSubscription(caller, body.subscription_id, event.type)]
          : await listActiveSubscriptionsFor(pool, caller, event.type);
        if (Date.parse(event.created_at) < Date.now() - REDELIVERY_WINDOW_MS) {
          throw new AppError(
            'invalid_request',
            'Event is older than 30 days and can no longer be redelivered',
          );
        }
        const sent = await audited(
          pool,
          ctx,
          caller,
          (trx) =>
            insertRedeliveries(
              trx,
              event.id,
              subscriptions.map((s) => s.id),
              async (targets) => {
                for (const target of targets) {
                  await startWebhookDelivery(temporal, taskQueue, target);
                }
              },
            ),
          (outcome) =>
            'capped' in outcome || outcome.targets.length === 0
              ? null
              : {
                  action: 'event.redelivered',
                  target: { type: 'event', id: event.id },
                  details: { subscription_ids: outcome.targets.map((t) => t.subscriptionId) },
                },
        );
        if ('capped' in sent) {
          throw new RedeliveryCapError(sent.capped.subscriptionId, sent.capped.retryAfterSeconds);
        }
        const row = await findEventWithDeliveries(pool, caller, event.id);
        return { status: 202, body: eventBody(row ?? event) };
      },
    }),
  ];
}
