import { allHandlersFinished, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { AuditEntry } from '../domain/audit';
import type { Activities } from './activities-types';
import { asDeclined, exhausted } from './declines';
import { asksProviderOnNotify } from './notifications';
import { handleResolution, providerAnswer } from './resolution';
import { activityPresets } from './retry';
import {
  depositStateQuery,
  depositUpdates,
  type Declined,
  type DepositInput,
  type DepositOpened,
  type DepositOutcome,
} from './shared';
import { setPaymentStatus } from './status';
import { paymentClock } from './clock';

const ledger = proxyActivities<Activities>(activityPresets.ledger);
const provider = proxyActivities<Activities>(activityPresets.provider);
const resolver = proxyActivities<Activities>(activityPresets.resolution);

/** After the payment code expires, a last look at the provider before calling it expired. */
const EXPIRY_GRACE_MS = 5_000;

/**
 * A mobile-money deposit, started with the `open` update, which answers once the provider has made
 * the payment code. It then settles exactly once, by notification, sync, resolution or expiry:
 * paid credits the wallet in one ledger transaction; failed or expired moves no money.
 */
export async function mobileMoneyDepositWorkflow(input: DepositInput): Promise<DepositOutcome> {
  let opened: DepositOpened | undefined;
  let refused: Declined | undefined;
  let outcome: DepositOutcome = 'pending';
  let settling = false;

  const isOpen = () => opened !== undefined || refused !== undefined;
  const clock = paymentClock(input.mode);

  /**
   * The provider's view of the payment code, or null when it cannot tell: it refused (a decline)
   * or stayed unreachable through every attempt of the bounded retry.
   */
  async function askProvider(paymentCodeId: string): Promise<DepositOutcome | null> {
    try {
      return await provider.checkPaymentCode({ mode: input.mode, paymentCodeId });
    } catch (error) {
      if (asDeclined(error) || exhausted(error)) return null;
      throw error;
    }
  }

  /** Settles once; a second caller (a duplicate notification, a racing sync) waits for the first. */
  async function settle(status: DepositOutcome, audit?: AuditEntry): Promise<DepositOutcome> {
    if (!opened) return outcome;
    // A caller that found nothing new while a settlement runs gets that settlement's outcome,
    // not `pending`.
    if (outcome !== 'pending' || settling) {
      await condition(() => outcome !== 'pending');
      return outcome;
    }
    if (status === 'pending') return outcome;
    settling = true;
    if (status === 'completed') {
      await ledger.completeDeposit({ transactionId: input.transactionId, ...(audit && { audit }) });
    } else {
      await ledger.closeDeposit({
        transactionId: input.transactionId,
        status,
        ...(audit && { audit }),
      });
    }
    outcome = status;
    setPaymentStatus(status);
    return outcome;
  }

  /** Asks the provider and settles on its answer; one that cannot tell changes nothing. */
  async function sync(): Promise<DepositOutcome> {
    await condition(isOpen);
    if (!opened || outcome !== 'pending') return outcome;
    return settle((await askProvider(opened.paymentCode.id)) ?? 'pending');
  }

  setHandler(depositUpdates.open, async () => {
    await condition(isOpen);
    return (opened ?? refused)!;
  });
  setHandler(
    depositUpdates.notify,
    async ({ status }) => {
      if (asksProviderOnNotify(status)) return sync();
      await condition(isOpen);
      return settle(status);
    },
    {
      validator: ({ status }: { status: string }) => {
        if (!['pending', 'completed', 'failed', 'expired'].includes(status)) {
          throw new Error(`unknown status ${status}`);
        }
      },
    },
  );
  setHandler(depositUpdates.sync, sync);
  handleResolution(
    settle,
    () => ({ outcome, settling, waiting: opened !== undefined }),
    (asked) => {
      const code = { mode: input.mode, paymentCodeId: opened!.paymentCode.id };
      return providerAnswer(() =>
        asked === 'failed' ? resolver.cancelPaymentCode(code) : resolver.checkPaymentCode(code),
      );
    },
  );
  setHandler(depositStateQuery, () => outcome);

  try {
    opened = await provider.openDeposit(input);
  } catch (error) {
    // A provider unreachable through every attempt refuses the deposit as a refusal would.
    refused =
      asDeclined(error) ??
      (exhausted(error)
        ? { status: 'declined', code: 'provider_unavailable', detail: null }
        : undefined);
    if (!refused) throw error;
    setPaymentStatus('failed');
    await condition(allHandlersFinished);
    return 'failed';
  }

  const untilExpiry =
    Math.max(0, Date.parse(opened.paymentCode.expiresAt) - Date.now()) + EXPIRY_GRACE_MS;
  const paymentCodeId = opened.paymentCode.id;
  await clock.wait(
    () => outcome !== 'pending',
    untilExpiry,
    async () => {
      if (settling) return;
      // The code has expired at the provider: one that cannot tell any more leaves it expired.
      const last = await askProvider(paymentCodeId);
      await settle(last === 'completed' || last === 'failed' ? last : 'expired');
    },
  );
  await condition(() => outcome !== 'pending' && allHandlersFinished());
  return outcome;
}
