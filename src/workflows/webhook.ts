import {
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  sleep,
} from '@temporalio/workflow';
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

// The first attempt is local (in the workflow task, no activity task's trips through the
// server: a healthy endpoint gets the event soonest); the others are activity tasks, which wait
// in the server's queue at no cost while the endpoint is down.
const { attemptWebhookDelivery: attemptLocally } = proxyLocalActivities<Activities>(
  activityPresets.webhookAttemptLocal,
);
const { attemptWebhookDelivery: attemptQueued } = proxyActivities<Activities>(
  activityPresets.webhookAttempt,
);
const { relayWebhookEvents } = proxyActivities<Activities>(activityPresets.webhookRelay);

type AttemptInput = Parameters<Activities['attemptWebhookDelivery']>[0];
type AttemptResult = Awaited<ReturnType<Activities['attemptWebhookDelivery']>>;
/** What an attempt made (or stopped) answers: only the local first attempt answers `queued`. */
type Attempted = AttemptResult & { status: Exclude<AttemptResult['status'], 'queued'> };

/**
 * One attempt. The local first attempt hands back an endpoint at its bound or failing (`queued`,
 * nothing sent), and it is queued instead. Deliveries recorded before attempts were activity
 * tasks keep every attempt local.
 */
async function attemptOnce(input: AttemptInput): Promise<Attempted> {
  if (!patched('webhook-attempt-activity')) return attempted(await attemptLocally(input));
  if (input.attempt === 1) {
    const outcome = await attemptLocally({ ...input, queueWhenBusy: true });
    if (outcome.status !== 'queued') return attempted(outcome);
  }
  return attempted(await attemptQueued(input));
}

function attempted(outcome: AttemptResult): Attempted {
  if (outcome.status === 'queued') throw new Error('An attempt asked to be made answered queued');
  return { ...outcome, status: outcome.status };
}

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
    const outcome = await attemptOnce({ ...input, attempt, retryInMs });
    if (outcome.status !== 'pending' || retryInMs === null) {
      const status = outcome.status === 'pending' ? 'failed' : outcome.status;
      return { status, attempts: outcome.attempts, firstAttemptAt, lastAttemptAt };
    }
    // The attempt may have put the next one later, at its place in the endpoint's queue.
    await sleep(outcome.nextAttemptInMs ?? retryInMs);
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
