/**
 * Trivial workflows: what Temporal alone costs per payment, with no database and no HTTP; and the
 * transfer's real activity, regular or local, for the profile's what-if. Bundled on their own
 * (engine.ts), run on their own task queue.
 */
import { patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../../src/workflows/activities-types';
import type { TransferInput } from '../../src/workflows/shared';
import { setPaymentStatus } from '../../src/workflows/status';

export type BenchActivities = { noop: () => Promise<void> };

const { noop } = proxyActivities<BenchActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '100 milliseconds', backoffCoefficient: 2 },
});

const local = proxyLocalActivities<BenchActivities>({ startToCloseTimeout: '10 seconds' });

/** Completes in its first workflow task. */
export function emptyWorkflow(): Promise<string> {
  return Promise.resolve('done');
}

/** The shape of a transfer: one activity, then done (two workflow tasks, one activity task). */
export async function activityWorkflow(): Promise<string> {
  await noop();
  return 'done';
}

/** One local activity: runs inside the workflow task, no activity task on the server. */
export async function localActivityWorkflow(): Promise<string> {
  await local.noop();
  return 'done';
}

// For the profile's server cost by shape: what the transfer workflow adds to an empty one, step
// by step (started with the payment search attributes, setPaymentStatus upserts).

/** An empty workflow that moves `PaymentStatus`. */
export function statusWorkflow(): Promise<string> {
  setPaymentStatus('completed');
  return Promise.resolve('done');
}

/** The same with a `patched` marker (which upserts `TemporalChangeVersion` too). */
export function patchedStatusWorkflow(): Promise<string> {
  patched('bench-shape');
  setPaymentStatus('completed');
  return Promise.resolve('done');
}

/** The transfer workflow's shape: a patch, a local activity, the status upsert. */
export async function transferShapedWorkflow(): Promise<string> {
  patched('bench-shape');
  await local.noop();
  setPaymentStatus('completed');
  return 'done';
}

// What-if for the profile (--profile): the transfer's real activity, run either way.

const retry = {
  initialInterval: '100 milliseconds',
  backoffCoefficient: 2,
  maximumInterval: '5 seconds',
};
const transfer = proxyActivities<Pick<Activities, 'transferFunds'>>({
  startToCloseTimeout: '10 seconds',
  retry,
});
const localTransfer = proxyLocalActivities<Pick<Activities, 'transferFunds'>>({
  startToCloseTimeout: '10 seconds',
  retry,
});

/** src/workflows/transfer.ts without its search-attribute upsert: one regular activity. */
export async function transferWithActivity(input: TransferInput): Promise<string> {
  await transfer.transferFunds(input);
  return 'done';
}

/** The same with the activity run as a local activity, inside the workflow task. */
export async function transferWithLocalActivity(input: TransferInput): Promise<string> {
  await localTransfer.transferFunds(input);
  return 'done';
}
