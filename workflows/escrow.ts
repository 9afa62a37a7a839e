import {
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  setHandler,
  uuid4,
} from '@temporalio/workflow';
import type { Activities } from './activities-types';
import {
  escrowStateQuery,
  escrowUpdates,
  type EscrowStepResult,
  type HoldInput,
  type PaymentSinks,
  type RefundRequest,
} from './shared';
import { addPaymentWallet, setPaymentStatus } from './status';
import { paymentClock } from './clock';
import { asDeclined } from './declines';
import { activityPresets } from './retry';

/**
 * The money steps are local activities (one marker each in the history, no activity task
 * through the server), as in the transfer workflow. Holds started before that change replay
 * their recorded remote activities: `patched` is asked once, at the start, of a hold whose input
 * does not say `localSteps` (every start says it since; see HoldInput).
 *
 * A local activity's marker is written with the workflow task that ran it, so a step runs again
 * when that task fails: a worker lost mid-task, or the task that would end the workflow while
 * an update it has not seen waits (the time-skipping test server fails that task; the dev
 * server ends the workflow and aborts the update, which the API answers as not held). The steps
 * are idempotent by their ids, and one made already answers with what is held now, so `held`
 * stays the ledger's (test/workflow/local-step-race.test.ts shows both servers).
 */
const local = proxyLocalActivities<Activities>(activityPresets.ledger);
const remote = proxyActivities<Activities>(activityPresets.ledger);

/** Tells the API of this worker's process how the hold went (temporal/settlements.ts). */
const { payments } = proxySinks<PaymentSinks>();

/**
 * One escrow hold: lives while anything is held. Started with the `hold` update, which answers
 * once the amount has moved from the sender's wallet to the escrow account; `release` (possibly
 * partial) and `refund` are updates, run one at a time so that a release and a refund racing
 * on the hold never pay out more than was held; `expires_at` refunds what is left.
 */
export async function escrowWorkflow(input: HoldInput): Promise<{ held: string }> {
  // A start that says so (HoldInput `localSteps`) asks no `patched`: no marker, no upsert.
  const { holdFunds, releaseFunds, refundFunds } =
    input.localSteps || patched('escrow-local-ledger-steps') ? local : remote;
  const clock = paymentClock(input.mode);
  let opened: EscrowStepResult | undefined;
  let held = 0n;
  // A ticket per money step, served in order. A `busy` flag is not enough: `condition` unblocks
  // every waiter whose predicate holds in the same pass, before any of them can set the flag,
  // so two queued steps would run at once (and `held` would take whichever answered last).
  let issued = 0;
  let served = 0;
  const busy = () => served < issued;

  /** Runs one money step at a time, in the order the updates arrived. */
  async function exclusive(step: () => Promise<EscrowStepResult>): Promise<EscrowStepResult> {
    const ticket = issued++;
    await condition(() => opened !== undefined && served === ticket);
    try {
      if (opened?.status !== 'done') return opened!;
      const result = await step().catch((error: unknown) => {
        const declined = asDeclined(error);
        if (!declined) throw error;
        return declined;
      });
      if (result.status === 'done') held = BigInt(result.remaining);
      return result;
    } finally {
      served++;
    }
  }

  let refunded = false;
  const refund = async (request: RefundRequest) => {
    const result = await exclusive(() => refundFunds({ holdId: input.holdId, ...request }));
    if (result.status === 'done') refunded = true;
    return result;
  };

  setHandler(escrowUpdates.hold, async () => {
    await condition(() => opened !== undefined);
    return opened!;
  });
  setHandler(escrowUpdates.release, async (request) => {
    const result = await exclusive(() => releaseFunds({ holdId: input.holdId, ...request }));
    if (result.status === 'done') addPaymentWallet(request.recipientWalletId);
    return result;
  });
  setHandler(escrowUpdates.refund, refund);
  setHandler(escrowStateQuery, () => ({
    held: held.toString(),
    status: opened === undefined ? 'opening' : held > 0n ? 'held' : 'closed',
  }));

  try {
    opened = await holdFunds(input);
    held = BigInt(input.amount);
    // A new run of a hold made before (a request retried after its first run ended: released,
    // refunded) is answered what is held now, perhaps nothing, and holds that, not the amount.
    // `patched` is asked only then, so that every other hold replays and runs as before.
    if (
      opened.status === 'done' &&
      BigInt(opened.remaining) !== held &&
      patched('escrow-hold-made-before-holds-what-is-left')
    ) {
      held = BigInt(opened.remaining);
    }
  } catch (error) {
    opened = asDeclined(error) ?? undefined;
    if (!opened) throw error;
    setPaymentStatus('failed');
    payments.settled(opened);
    await condition(allHandlersFinished);
    return { held: '0' };
  }
  setPaymentStatus('held');
  payments.settled(opened);

  if (input.expiresAt === null) {
    await condition(() => held === 0n);
  } else {
    const untilExpiry = Math.max(0, Date.parse(input.expiresAt) - Date.now());
    await clock.wait(
      () => held === 0n,
      untilExpiry,
      () => refund({ refundId: uuid4(), reason: 'expired' }),
    );
  }
  await condition(() => !busy() && allHandlersFinished());
  // What an operator filters on: released in the end, or given back to the sender.
  setPaymentStatus(refunded ? 'reversed' : 'completed');
  return { held: held.toString() };
}
