import { allHandlersFinished, condition, proxyActivities } from '@temporalio/workflow';
import type { Activities } from './activities-types';
import { asDeclined, exhausted } from './declines';
import { depositSaga, providerView } from './deposit-saga';
import { activityPresets } from './retry';
import {
  depositUpdates,
  type Declined,
  type DepositInput,
  type DepositOpened,
  type DepositOutcome,
} from './shared';
import { setPaymentStatus } from './status';

const ledger = proxyActivities<Activities>(activityPresets.ledger);
const provider = proxyActivities<Activities>(activityPresets.provider);
const resolver = proxyActivities<Activities>(activityPresets.resolution);

/** After the payment code expires, a last look at the provider before calling it expired. */
const EXPIRY_GRACE_MS = 5_000;

/** A payment code's status is the deposit's outcome. */
const outcomeOf = (status: DepositOutcome): DepositOutcome => status;

/**
 * A mobile-money deposit, started with the `open` update, which answers once the provider has made
 * the payment code; then the deposit saga (src/workflows/deposit-saga.ts) settles it exactly once.
 */
export async function mobileMoneyDepositWorkflow(input: DepositInput): Promise<DepositOutcome> {
  const askProvider = (paymentCodeId: string) =>
    providerView(() => provider.checkPaymentCode({ mode: input.mode, paymentCodeId }), outcomeOf);
  const saga = depositSaga<DepositOpened, DepositOpened | Declined, DepositOutcome>({
    transactionId: input.transactionId,
    mode: input.mode,
    updates: depositUpdates,
    statuses: ['pending', 'completed', 'failed', 'expired'],
    outcomeOf,
    complete: ledger.completeDeposit,
    close: ledger.closeDeposit,
    check: (opened) => askProvider(opened.paymentCode.id),
    resolve: (asked, opened) => {
      const code = { mode: input.mode, paymentCodeId: opened.paymentCode.id };
      return asked === 'failed'
        ? resolver.cancelPaymentCode(code)
        : resolver.checkPaymentCode(code);
    },
  });

  try {
    saga.payment = await provider.openDeposit(input);
  } catch (error) {
    // A provider unreachable through every attempt refuses the deposit as a refusal would.
    saga.answer =
      asDeclined(error) ??
      (exhausted(error)
        ? { status: 'declined', code: 'provider_unavailable', detail: null }
        : undefined);
    if (!saga.answer) throw error;
    setPaymentStatus('failed');
    await condition(allHandlersFinished);
    return 'failed';
  }
  saga.answer = saga.payment;

  const { expiresAt, id: paymentCodeId } = saga.payment.paymentCode;
  const untilExpiry = Math.max(0, Date.parse(expiresAt) - Date.now()) + EXPIRY_GRACE_MS;
  await saga.clock.wait(
    () => saga.outcome !== 'pending',
    untilExpiry,
    async () => {
      if (saga.settling) return;
      // The code has expired at the provider: one that cannot tell any more leaves it expired.
      const last = await askProvider(paymentCodeId);
      await saga.settle(last === 'completed' || last === 'failed' ? last : 'expired');
    },
  );
  await condition(() => saga.outcome !== 'pending' && allHandlersFinished());
  return saga.outcome;
}
