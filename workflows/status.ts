import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { SearchAttributes } from './shared';

export type PaymentStatusValue =
  'pending' | 'held' | 'completed' | 'failed' | 'expired' | 'reversed';

/**
 * Moves the `PaymentStatus` search attribute, which operators filter on in the Temporal UI.
 * Only a workflow started with the payment search attributes (the API always sets them) upserts
 * it: a server without them registered would otherwise refuse the workflow task.
 */
export function setPaymentStatus(status: PaymentStatusValue): void {
  if (workflowInfo().typedSearchAttributes.get(SearchAttributes.PaymentStatus) === undefined)
    return;
  upsertSearchAttributes([{ key: SearchAttributes.PaymentStatus, value: status }]);
}
