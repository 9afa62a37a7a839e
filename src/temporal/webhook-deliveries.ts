import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  type Client,
} from '@temporalio/client';
import type { DeliveryTarget } from '../db/webhook-deliveries';
import { webhookDeliveryId } from '../workflows/ids';

/**
 * Starts one delivery workflow (the relay's, or a redelivery the API asked for); one that
 * already exists, running or closed, is left alone.
 */
export async function startWebhookDelivery(
  client: Client,
  taskQueue: string,
  target: DeliveryTarget,
): Promise<void> {
  try {
    await client.workflow.start('webhookDeliveryWorkflow', {
      workflowId: webhookDeliveryId(target.eventId, target.subscriptionId, target.redelivery),
      taskQueue,
      args: [target],
      // A relay that retries after a crash must not deliver a closed delivery again.
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}
