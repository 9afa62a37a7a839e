import { continueAsNew, proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { Activities } from './activities-types';
import { activityPresets } from './retry';
import { webhookNextRetryMs } from './webhook-schedule';

/**
 * One (event, subscription) pair; the workflow id is `webhook-<event id>-<subscription id>`, and
 * `-r<n>` for redelivery n (absent: 0, the relay's delivery).
 */
export type WebhookDeliveryInput = { eventId: string; subscriptionId: string; redelivery?: number };

export type WebhookDeliveryResult = {
  status: 'delivered' | 'failed' | 'stopped';
  attempts: number;
  /** Workflow time of the first and of the last attempt (ms since the epoch). */
  firstAttemptAt: number;
  lastAttemptAt: number;
};

// A local activity: the attempt runs in the workflow task, without an activity task's round
// trips through the server (lower delay from the movement to the delivery, less server load).
const { attemptWebhookDelivery } = proxyLocalActivities<Activities>(activityPresets.webhookAttempt);
const { relayWebhookEvents } = proxyActivities<Activities>(activityPresets.webhookRelay);

/**
 * Delivers one event to one subscription. Each attempt re-reads the subscription (URL, secret;
 * gone or disabled: stop); the waits are workflow timers, so they survive any restart and the
 * recorded `next_attempt_at` is the timer the workflow sets.
 */
export async function webhookDeliveryWorkflow(
  input: WebhookDeliveryInput,
): Promise<WebhookDeliveryResult> {
  const firstAttemptAt = Date.now();
  for (let attempt = 1; ; attempt += 1) {
    const lastAttemptAt = Date.now();
    const retryInMs = webhookNextRetryMs(attempt, lastAttemptAt - firstAttemptAt);
    const outcome = await attemptWebhookDelivery({ ...input, attempt, retryInMs });
    if (outcome.status !== 'pending' || retryInMs === null) {
      const status = outcome.status === 'pending' ? 'failed' : outcome.status;
      return { status, attempts: outcome.attempts, firstAttemptAt, lastAttemptAt };
    }
    await sleep(retryInMs);
  }
}

/** Relay rounds per run before continue-as-new keeps the history short. */
const ROUNDS_PER_RUN = 30;

/**
 * The outbox relay, one per task queue: each round is a long heartbeating activity that starts the
 * deliveries of events as they commit (LISTEN/NOTIFY). A crash fails the round, which Temporal
 * retries; worker start-up and the maintenance schedule restart the relay if it is terminated.
 */
export async function webhookRelayWorkflow(): Promise<void> {
  for (let round = 0; round < ROUNDS_PER_RUN; round += 1) {
    await relayWebhookEvents();
  }
  await continueAsNew<typeof webhookRelayWorkflow>();
}
