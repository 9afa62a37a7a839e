import { patched, proxyActivities, proxyLocalActivities, proxySinks } from '@temporalio/workflow';
import type { Activities } from './activities-types';
import { asDeclined } from './declines';
import { activityPresets } from './retry';
import type { PaymentSinks, TransferInput, TransferResult } from './shared';
import { setPaymentStatus } from './status';

/**
 * The ledger step is a local activity, sparing the activity task's trips through the server (see
 * docs/benchmarks.md) while the history still shows it. Older workflows replay their recorded
 * remote activity: `patched`, asked only when the input lacks `localSteps` (see TransferInput).
 */
const local = proxyLocalActivities<Activities>(activityPresets.transfer);

const remote = proxyActivities<Activities>(activityPresets.transfer);

/** Tells the API of this worker's process how the transfer settled (src/temporal/settlements.ts). */
const { payments } = proxySinks<PaymentSinks>();

/**
 * A wallet-to-wallet transfer: one atomic ledger step. A business decline (insufficient funds,
 * a disabled wallet) ends the workflow with a `declined` result and `PaymentStatus` failed;
 * transient faults are retried by Temporal, and the activity is idempotent by transaction id.
 */
export async function transferWorkflow(input: TransferInput): Promise<TransferResult> {
  // A start that says so (TransferInput `localSteps`) asks no `patched`: no marker, no upsert.
  const transferFunds =
    input.localSteps || patched('transfer-local-ledger-step')
      ? local.transferFunds
      : remote.transferFunds;
  let written: Awaited<ReturnType<typeof transferFunds>>;
  try {
    written = await transferFunds(input);
  } catch (error) {
    const declined = asDeclined(error);
    if (!declined) throw error;
    setPaymentStatus('failed');
    payments.settled(declined);
    return declined;
  }
  setPaymentStatus('completed');
  const completed: TransferResult = {
    status: 'completed',
    transactionId: input.transactionId,
    ...(written.transaction ? { transaction: written.transaction } : {}),
    ...(written.answered ? { answered: true as const } : {}),
  };
  payments.settled(completed);
  return completed;
}
