import {
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
} from '@temporalio/workflow';
import type { Activities } from './activities-types';
import { asDeclined, exhausted } from './declines';
import { depositSaga, providerView } from './deposit-saga';
import { activityPresets } from './retry';
import {
  cardDepositUpdates,
  type CardDepositInput,
  type CardDepositOpened,
  type CardPaymentOpened,
  type CardPaymentState,
  type Declined,
  type DepositOutcome,
  type PaymentSinks,
} from './shared';
import { setPaymentStatus } from './status';

/**
 * The provider's and the ledger's steps are local activities, as in the transfer (see
 * docs/benchmarks.md); deposits started before replay their remote ones (`patched`, asked once
 * unless the input says `localSteps`). Each step is idempotent by id: a rerun moves nothing.
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
const { payments } = proxySinks<PaymentSinks>();

const CARD_PAYMENT_STATES: readonly string[] = [
  'succeeded',
  'requires_action',
  'processing',
  'failed',
] satisfies CardPaymentState[];

/** The deposit's outcome for what the provider says of its payment. */
const outcomeOf = (state: CardPaymentState): DepositOutcome =>
  state === 'succeeded' ? 'completed' : state === 'failed' ? 'failed' : 'pending';

/**
 * A card deposit, started with the `open` update, which answers once the card is charged or the
 * provider asks for 3-D Secure (pending, with the payer's URL); then the deposit saga settles it.
 */
export async function cardDepositWorkflow(input: CardDepositInput): Promise<DepositOutcome> {
  // A start that says so (CardDepositInput `localSteps`) asks no `patched`: no marker, no upsert.
  const { ledger, provider } =
    input.localSteps || patched('card-deposit-local-steps') ? local : remote;
  const askProvider = (ask: () => Promise<CardPaymentState>) => providerView(ask, outcomeOf);
  const check = (paymentId: string) =>
    askProvider(() => provider.checkCardPayment({ mode: input.mode, paymentId }));
  const saga = depositSaga<CardPaymentOpened, CardDepositOpened | Declined, CardPaymentState>({
    transactionId: input.transactionId,
    mode: input.mode,
    updates: cardDepositUpdates,
    statuses: CARD_PAYMENT_STATES,
    outcomeOf,
    complete: ledger.completeCardDeposit,
    close: ledger.closeCardDeposit,
    check: (payment) => check(payment.paymentId),
    resolve: async (asked, payment) => {
      const card = { mode: input.mode, paymentId: payment.paymentId };
      return outcomeOf(
        asked === 'failed'
          ? await resolver.cancelCardPayment(card)
          : await resolver.checkCardPayment(card),
      );
    },
  });

  try {
    saga.payment = await provider.openCardDeposit(input);
  } catch (error) {
    const refused =
      asDeclined(error) ??
      (exhausted(error)
        ? ({ status: 'declined', code: 'provider_unavailable', detail: null } as const)
        : undefined);
    if (!refused) throw error;
    // A decline was recorded failed by the activity; a provider unreachable through every
    // attempt leaves a pending record (if it got that far), which is closed here.
    if (!asDeclined(error)) {
      await ledger.closeCardDeposit({ transactionId: input.transactionId, status: 'failed' });
    }
    saga.answer = refused;
    saga.outcome = 'failed';
    setPaymentStatus('failed');
    payments.settled(saga.answer);
    await condition(allHandlersFinished);
    return saga.outcome;
  }

  const payment = saga.payment;
  if (payment.paymentStatus === 'succeeded') await saga.settle('completed');
  saga.answer = { status: 'opened', outcome: saga.outcome, payment };
  payments.settled(saga.answer);

  const untilExpiry = Math.max(1_000, Date.parse(payment.expiresAt) - Date.now());
  const paymentId = payment.paymentId;
  await saga.clock.wait(
    () => saga.outcome !== 'pending',
    untilExpiry,
    async () => {
      if (saga.settling) return;
      // Nobody authenticated in time: one last look; a payment still waiting is canceled at the
      // provider (so that a late authentication charges nobody) unless the cancel finds it
      // charged after all, and the deposit expires.
      let last = await check(paymentId);
      if (last !== 'completed' && last !== 'failed') {
        const canceled = await askProvider(() =>
          provider.cancelCardPayment({ mode: input.mode, paymentId }),
        );
        last = canceled === 'completed' ? 'completed' : 'expired';
      }
      await saga.settle(last);
    },
  );
  await condition(() => saga.outcome !== 'pending' && allHandlersFinished());
  return saga.outcome;
}
