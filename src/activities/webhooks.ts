import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { Config } from '../config';
import type { DatabasePool, DatabaseTransactionConnection } from '../db/pool';
import {
  deferDelivery,
  findEvent,
  recordDeliveryAttempt,
  relayEventBatch,
  stopDelivery,
  type DeliveryTarget,
} from '../db/webhook-deliveries';
import { listenForEvents, type EventListener } from '../db/webhook-listener';
import {
  eraseExpiredPreviousSecrets,
  findSubscriptionForDelivery,
  noteDeliveryOutcome,
  previousSecretBinding,
  resealWebhookSecret,
} from '../db/webhook-subscriptions';
import { endpointGate, type EndpointLease } from '../outbound/endpoint-gate';
import { seal, SecretBoxError, webhookSecretKey } from '../crypto/secret-box';
import { webhookSigningSecrets } from '../outbound/webhook-secrets';
import {
  postWebhook,
  signedDelivery,
  WEBHOOK_ANSWER_MAX_BYTES,
  WEBHOOK_TIMEOUT_MS,
} from '../outbound/webhook-post';
import { startWebhookDelivery } from '../temporal/webhook-deliveries';
import { webhookRelayId } from '../workflows/ids';

/** Events claimed per relay transaction. */
const RELAY_BATCH = 200;
/** How long one relay activity runs before it returns to its workflow. */
const RELAY_ROUND_MS = 60_000;
/** The longest wait for a notification before the relay reads the table anyway. */
const RELAY_IDLE_WAIT_MS = 1_000;
/** The attempt's error when WEBHOOK_SECRET_KEY is not the key that sealed the secret. */
const UNREADABLE_SECRET =
  'The subscription secret cannot be read with the configured WEBHOOK_SECRET_KEY; recreate the subscription';
/** Workflow starts in flight at once. */
const START_CONCURRENCY = 16;

/** The failure type of an attempt sent back to the queue by its endpoint's bound. */
export const ENDPOINT_BUSY = 'WebhookEndpointBusy';

export type WebhookAttemptInput = DeliveryTarget & {
  attempt: number;
  /** The wait before the next attempt should this one fail; null: this is the last. */
  retryInMs: number | null;
  /**
   * The workflow's local first attempt: when the endpoint is at its bound or its last attempt
   * failed, answer `queued` at once (nothing sent or written), and the workflow queues it.
   */
  queueWhenBusy?: boolean;
};

export type WebhookAttemptResult = {
  status: 'delivered' | 'pending' | 'failed' | 'stopped' | 'queued';
  attempts: number;
  statusCode: number | null;
  error: string | null;
  /**
   * `pending`: the wait before the next attempt, the input's `retryInMs` or later when the
   * endpoint's queue reaches past it (absent in results recorded before: `retryInMs`).
   */
  nextAttemptInMs?: number;
};

/**
 * Starts the relay workflow unless it runs: at worker start-up, and from the maintenance
 * schedule, so a relay terminated by hand comes back within minutes. A relay still running on
 * another queue (the money queue, before webhooks had their own) is replaced.
 */
export async function ensureWebhookRelay(client: Client, taskQueue: string): Promise<void> {
  const workflowId = webhookRelayId(taskQueue);
  const handle = client.workflow.getHandle(workflowId);
  const running = await handle.describe().catch((error: unknown) => {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  });
  if (running?.status.name === 'RUNNING' && running.taskQueue !== taskQueue) {
    // Safe at any point: the relay's state is the outbox table, claimed row by row.
    await handle.terminate(`the relay moves to task queue ${taskQueue}`).catch((error: unknown) => {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    });
  }
  await client.workflow.start('webhookRelayWorkflow', {
    workflowId,
    taskQueue,
    args: [],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}

async function startAll(client: Client, taskQueue: string, targets: readonly DeliveryTarget[]) {
  for (let i = 0; i < targets.length; i += START_CONCURRENCY) {
    await Promise.all(
      targets
        .slice(i, i + START_CONCURRENCY)
        .map((t) => startWebhookDelivery(client, taskQueue, t)),
    );
  }
}

export function createWebhookActivities(deps: {
  pool: DatabasePool;
  config: Config;
  stopping?: AbortSignal;
}) {
  const { pool, config } = deps;
  let key: Buffer | undefined;
  const secretKey = () => (key ??= webhookSecretKey(config));
  // One per process: the money worker's drain of old deliveries shares it with the webhook worker.
  const gate = endpointGate({ perEndpoint: config.webhooks.attemptsPerEndpoint });

  /** The local first attempt's answer when its endpoint is busy or failing: queue it. */
  const queued = (input: WebhookAttemptInput): WebhookAttemptResult => ({
    status: 'queued',
    attempts: input.attempt - 1,
    statusCode: null,
    error: null,
  });

  /**
   * One relay round: claims unrelayed events, starts a delivery per matching subscription, waits
   * for the next commit (LISTEN). Ends after a minute, when cancelled, or when its worker begins
   * to stop, so the next round runs on a worker that stays.
   */
  async function relayWebhookEvents(): Promise<{ relayed: number }> {
    const context = Context.current();
    const { client } = context;
    const taskQueue = config.temporal.webhookTaskQueue;
    const signal = context.cancellationSignal;
    const ended = deps.stopping ? AbortSignal.any([signal, deps.stopping]) : signal;
    const databaseUrl = config.database.url;
    let listener: EventListener | undefined;
    let relayed = 0;
    try {
      if (databaseUrl) listener = await listenForEvents(databaseUrl);
      const until = Date.now() + RELAY_ROUND_MS;
      while (Date.now() < until && !ended.aborted) {
        context.heartbeat({ relayed });
        const claimed = await relayEventBatch(pool, RELAY_BATCH, (targets) =>
          startAll(client, taskQueue, targets),
        );
        relayed += claimed;
        if (claimed === RELAY_BATCH) continue;
        if (listener) await listener.wait(RELAY_IDLE_WAIT_MS, ended);
        else await context.sleep(RELAY_IDLE_WAIT_MS).catch(() => undefined);
      }
    } finally {
      await listener?.close();
    }
    // A round cut short by the worker's shutdown fails, so Temporal runs it again elsewhere.
    if (signal.aborted) context.cancellationSignal.throwIfAborted();
    return { relayed };
  }

  /**
   * One attempt under its endpoint's bound (docs/api.md, Webhooks): the subscription as it is
   * now, a POST signed with its current secret through the address guard, and its record.
   */
  async function attemptWebhookDelivery(input: WebhookAttemptInput): Promise<WebhookAttemptResult> {
    const target = {
      eventId: input.eventId,
      subscriptionId: input.subscriptionId,
      redelivery: input.redelivery ?? 0,
    };
    const endpoint = input.subscriptionId;
    if (input.queueWhenBusy && gate.failing(endpoint)) return queued(input);
    const lease = gate.enter(endpoint);
    if (!lease) {
      if (input.queueWhenBusy) return queued(input);
      // Back to Temporal's queue, which holds it at no cost; never lost, for the retry policy
      // has no bound, and not an error either (the SDK logs it at debug).
      const waitMs = gate.deferralMs(endpoint);
      await deferDelivery(pool, target, waitMs);
      throw ApplicationFailure.create({
        type: ENDPOINT_BUSY,
        message: `The endpoint has ${config.webhooks.attemptsPerEndpoint} attempts running`,
        nextRetryDelay: waitMs,
        category: ApplicationFailureCategory.BENIGN,
      });
    }
    try {
      return await attemptNow(input, target, lease);
    } finally {
      lease.leave();
    }
  }

  /** The attempt itself; its lease is left as soon as its POST is over. */
  async function attemptNow(
    input: WebhookAttemptInput,
    target: Required<DeliveryTarget>,
    lease: EndpointLease,
  ): Promise<WebhookAttemptResult> {
    const [event, subscription] = await Promise.all([
      findEvent(pool, input.eventId),
      findSubscriptionForDelivery(pool, target),
    ]);
    const reason = !event
      ? 'Event not found'
      : !subscription
        ? 'Subscription deleted'
        : !subscription.is_active
          ? 'Subscription disabled'
          : !subscription.events.includes(event.type)
            ? 'Subscription no longer selects this event type'
            : subscription.delivery_status === 'failed'
              ? 'Delivery stopped when the subscription was turned off'
              : null;
    if (reason || !event || !subscription) {
      const row = await stopDelivery(pool, target, reason ?? 'Stopped');
      return { status: 'stopped', attempts: row.attempts, statusCode: null, error: reason };
    }
    let secrets: string[] | undefined;
    try {
      const opened = webhookSigningSecrets(
        secretKey(),
        subscription,
        previousSecretBinding(subscription.id),
      );
      secrets = opened.secrets;
      // A rotated secret past its overlap is erased as soon as it is seen.
      if (opened.previousExpired) await eraseExpiredPreviousSecrets(pool, subscription.id);
      if (opened.legacy) {
        // Sealed before secrets were bound to their subscription: bind it now.
        const bound = seal(secretKey(), opened.secrets[0]!, subscription.id);
        await resealWebhookSecret(pool, subscription.id, subscription.secret_sealed, bound);
      }
    } catch (error) {
      // Not retried as a fault of ours for ever: the attempt fails and the schedule goes on.
      if (!(error instanceof SecretBoxError)) throw error;
    }
    const outcome = secrets
      ? await postWebhook(
          subscription.url,
          signedDelivery(
            {
              id: event.id,
              type: event.type,
              created_at: event.created_at,
              mode: event.mode,
              data: event.data,
            },
            secrets,
          ),
          {
            allowlist: config.webhooks.privateAllowlist,
            httpsOnly: subscription.mode === 'live',
            timeoutMs: WEBHOOK_TIMEOUT_MS,
            maxBodyBytes: WEBHOOK_ANSWER_MAX_BYTES,
          },
        )
      : { statusCode: null, error: UNREADABLE_SECRET, durationMs: 0 };
    const ok = outcome.error === null;
    if (secrets) lease.leave({ durationMs: outcome.durationMs, ok });
    const status = ok ? 'delivered' : input.retryInMs === null ? 'failed' : 'pending';
    // Taken after the lease is left, so the endpoint's queue counts this failure.
    const retryInMs =
      status === 'pending' && input.retryInMs !== null
        ? gate.retryMs(input.subscriptionId, input.retryInMs)
        : input.retryInMs;
    // Turning a failing endpoint off is decided here, on the attempt's own outcome; a 2xx on a
    // subscription that was not failing costs no write.
    const note =
      !ok || subscription.failing_since !== null
        ? (trx: DatabaseTransactionConnection) => noteDeliveryOutcome(trx, subscription.id, ok)
        : undefined;
    const row = await recordDeliveryAttempt(
      pool,
      {
        ...target,
        attempt: input.attempt,
        url: subscription.url,
        statusCode: outcome.statusCode,
        error: outcome.error,
        durationMs: outcome.durationMs,
        status,
        retryInMs,
      },
      note,
    );
    return {
      status,
      attempts: row.attempts,
      statusCode: outcome.statusCode,
      error: outcome.error,
      ...(status === 'pending' && retryInMs !== null ? { nextAttemptInMs: retryInMs } : {}),
    };
  }

  /** The maintenance schedule's check that the relay runs. */
  async function ensureWebhookRelayRuns(): Promise<void> {
    await ensureWebhookRelay(Context.current().client, config.temporal.webhookTaskQueue);
  }

  return { relayWebhookEvents, attemptWebhookDelivery, ensureWebhookRelayRuns };
}
