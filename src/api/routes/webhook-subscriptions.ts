import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import {
  deleteWebhookSubscription,
  eraseExpiredPreviousSecrets,
  findWebhookSubscription,
  insertWebhookSubscription,
  listWebhookSubscriptions,
  previousSecretBinding,
  rotateWebhookSecret,
  updateWebhookSubscription,
  type WebhookSubscriptionRow,
} from '../../db/webhook-subscriptions';
import { EVENT_TYPES } from '../../domain/events';
import type { Caller } from '../../domain/types';
import {
  assertPublicUrl,
  ForbiddenAddressError,
  InvalidWebhookUrlError,
} from '../../outbound/address-guard';
import {
  newWebhookSecret,
  open,
  seal,
  SecretBoxError,
  webhookSecretKey,
} from '../../crypto/secret-box';
import { webhookSigningSecrets } from '../../outbound/webhook-secrets';
import {
  DNS_FAILURES,
  postWebhook,
  signedDelivery,
  WEBHOOK_ANSWER_MAX_BYTES,
  WEBHOOK_ERROR_DOC,
  WEBHOOK_TIMEOUT_MS,
} from '../../outbound/webhook-post';
import { assertOwned } from '../access';
import { audited } from '../audit';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse, notFound, refuseOverCap } from '../errors';
import { defineRoute, type Route } from '../route';
import { MessageBody, PageQuery, pageEnvelope, pageWindow, toPage, uuidPattern } from '../schemas';
import {
  CreatedWebhookSubscriptionBody,
  WebhookSubscriptionBody,
  webhookSubscriptionBody,
} from '../serializers';

/**
 * The schema says what a JSON Schema can (a string that starts with `http://` or `https://`);
 * whether the rest is a usable URL is judged in the handler, with 400 like every other URL rule.
 */
const WebhookUrl = z
  .string()
  .max(2048)
  .regex(/^[Hh][Tt][Tt][Pp][Ss]?:\/\//, 'url must be an http or https URL')
  .meta({
    description:
      'Where deliveries are POSTed: http or https (Live Mode: https only), a public address',
  });

const INVALID_URL = 'Webhook URL must be a valid http or https URL without credentials';

/** The URL as stored: parsed, http(s), no credentials (they would be shown back in clear). */
function parseWebhookUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch (error) {
    throw new AppError('invalid_request', INVALID_URL, { cause: error });
  }
  if (
    !['http:', 'https:'].includes(url.protocol) ||
    url.username ||
    url.password ||
    !url.hostname
  ) {
    throw new AppError('invalid_request', INVALID_URL);
  }
  return url;
}

const EventList = z
  .array(z.enum(EVENT_TYPES))
  .min(1)
  // Repeats are allowed (and dropped) but bounded, so a body cannot list a kind a million times.
  .max(EVENT_TYPES.length * 4)
  .transform((events) => [...new Set(events)])
  .meta({ description: 'The event kinds to receive (docs/api.md, Webhooks)' });

const CreateSubscription = z.object({
  url: WebhookUrl,
  events: EventList,
  is_active: z.boolean().default(true),
});

const UpdateSubscription = z.object({
  url: WebhookUrl.optional(),
  events: EventList.optional(),
  is_active: z.boolean().optional(),
});

const SubscriptionParams = z.object({ subscription_id: z.string() });

/** The longest overlap a rotation allows: a week (docs/api.md, Webhooks). */
const MAX_OVERLAP_S = 604_800;

const RotateSecret = z.object({
  previous_secret_expires_in: z.number().int().min(0).max(MAX_OVERLAP_S).default(86_400).meta({
    description:
      'Seconds the replaced secret still signs deliveries beside the new one (0: not at all)',
  }),
});

const TestSendBody = z
  .object({
    delivered: z.boolean().meta({ description: 'The endpoint answered 2xx' }),
    status_code: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'HTTP status of the answer; null when none came' }),
    duration_ms: z.number().int(),
    error: z.string().nullable().meta({ description: WEBHOOK_ERROR_DOC }),
  })
  .meta({ id: 'WebhookTestResult' });

/** A rotation lost to another one at the same time is read and done again, this many times. */
const ROTATE_TRIES = 3;

/** A test send's error when WEBHOOK_SECRET_KEY is not the key that sealed the secret. */
const UNREADABLE =
  'The subscription secret cannot be read with the configured WEBHOOK_SECRET_KEY; rotate it';

export function webhookSubscriptionRoutes(deps: ApiDeps): Route[] {
  const { pool, config } = deps;
  let key: Buffer | undefined;
  // Read on first use, so building the route list (the OpenAPI document) touches no file.
  const secretKey = () => (key ??= webhookSecretKey(config));

  /** The contract's URL rules, checked before anything is written. */
  async function assertAllowedUrl(caller: Caller, url: string): Promise<void> {
    const httpsOnly = caller.mode === 'live';
    const parsed = parseWebhookUrl(url);
    if (httpsOnly && parsed.protocol !== 'https:') {
      throw new AppError('invalid_request', 'Webhook URL must use https in Live Mode');
    }
    try {
      await assertPublicUrl(url, { allowlist: config.webhooks.privateAllowlist, httpsOnly });
    } catch (error) {
      if (error instanceof ForbiddenAddressError) {
        throw new AppError('forbidden_address', null, { cause: error });
      }
      // A URL the guard cannot use (a host that does not resolve, credentials): its message says
      // why, and it is the merchant's to fix.
      if (error instanceof InvalidWebhookUrlError) {
        throw new AppError('invalid_request', error.message, { cause: error });
      }
      const { code, syscall } = (error ?? {}) as NodeJS.ErrnoException;
      if (
        (code && DNS_FAILURES.has(code)) ||
        syscall === 'getaddrinfo' ||
        syscall?.startsWith('query')
      ) {
        throw new AppError('invalid_request', 'Webhook URL host could not be resolved', {
          cause: error,
        });
      }
      throw error;
    }
  }

  /** 404 for an id that names nothing (a non-UUID included), 403 for another owner's. */
  async function owned(caller: Caller, id: string): Promise<WebhookSubscriptionRow> {
    if (!uuidPattern.test(id)) throw notFound('Webhook subscription');
    return assertOwned(caller, await findWebhookSubscription(pool, id), 'Webhook subscription');
  }

  const PATH = '/api/v1/webhooks/subscriptions';
  const ONE = `${PATH}/:subscription_id`;
  const tag = 'Webhook subscriptions';
  const unauthenticated = errorResponse('Missing or invalid credentials');
  const forbidden = errorResponse('The subscription belongs to another application or mode');
  const missing = errorResponse('Webhook subscription not found');
  const refusedUrl = errorResponse(
    'The URL is not a valid http(s) URL, points to a private or internal address, its host does not resolve, or it is http in Live Mode',
  );

  return [
    defineRoute({
      method: 'post',
      path: PATH,
      summary: 'Subscribe a URL to events; the answer shows the signing secret, once',
      tag,
      auth: 'default',
      body: CreateSubscription,
      responses: {
        201: {
          description: 'The subscription, with its secret',
          schema: CreatedWebhookSubscriptionBody,
        },
        400: errorResponse(
          'The URL is refused (as on PATCH), or the application already has as many subscriptions in this mode as it may (MAX_WEBHOOK_SUBSCRIPTIONS_PER_MODE)',
        ),
        401: unauthenticated,
        422: errorResponse('Validation failure (an unknown event kind included)'),
      },
      handler: async ({ ctx, caller, body }) => {
        await assertAllowedUrl(caller, body.url);
        const secret = newWebhookSecret();
        const id = randomUUID();
        const row = await refuseOverCap(() =>
          audited(
            pool,
            ctx,
            caller,
            (trx) =>
              insertWebhookSubscription(
                trx,
                caller,
                {
                  id,
                  url: body.url,
                  events: body.events,
                  is_active: body.is_active,
                  secret_sealed: seal(secretKey(), secret, id),
                },
                config.caps.webhookSubscriptions,
              ),
            (made) => ({
              action: 'webhook_subscription.created',
              target: { type: 'webhook_subscription', id: made.id },
              details: { url: made.url, events: [...made.events], is_active: made.is_active },
            }),
          ),
        );
        return { status: 201, body: { ...webhookSubscriptionBody(row), secret } };
      },
    }),
    defineRoute({
      method: 'get',
      path: PATH,
      summary: 'List webhook subscriptions (page envelope)',
      tag,
      auth: 'default',
      query: PageQuery,
      responses: {
        200: {
          description: 'A page of subscriptions',
          schema: pageEnvelope(WebhookSubscriptionBody),
        },
        401: unauthenticated,
        422: errorResponse('Invalid paging'),
      },
      handler: async ({ caller, query }) => {
        const { rows, total } = await listWebhookSubscriptions(pool, caller, pageWindow(query));
        return { body: toPage(rows.map(webhookSubscriptionBody), total, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: ONE,
      summary: 'Get a webhook subscription (without its secret)',
      tag,
      auth: 'default',
      params: SubscriptionParams,
      responses: {
        200: { description: 'The subscription', schema: WebhookSubscriptionBody },
        401: unauthenticated,
        403: forbidden,
        404: missing,
      },
      handler: async ({ caller, params }) => ({
        body: webhookSubscriptionBody(await owned(caller, params.subscription_id)),
      }),
    }),
    defineRoute({
      method: 'patch',
      path: ONE,
      summary: 'Edit a webhook subscription in place; its secret stays the same',
      tag,
      auth: 'default',
      params: SubscriptionParams,
      body: UpdateSubscription,
      responses: {
        200: {
          description: 'The subscription, without its secret',
          schema: WebhookSubscriptionBody,
        },
        400: refusedUrl,
        401: unauthenticated,
        403: forbidden,
        404: missing,
        422: errorResponse('Validation failure (an unknown event kind included)'),
      },
      handler: async ({ ctx, caller, params, body }) => {
        await owned(caller, params.subscription_id);
        if (body.url !== undefined) await assertAllowedUrl(caller, body.url);
        const row = await audited(
          pool,
          ctx,
          caller,
          (trx) => updateWebhookSubscription(trx, params.subscription_id, body),
          (updated) =>
            updated && {
              action: 'webhook_subscription.updated',
              target: { type: 'webhook_subscription', id: updated.id },
              details: { changes: body },
            },
        );
        if (!row) throw notFound('Webhook subscription');
        return { body: webhookSubscriptionBody(row) };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${ONE}/test`,
      summary:
        'Send a signed `webhook.test` event to the subscription, one attempt, and answer how it went',
      tag,
      auth: 'default',
      params: SubscriptionParams,
      responses: {
        200: {
          description:
            'The outcome of the one attempt (a refused address, no answer or a non-2xx is `delivered` false with its reason)',
          schema: TestSendBody,
        },
        401: unauthenticated,
        403: forbidden,
        404: missing,
      },
      handler: async ({ caller, params }) => {
        const row = await owned(caller, params.subscription_id);
        let secrets: string[];
        try {
          const opened = webhookSigningSecrets(secretKey(), row, previousSecretBinding(row.id));
          secrets = opened.secrets;
          if (opened.previousExpired) await eraseExpiredPreviousSecrets(pool, row.id);
        } catch (error) {
          if (!(error instanceof SecretBoxError)) throw error;
          return {
            body: { delivered: false, status_code: null, duration_ms: 0, error: UNREADABLE },
          };
        }
        const payload = {
          id: randomUUID(),
          type: 'webhook.test',
          created_at: new Date().toISOString(),
          mode: row.mode,
          data: { subscription_id: row.id },
        };
        // The same guard, scheme rule, timeout and body limit as every delivery.
        const outcome = await postWebhook(row.url, signedDelivery(payload, secrets), {
          allowlist: config.webhooks.privateAllowlist,
          httpsOnly: row.mode === 'live',
          timeoutMs: WEBHOOK_TIMEOUT_MS,
          maxBodyBytes: WEBHOOK_ANSWER_MAX_BYTES,
        });
        return {
          body: {
            delivered: outcome.error === null,
            status_code: outcome.statusCode,
            duration_ms: Math.round(outcome.durationMs),
            error: outcome.error,
          },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${ONE}/rotate-secret`,
      summary:
        'Replace the signing secret; the previous one keeps signing beside it until it expires',
      tag,
      auth: 'default',
      params: SubscriptionParams,
      body: RotateSecret,
      responses: {
        200: {
          description: 'The subscription, with its new secret (shown only here)',
          schema: CreatedWebhookSubscriptionBody,
        },
        401: unauthenticated,
        403: forbidden,
        404: missing,
        422: errorResponse('Validation failure (`previous_secret_expires_in` out of range)'),
      },
      handler: async ({ ctx, caller, params, body }) => {
        let row = await owned(caller, params.subscription_id);
        const secret = newWebhookSecret();
        for (let tries = 1; ; tries += 1) {
          let previous: string;
          try {
            previous = open(secretKey(), row.secret_sealed, row.id);
          } catch (error) {
            if (!(error instanceof SecretBoxError)) throw error;
            // Nothing can sign with it any more, so there is nothing to overlap with.
            previous = '';
          }
          const overlap = previous ? body.previous_secret_expires_in : 0;
          const id = row.id;
          const sealed = {
            was: row.secret_sealed,
            current: seal(secretKey(), secret, row.id),
            previous: seal(secretKey(), previous, previousSecretBinding(row.id)),
          };
          const rotated = await audited(
            pool,
            ctx,
            caller,
            (trx) => rotateWebhookSecret(trx, id, sealed, overlap),
            (done) =>
              done && {
                action: 'webhook_subscription.secret_rotated',
                target: { type: 'webhook_subscription', id: done.id },
                details: { previous_secret_expires_in: overlap },
              },
          );
          if (rotated) return { body: { ...webhookSubscriptionBody(rotated), secret } };
          if (tries >= ROTATE_TRIES) {
            throw new Error('Webhook secret rotation kept losing to concurrent rotations');
          }
          row = await owned(caller, params.subscription_id);
        }
      },
    }),
    defineRoute({
      method: 'delete',
      path: ONE,
      summary: 'Delete a webhook subscription',
      tag,
      auth: 'default',
      params: SubscriptionParams,
      responses: {
        200: { description: 'Deleted', schema: MessageBody },
        401: unauthenticated,
        403: forbidden,
        404: missing,
      },
      handler: async ({ ctx, caller, params }) => {
        const row = await owned(caller, params.subscription_id);
        await audited(
          pool,
          ctx,
          caller,
          (trx) => deleteWebhookSubscription(trx, row.id),
          () => ({
            action: 'webhook_subscription.deleted',
            target: { type: 'webhook_subscription', id: row.id },
            details: { url: row.url },
          }),
        );
        return { body: { message: 'Webhook subscription deleted successfully' } };
      },
    }),
  ];
}
