import { z } from 'zod';
import { findNotifiedCardDeposit } from '../../db/card-deposits';
import { findNotifiedDeposit } from '../../db/deposits';
import type { DatabasePool } from '../../db/pool';
import { insertProviderNotification } from '../../db/provider-notifications';
import type { Mode } from '../../domain/types';
import type { CardEvent } from '../../providers/card';
import type { MobileMoneyNotification } from '../../providers/mobile-money';
import { SANDBOX_SIGNATURE_HEADER } from '../../providers/sandbox-mobile-money';
import { cardDepositUpdates, depositUpdates, type DepositOutcome } from '../../workflows/shared';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { deliverPayoutNotification } from './cashouts';
import { defineRoute, type Route } from '../route';
import { uuidPattern } from '../schemas';
import { depositMode, updateDeposit, type DepositHandle, type DepositKind } from '../temporal';

type Delivered = { transactionId: string | null; status: DepositOutcome | null };

/** What the engine reads of a provider's verified message about a deposit's payment. */
type DepositMessage = { paymentReference: string; reference: string | null; status: string };

/** Which deposits a provider's message can reach, and how it is handed to one. */
type DepositTarget = {
  kind: DepositKind;
  find: (
    db: DatabasePool,
    paymentReference: string,
    transactionId: string | null,
  ) => Promise<{ id: string; mode: Mode } | null>;
  notify: (handle: DepositHandle) => Promise<DepositOutcome>;
};

/**
 * The one path of a provider's message into the engine, for a live provider's webhook and the
 * sandbox's simulated one alike: record it, find the deposit (by the provider's reference, else
 * by our reference in the message's metadata), and hand it to the deposit's workflow, which
 * settles it exactly once.
 */
async function deliverToDeposit(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config'>,
  provider: { name: string; mode: Mode },
  message: DepositMessage,
  body: unknown,
  target: DepositTarget,
): Promise<Delivered> {
  const lowered = message.reference?.toLowerCase() ?? null;
  const reference = lowered && uuidPattern.test(lowered) ? lowered : null;
  const known = await target.find(deps.pool, message.paymentReference, reference);
  const transactionId = known?.id ?? reference;
  await insertProviderNotification(deps.pool, {
    provider: provider.name,
    paymentReference: message.paymentReference,
    status: message.status,
    transactionId,
    body,
  });
  if (!transactionId) return { transactionId: null, status: null };
  // A provider speaks for its own mode only: the sandbox (Test Mode) can never settle a Live
  // Mode deposit, whatever references its message carries, nor the reverse.
  const mode = known?.mode ?? (await depositMode(deps.temporal, transactionId, target.kind));
  if (mode !== provider.mode) return { transactionId: null, status: null };
  const status = await updateDeposit(
    deps.temporal,
    transactionId,
    deps.config.api.requestTimeoutMs,
    target.notify,
    target.kind,
  );
  return { transactionId, status };
}

/** A mobile-money provider's notification, to its mobile-money deposit. */
export function deliverNotification(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config'>,
  provider: { name: string; mode: Mode },
  notification: MobileMoneyNotification,
  body: unknown,
): Promise<Delivered> {
  const { paymentCodeId, reference, status } = notification;
  return deliverToDeposit(
    deps,
    provider,
    { paymentReference: paymentCodeId, reference, status },
    body,
    {
      kind: 'deposit',
      find: findNotifiedDeposit,
      notify: (handle) => handle.executeUpdate(depositUpdates.notify, { args: [{ status }] }),
    },
  );
}

/** A card provider's event, to its card deposit. */
export function deliverCardEvent(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config'>,
  provider: { name: string; mode: Mode },
  event: CardEvent,
  body: unknown,
): Promise<Delivered> {
  const { paymentId, reference, status } = event;
  return deliverToDeposit(
    deps,
    provider,
    { paymentReference: paymentId, reference, status },
    body,
    {
      kind: 'cardDeposit',
      find: findNotifiedCardDeposit,
      notify: (handle) => handle.executeUpdate(cardDepositUpdates.notify, { args: [{ status }] }),
    },
  );
}

/** A provider that can verify its own signed messages. */
type Verifier<M> = { name: string; verify: (raw: string, headers: Headers) => M | null };
type Headers = Record<string, string | undefined>;

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
  ) => Promise<Delivered>;
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
    },
    handler: async ({ ctx }) => {
      const raw = (ctx.state as { rawBody?: string }).rawBody ?? '';
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
  const { sandboxMobileMoney, liveMobileMoney, sandboxCard, liveCard } = providers;
  return [
    webhookRoute({
      path: '/api/v1/webhooks/providers/mobile-money',
      summary: 'Inbound mobile-money provider notification (signed); 200 once recorded',
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
      // A payout's notification (`payout.*`) goes to its cashout's saga (routes/cashouts.ts).
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
        '`sandbox-signature` from the Test Mode sandbox); 200 once recorded',
      sandbox: { name: sandboxCard.name, verify: (r, h) => sandboxCard.parseEvent(r, h) },
      live: liveCard && { name: liveCard.name, verify: (r, h) => liveCard.parseEvent(r, h) },
      deliver: (provider, event, body) => deliverCardEvent(deps, provider, event, body),
      refusal: 'Invalid event signature',
    }),
  ];
}
