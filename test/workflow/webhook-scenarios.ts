/**
 * The webhook workflows' recorded scenarios (replayed by test/workflow/replay.test.ts), on the
 * time-skipping test server with mocked activities. Plain functions, no jest (the recorder
 * runs outside jest).
 */
import { WorkflowContinuedAsNewError, type WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WebhookAttemptInput, WebhookAttemptResult } from '../../src/activities/webhooks';
import { webhookDeliveryId, webhookRelayId } from '../../src/workflows/ids';
import { webhookDeliveryWorkflow, webhookRelayWorkflow } from '../../src/workflows/webhook';

const EVENT = 'c0000000-0000-4000-8000-000000000001';
const SUBSCRIPTION = 'c0000000-0000-4000-8000-000000000002';

/** The endpoint answers 503 twice, then 200: two timers (5 s, 30 s), three attempts. */
export const webhookDeliveryRetried = {
  name: 'webhook-delivery-retried',
  activities: () => ({
    attemptWebhookDelivery: (input: WebhookAttemptInput): Promise<WebhookAttemptResult> =>
      Promise.resolve(
        input.attempt < 3
          ? { status: 'pending', attempts: input.attempt, statusCode: 503, error: 'HTTP 503' }
          : { status: 'delivered', attempts: input.attempt, statusCode: 200, error: null },
      ),
  }),
  play: async (env: TestWorkflowEnvironment, taskQueue: string) => {
    const handle = await env.client.workflow.start(webhookDeliveryWorkflow, {
      workflowId: webhookDeliveryId(EVENT, SUBSCRIPTION),
      taskQueue,
      args: [{ eventId: EVENT, subscriptionId: SUBSCRIPTION }],
    });
    return { handle, result: await handle.result() };
  },
};

/** The subscription was disabled before the first attempt: the delivery stops at once. */
export const webhookDeliveryStopped = {
  name: 'webhook-delivery-stopped',
  activities: () => ({
    attemptWebhookDelivery: (input: WebhookAttemptInput): Promise<WebhookAttemptResult> =>
      Promise.resolve({
        status: 'stopped',
        attempts: input.attempt - 1,
        statusCode: null,
        error: 'Subscription disabled',
      }),
  }),
  play: async (env: TestWorkflowEnvironment, taskQueue: string) => {
    const handle = await env.client.workflow.start(webhookDeliveryWorkflow, {
      workflowId: webhookDeliveryId(EVENT, 'c0000000-0000-4000-8000-000000000003'),
      taskQueue,
      args: [{ eventId: EVENT, subscriptionId: 'c0000000-0000-4000-8000-000000000003' }],
    });
    return { handle, result: await handle.result() };
  },
};

/** One run of the relay: its rounds, then continue-as-new (the history of that first run). */
export const webhookRelay = {
  name: 'webhook-relay',
  activities: () => ({
    relayWebhookEvents: () => Promise.resolve({ relayed: 1 }),
  }),
  play: async (
    env: TestWorkflowEnvironment,
    taskQueue: string,
  ): Promise<{ handle: WorkflowHandle; continued: boolean }> => {
    const started = await env.client.workflow.start(webhookRelayWorkflow, {
      workflowId: webhookRelayId(taskQueue),
      taskQueue,
    });
    const handle = env.client.workflow.getHandle(started.workflowId, started.firstExecutionRunId, {
      followRuns: false,
    });
    let continued = false;
    try {
      await handle.result();
    } catch (error) {
      if (!(error instanceof WorkflowContinuedAsNewError)) throw error;
      continued = true;
    }
    await started.terminate('recorded');
    return { handle, continued };
  },
};

export const WEBHOOK_SCENARIOS = [webhookDeliveryRetried, webhookDeliveryStopped, webhookRelay];
