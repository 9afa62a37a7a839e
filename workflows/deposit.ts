import { allHandlersFinished, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from './activities-types';
import {
  depositStateQuery,
  depositUpdates,
  type Declined,
  type DepositInput,
  type DepositOpened,
  type DepositOutcome,
} from './shared';
import { setPaymentStatus } from './status';
import { asDeclined } from './transfer';

const retry = {
  initialInterval: '200 milliseconds',
  backoffCoefficient: 2,
  maximumInterval: '10 seconds',
};

const ledger = proxyActivities<Activities>({ startToCloseTimeout: '15 seconds', retry });
// Provider calls get a longer timeout; they are safe to retry (idempotency key per deposit).
const provider = proxyActivities<Activities>({ startToCloseTimeout: '30 seconds', retry });

/** After the payment code expires, a last look at the provider before calling it expired. */
const EXPIRY_GRACE_MS = 5_000;

/**
 * A mobile-money deposit. Started with the `open` update, which answers the request as soon as
 * the provider has created the payment code; then it waits for the provider's outcome (a
 * notification, a sync, or the code's expiry) and settles exactly once: paid credits the wallet
 * in one ledger transaction, failed or expired moves no money.
 */
export async function mobileMoneyDepositWorkflow(input: DepositInput): Promise<DepositOutcome> {
  let opened: DepositOpened | undefined;
  let refused: Declined | undefined;
  let outcome: DepositOutcome = 'pending';
  let settling = false;

  const isOpen = () => opened !== undefined || refused !== undefined;

  /** Settles once; a second caller (a duplicate notification, a racing sync) waits for the first. */
  async function settle(status: DepositOutcome): Promise<DepositOutcome> {
    if (status === 'pending' || !opened) return outcome;
    if (outcome !== 'pending' || settling) {
      await condition(() => outcome !== 'pending');
      return outcome;
    }
    settling = true;
    if (status === 'completed') {
      await ledger.completeDeposit({ transactionId: input.transactionId });
    } else {
      await ledger.closeDeposit({ transactionId: input.transactionId, status });
    }
    outcome = status;
    setPaymentStatus(status);
    return outcome;
  }

  setHandler(depositUpdates.open, async () => {
    await condition(isOpen);
    return (opened ?? refused)!;
  });
  setHandler(
    depositUpdates.notify,
    async ({ status }) => {
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
  setHandler(depositUpdates.sync, async () => {
    await condition(isOpen);
    if (!opened || outcome !== 'pending') return outcome;
    return settle(
      await provider.checkPaymentCode({ mode: input.mode, paymentCodeId: opened.paymentCode.id }),
    );
  });
  setHandler(depositStateQuery, () => outcome);

  try {
    opened = await provider.openDeposit(input);
  } catch (error) {
    refused = asDeclined(error) ?? undefined;
    if (!refused) throw error;
    setPaymentStatus('failed');
    await condition(allHandlersFinished);
    return 'failed';
  }

  const untilExpiry =
    Math.max(0, Date.parse(opened.paymentCode.expiresAt) - Date.now()) + EXPIRY_GRACE_MS;
  const settled = await condition(() => outcome !== 'pending', untilExpiry);
  if (!settled && !settling) {
    const last = await provider.checkPaymentCode({
      mode: input.mode,
      paymentCodeId: opened.paymentCode.id,
    });
    await settle(last === 'completed' || last === 'failed' ? last : 'expired');
  }
  await condition(() => outcome !== 'pending' && allHandlersFinished());
  return outcome;
}
