import {
  allHandlersFinished,
  condition,
  getExternalWorkflowHandle,
  patched,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { AuditEntry } from '../domain/audit';
import type { Activities } from './activities-types';
import { batchItemAnswered } from './batch-shared';
import { asDeclined, exhausted } from './declines';
import { asksProviderOnNotify } from './notifications';
import {
  moneyOutStateQuery,
  moneyOutUpdates,
  type MoneyOutInput,
  type MoneyOutOpened,
  type MoneyOutOutcome,
  type MoneyOutProviderStatus,
} from './money-out-shared';
import { handleResolution, providerAnswer } from './resolution';
import { activityPresets } from './retry';
import type { Declined, PaymentSinks } from './shared';
import { setPaymentStatus } from './status';
import { paymentClock } from './clock';

/**
 * A refund's provider and ledger steps are local activities, as in the transfer (see
 * docs/benchmarks.md); refunds started before replay their remote ones (`patched`, asked once
 * unless the input says `localSteps`), and the other kinds keep theirs. Each step is idempotent.
 */
const local = {
  ledger: proxyLocalActivities<Activities>(activityPresets.ledger),
  provider: proxyLocalActivities<Activities>(activityPresets.provider),
};
const remote = {
  ledger: proxyActivities<Activities>(activityPresets.ledger),
  provider: proxyActivities<Activities>(activityPresets.provider),
};
const resolver = proxyActivities<Activities>(activityPresets.resolution);

/** Tells the API of this worker's process what `open` answers (src/temporal/settlements.ts). */
const { payments } = proxySinks<PaymentSinks<MoneyOutOpened | Declined>>();

/** Whether this saga runs its steps locally: asked once, at its start. */
const runsLocally = (input: MoneyOutInput): boolean =>
  input.localSteps === true || (input.kind === 'refund' && patched('refund-local-steps'));

/**
 * A provider that stayed unreachable through a whole bounded retry may still have paid: the
 * payout is asked for again (same idempotency key) after this pause, never given back blind.
 */
const RESEND_PAUSE_MS = 60_000;

const PROVIDER_STATUSES: readonly string[] = [
  'pending',
  'completed',
  'failed',
] satisfies MoneyOutProviderStatus[];

/**
 * The money-out saga, each kind's workflow under its own name (docs/architecture.md, The money-out
 * path): reserve, ask the provider (key from the transaction id), then settle or give back, each
 * step once; where a paid payout may be reported failed later, it stays that window to reverse it.
 */
export async function moneyOutSaga(input: MoneyOutInput): Promise<MoneyOutOutcome> {
  const { ledger, provider } = runsLocally(input) ? local : remote;
  const id = { transactionId: input.transactionId };
  let answer: MoneyOutOpened | Declined | undefined;
  /** The signal that tells a bulk payment this saga's answer, once sent (`answerOnce`). */
  let parentTold: Promise<void> | undefined;
  let outcome: MoneyOutOutcome = 'pending';
  let accepted = false;
  let settling = false;
  /** After a settlement, while the kind's provider may still report the payout failed. */
  let lateWindowOpen = false;
  let lateFailure = false;
  const clock = paymentClock(input.mode);

  const opened = (): MoneyOutOpened => ({
    status: 'opened',
    transactionId: input.transactionId,
    outcome,
  });

  /** The provider's view of the payout, or null when it cannot tell (a decline, a fault). */
  async function askProvider(): Promise<MoneyOutProviderStatus | null> {
    try {
      return (await provider.checkMoneyOut(id)).status;
    } catch (error) {
      if (asDeclined(error) || exhausted(error)) return null;
      throw error;
    }
  }

  /** Settles once; a second caller (a duplicate notification, a racing sync) waits for it. */
  async function settle(
    status: MoneyOutProviderStatus,
    audit?: AuditEntry,
  ): Promise<MoneyOutOutcome> {
    if (!accepted) return outcome;
    if (outcome !== 'pending' || settling) {
      await condition(() => outcome !== 'pending');
      return outcome;
    }
    if (status === 'pending') return outcome;
    settling = true;
    const step = { ...id, ...(audit && { audit }) };
    if (status === 'completed') await ledger.settleMoneyOut(step);
    else await ledger.giveBackMoneyOut(step);
    outcome = status;
    setPaymentStatus(status);
    return outcome;
  }

  /**
   * Gives `open` its answer once, and tells this process's API (src/temporal/settlements.ts) and
   * the bulk payment that started it, if one did (a saga with no parent sends nothing more).
   */
  function answerOnce(value: MoneyOutOpened | Declined): void {
    if (answer !== undefined) return;
    answer = value;
    payments.settled(value);
    const parent = workflowInfo().parent;
    if (parent) {
      // No run id: the batch may have continued as new since it started this saga. A batch
      // gone (terminated) has no one to tell.
      parentTold = getExternalWorkflowHandle(parent.workflowId)
        .signal(batchItemAnswered, { transactionId: input.transactionId, answer: value })
        .catch(() => undefined);
    }
  }

  /** Ends a saga that never reached the provider's acceptance. */
  async function end(declined: Declined): Promise<MoneyOutOutcome> {
    answerOnce(declined);
    outcome = 'failed';
    setPaymentStatus('failed');
    await condition(allHandlersFinished);
    // A signal still on its way when the sender ends is never delivered.
    await parentTold;
    return outcome;
  }

  const isOpen = () => accepted || answer !== undefined;
  setHandler(moneyOutUpdates.open, async () => {
    await condition(() => answer !== undefined);
    return answer!;
  });
  /** Asks the provider and settles on its answer; one that cannot tell changes nothing. */
  async function sync(): Promise<MoneyOutOutcome> {
    await condition(isOpen);
    if (!accepted || outcome !== 'pending') return outcome;
    return settle((await askProvider()) ?? 'pending');
  }

  /** Reverses a settled payout the provider reports failed while the late window is open. */
  async function reverse(): Promise<MoneyOutOutcome> {
    lateFailure = true;
    await condition(() => outcome === 'failed');
    return outcome;
  }

  setHandler(
    moneyOutUpdates.notify,
    async ({ status }) => {
      const asks = asksProviderOnNotify(status);
      await condition(isOpen);
      const late = () => status === 'failed' && outcome === 'completed' && lateWindowOpen;
      if (!asks) return late() ? reverse() : settle(status);
      if (!late()) return sync();
      // A paid payout goes back to the wallet only when the provider itself says it failed.
      return (await askProvider()) === 'failed' && late() ? reverse() : outcome;
    },
    {
      validator: ({ status }: { status: string }) => {
        if (!PROVIDER_STATUSES.includes(status)) throw new Error(`unknown status ${status}`);
      },
    },
  );
  setHandler(moneyOutUpdates.sync, sync);
  handleResolution(
    settle,
    () => ({ outcome, settling, waiting: accepted }),
    (asked) =>
      providerAnswer(
        async () => (await resolver.askMoneyOutForResolution({ ...id, outcome: asked })).status,
      ),
  );
  setHandler(moneyOutStateQuery, () => outcome);

  let pendingTtlMs: number;
  let lateFailureMs: number;
  try {
    const reserved = await ledger.reserveMoneyOut(input);
    pendingTtlMs = reserved.pendingTtlMs;
    // Histories recorded before late failures existed have no window: 0.
    lateFailureMs = reserved.lateFailureMs ?? 0;
  } catch (error) {
    const declined = asDeclined(error);
    if (!declined) throw error;
    return end(declined);
  }

  let payout: { status: MoneyOutProviderStatus } | undefined;
  while (payout === undefined) {
    try {
      payout = await provider.sendMoneyOut(id);
    } catch (error) {
      const refused = asDeclined(error);
      if (refused) {
        await ledger.giveBackMoneyOut(id);
        return end(refused);
      }
      if (!exhausted(error)) throw error;
      // Unreachable: the request is answered pending; the money stays reserved meanwhile.
      answerOnce(opened());
      await clock.wait(() => false, RESEND_PAUSE_MS);
    }
  }
  accepted = true;
  if (payout.status !== 'pending') await settle(payout.status);
  answerOnce(opened());

  /** The provider's answer when the pending TTL passes; still pending: another TTL. */
  const askAtTtl = async () => {
    const last = await askProvider();
    if (last === 'completed' || last === 'failed') await settle(last);
  };
  while (outcome === 'pending' && !settling) {
    if (await clock.wait(() => outcome !== 'pending' || settling, pendingTtlMs, askAtTtl)) break;
  }
  await condition(() => outcome !== 'pending');
  // Read through a function: the handlers change `outcome` while the saga awaits.
  const settledAs = (): MoneyOutOutcome => outcome;
  if (settledAs() === 'completed' && lateFailureMs > 0) {
    // Paid, but this kind's provider may still report the payout failed: then reverse.
    lateWindowOpen = true;
    await clock.wait(() => lateFailure, lateFailureMs);
    lateWindowOpen = false;
    if (lateFailure) {
      await ledger.reverseMoneyOut(id);
      outcome = 'failed';
      setPaymentStatus('failed');
    }
  }
  await condition(() => outcome !== 'pending' && allHandlersFinished());
  await parentTold;
  return outcome;
}
