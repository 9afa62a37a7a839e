import { z } from 'zod';
import { findNotifiedDeposit } from '../../db/deposits';
import { insertProviderNotification } from '../../db/provider-notifications';
import type { Mode } from '../../domain/types';
import type { MobileMoneyNotification } from '../../providers/mobile-money';
import { SANDBOX_SIGNATURE_HEADER } from '../../providers/sandbox-mobile-money';
import { depositUpdates, type DepositOutcome } from '../../workflows/shared';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import { depositMode, updateDeposit } from '../temporal';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The one path of a provider's notification into the engine, for the live provider's webhook
 * and the sandbox's simulated one alike: record it, find the deposit (by the provider's
 * reference, else by our reference in the notification's metadata), and hand it to the
 * deposit's workflow, which settles it exactly once.
 */
export async function deliverNotification(
  deps: Pick<ApiDeps, 'pool' | 'temporal' | 'config'>,
  provider: { name: string; mode: Mode },
  notification: MobileMoneyNotification,
  body: unknown,
): Promise<{ transactionId: string | null; status: DepositOutcome | null }> {
  const lowered = notification.reference?.toLowerCase() ?? null;
  const reference = lowered && UUID.test(lowered) ? lowered : null;
  const known = await findNotifiedDeposit(deps.pool, notification.paymentCodeId, reference);
  const transactionId = known?.id ?? reference;
  await insertProviderNotification(deps.pool, {
    provider: provider.name,
    paymentReference: notification.paymentCodeId,
    status: notification.status,
    transactionId,
    body,
  });
  if (!transactionId) return { transactionId: null, status: null };
  // A provider speaks for its own mode only: the sandbox (Test Mode) can never settle a Live
  // Mode deposit, whatever references its notification carries, nor the reverse.
  const mode = known?.mode ?? (await depositMode(deps.temporal, transactionId));
  if (mode !== provider.mode) return { transactionId: null, status: null };
  const status = await updateDeposit(
    deps.temporal,
    transactionId,
    deps.config.api.requestTimeoutMs,
    (handle) =>
      handle.executeUpdate(depositUpdates.notify, { args: [{ status: notification.status }] }),
  );
  return { transactionId, status };
}

export function providerWebhookRoutes(deps: ApiDeps): Route[] {
  const { providers } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/webhooks/providers/mobile-money',
      summary: 'Inbound mobile-money provider notification (signed); 200 once recorded',
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
        const provider = sandbox ? providers.sandboxMobileMoney : providers.liveMobileMoney;
        const notification = provider?.parseNotification(raw, headers) ?? null;
        if (!provider || !notification) {
          throw new AppError('invalid_request', 'Invalid notification signature');
        }
        const delivered = await deliverNotification(
          deps,
          { name: provider.name, mode: sandbox ? 'test' : 'live' },
          notification,
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
    }),
  ];
}
