import { z } from 'zod';
import type { Mode } from '../../domain/types';
import {
  applyDisputeEvent,
  applyRefundEvent,
  disputeIntake,
  type Applied,
} from '../../intake/card-cases';
import type { CardCaseEvent, CardEvent, CardPayoutEvent } from '../../providers/card';
import { SANDBOX_SIGNATURE_HEADER } from '../../providers/sandbox-mobile-money';
import { signedStripeEventId } from '../../providers/stripe-card';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import {
  deliverCardEvent,
  deliverCardPayoutEvent,
  deliverNotification,
  deliverPayoutNotification,
  type Delivered,
} from '../provider-notifications';
import { defineRoute, type Route } from '../route';

/**
 * The largest provider notification taken: a provider's message about one payment is a few KiB,
 * and each one taken is kept (table `provider_notifications`); a larger body is refused (413)
 * before its signature is checked, so it costs neither the check nor a row.
 */
export const MAX_NOTIFICATION_BYTES = 64 * 1024;

/** A provider that can verify its own signed messages. */
type Verifier<M> = { name: string; verify: (raw: string, headers: Headers) => M | null };
type Headers = Record<string, string | undefined>;
/** A provider's signed event that the engine does not act on (its id). */
type UnreadEvent = { unread: string };

/**
 * A provider's webhook: the sandbox's messages (`sandbox-signature`) reach Test Mode, any other
 * goes to the live provider of Live Mode; a message that its provider cannot verify is 400.
 */
function webhookRoute<M>(spec: {
  path: string;
  summary: string;
  sandbox: Verifier<M>;
  live: Verifier<M> | null;
  deliver: (
    provider: { name: string; mode: Mode },
    message: M,
    body: unknown,
  ) => Promise<Delivered | Applied>;
  refusal: string;
}): Route {
  return defineRoute({
    method: 'post',
    path: spec.path,
    summary: spec.summary,
    tag: 'Webhooks',
    auth: null,
    responses: {
      200: {
        description: 'Recorded',
        schema: z.object({
          received: z.boolean(),
          transaction_id: z.string().nullable(),
          status: z.string().nullable(),
        }),
      },
      400: errorResponse('Bad signature or body'),
      413: errorResponse(`The body is larger than ${MAX_NOTIFICATION_BYTES / 1024} KiB`),
    },
    handler: async ({ ctx }) => {
      const raw = (ctx.state as { rawBody?: string }).rawBody ?? '';
      if (Buffer.byteLength(raw, 'utf8') > MAX_NOTIFICATION_BYTES) {
        throw new AppError(
          'payload_too_large',
          `Notification body is larger than ${MAX_NOTIFICATION_BYTES / 1024} KiB`,
        );
      }
      const headers = Object.fromEntries(
        Object.entries(ctx.headers).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v]),
      );
      const sandbox = headers[SANDBOX_SIGNATURE_HEADER] !== undefined;
      const provider = sandbox ? spec.sandbox : spec.live;
      const message = provider?.verify(raw, headers) ?? null;
      if (!provider || !message) throw new AppError('invalid_request', spec.refusal);
      const delivered = await spec.deliver(
        { name: provider.name, mode: sandbox ? 'test' : 'live' },
        message,
        ctx.state.body,
      );
      return {
        body: {
          received: true,
          transaction_id: delivered.transactionId,
          status: delivered.status,
        },
      };
    },
  });
}

export function providerWebhookRoutes(deps: ApiDeps): Route[] {
  const { providers } = deps;
  const { sandboxMobileMoney, liveMobileMoney, sandboxCard, liveCard, liveConnect } = providers;
  // Signed by Stripe but of a type no reader takes: answered 200, kept nowhere.
  const unreadEvent = (r: string, h: Headers): UnreadEvent | null => {
    const id = signedStripeEventId(r, h, deps.config.providers.stripe.webhookSecret);
    return id ? { unread: id } : null;
  };
  const caseDeps = {
    pool: deps.pool,
    temporal: deps.temporal,
    timeoutMs: deps.config.api.requestTimeoutMs,
    timeoutError: () => new AppError('timeout'),
    logger: deps.logger,
    providers: deps.providers,
  };
  const disputes = disputeIntake({ ...caseDeps, taskQueue: deps.config.temporal.taskQueue });
  return [
    webhookRoute({
      path: '/api/v1/webhooks/providers/mobile-money',
      summary:
        'Inbound mobile-money provider notification (signed); 200 once recorded, also when it ' +
        'matches no payment yet (kept; the reconciliation retries it)',
      sandbox: {
        name: sandboxMobileMoney.name,
        verify: (r, h) =>
          sandboxMobileMoney.parseNotification(r, h) ??
          sandboxMobileMoney.parsePayoutNotification(r, h),
      },
      live: liveMobileMoney && {
        name: liveMobileMoney.name,
        verify: (r, h) =>
          liveMobileMoney.parseNotification(r, h) ?? liveMobileMoney.parsePayoutNotification(r, h),
      },
      // A payout's notification (`payout.*`) goes to its cashout's saga (src/api/provider-notifications.ts).
      deliver: (provider, message, body) =>
        'payoutId' in message
          ? deliverPayoutNotification(deps, provider, message, body)
          : deliverNotification(deps, provider, message, body),
      refusal: 'Invalid notification signature',
    }),
    webhookRoute({
      path: '/api/v1/webhooks/providers/card',
      summary:
        'Inbound card provider event (signed: `Stripe-Signature` in Live Mode, ' +
        '`sandbox-signature` from the Test Mode sandbox): a card deposit’s payment, a card ' +
        'payout paid or failed (a payout reported paid and later failed is reversed), or a card ' +
        'refund’s or dispute’s event; 200 once recorded, and for a signed event of a type it ' +
        'does not act on',
      sandbox: {
        name: sandboxCard.name,
        // The sandbox sends no refund or dispute events (src/providers/sandbox-card.ts).
        verify: (r, h): CardEvent | CardPayoutEvent | CardCaseEvent | UnreadEvent | null =>
          sandboxCard.parseEvent(r, h),
      },
      live: liveCard && {
        name: liveCard.name,
        verify: (r, h) =>
          liveCard.parseEvent(r, h) ??
          liveConnect?.parsePayoutEvent?.(r, h) ??
          liveCard.parseCaseEvent(r, h) ??
          unreadEvent(r, h),
      },
      // A payout's event (`payout.*`) goes to its card payout's saga; a refund's to its refund
      // saga, a dispute's to the dispute workflow's intake (src/intake/card-cases.ts).
      deliver: (provider, event, body) => {
        if ('unread' in event) return Promise.resolve({ transactionId: null, status: null });
        if ('payoutId' in event) return deliverCardPayoutEvent(deps, provider, event, body);
        if (!('kind' in event)) return deliverCardEvent(deps, provider, event, body);
        const source = { provider: provider.name, mode: provider.mode, body };
        return event.kind === 'refund'
          ? applyRefundEvent(caseDeps, event, source)
          : applyDisputeEvent(caseDeps, event, source, disputes);
      },
      refusal: 'Invalid event signature',
    }),
  ];
}
