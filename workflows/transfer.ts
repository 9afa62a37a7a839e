import { ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import { ActivityFailure } from '@temporalio/common';
import type { Activities } from './activities-types';
import type { Declined, TransferInput, TransferResult } from './shared';
import { setPaymentStatus } from './status';

const { transferFunds } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '100 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '5 seconds',
  },
});

/**
 * A wallet-to-wallet transfer: one atomic ledger step. A business decline (insufficient funds,
 * a disabled wallet) ends the workflow with a `declined` result and `PaymentStatus` failed;
 * transient faults are retried by Temporal, and the activity is idempotent by transaction id.
 */
export async function transferWorkflow(input: TransferInput): Promise<TransferResult> {
  try {
    await transferFunds(input);
  } catch (error) {
    const declined = asDeclined(error);
    if (!declined) throw error;
    setPaymentStatus('failed');
    return declined;
  }
  setPaymentStatus('completed');
  return { status: 'completed', transactionId: input.transactionId };
}

/** A non-retryable application failure raised by an activity is a business decline. */
export function asDeclined(error: unknown): Declined | null {
  if (!(error instanceof ActivityFailure)) return null;
  const cause = error.cause;
  if (!(cause instanceof ApplicationFailure) || !cause.nonRetryable || !cause.type) return null;
  return { status: 'declined', code: cause.type, detail: cause.message };
}
