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
 * Money steps are local activities, as in the transfer; holds started before replay their remote
 * ones (`patched`, asked once unless the input says `localSteps`). A failed workflow task reruns
 * its steps, so they are idempotent by id and answer what is held now (local-step-race.test.ts).
 */
const local = proxyLocalActivities<Activities>(activityPresets.ledger);
const remote = proxyActivities<Activities>(activityPresets.ledger);

/** Tells the API of this worker's process how the hold went (src/temporal/settlements.ts). */
const { payments } = proxySinks<PaymentSinks>();

/**
 * One escrow hold, alive while anything is held: `hold` answers once the amount is in escrow;
 * `release` and `refund` run one at a time so that racing ones never pay out more than was held;
 * `expires_at` refunds what is left.
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
