import {
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  setHandler,
} from '@temporalio/workflow';
import type { AuditEntry } from '../domain/audit';
import type { Activities } from './activities-types';
import { asDeclined, exhausted } from './declines';
import { asksProviderOnNotify } from './notifications';
import { handleResolution, providerAnswer } from './resolution';
import { activityPresets } from './retry';
import {
  cardDepositUpdates,
  depositStateQuery,
  type CardDepositInput,
  type CardDepositOpened,
  type CardPaymentOpened,
  type CardPaymentState,
  type Declined,
  type DepositOutcome,
  type PaymentSinks,
} from './shared';
import { setPaymentStatus } from './status';
import { paymentClock } from './clock';

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

/** Tells the API of this worker's process what `open` answers (temporal/settlements.ts). */
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
 * provider asks for 3-D Secure (pending, with the payer's URL). It then settles exactly once: by
 * event, sync, resolution or expiry; charged credits the wallet, failed or expired moves no money.
 */
export async function cardDepositWorkflow(input: CardDepositInput): Promise<DepositOutcome> {
  // A start that says so (CardDepositInput `localSteps`) asks no `patched`: no marker, no upsert.
  const { ledger, provider } =
    input.localSteps || patched('card-deposit-local-steps') ? local : remote;
  let payment: CardPaymentOpened | undefined;
  let answer: CardDepositOpened | Declined | undefined;
  let outcome: DepositOutcome = 'pending';
  let settling = false;

  /** Whether the provider's payment exists, or the deposit was refused before it did. */
  const isOpen = () => payment !== undefined || answer !== undefined;
  const clock = paymentClock(input.mode);

  /** The provider's answer about the payment, or null when it cannot tell (a decline, a fault). */
  async function askProvider(ask: () => Promise<CardPaymentState>): Promise<DepositOutcome | null> {
    try {
      return outcomeOf(await ask());
    } catch (error) {
      if (asDeclined(error) || exhausted(error)) return null;
      throw error;
    }
  }
  const check = (paymentId: string) =>
    askProvider(() => provider.checkCardPayment({ mode: input.mode, paymentId }));

  /**
   * Settles once; a second caller (a duplicate event, a racing sync) waits for the first, and a
   * caller that found nothing new while a settlement runs gets its outcome too.
   */
  async function settle(status: DepositOutcome, audit?: AuditEntry): Promise<DepositOutcome> {
    if (!payment) return outcome;
    if (outcome !== 'pending' || settling) {
      await condition(() => outcome !== 'pending');
      return outcome;
    }
    if (status === 'pending') return outcome;
    settling = true;
    if (status === 'completed') {
      await ledger.completeCardDeposit({
        transactionId: input.transactionId,
        ...(audit && { audit }),
      });
    } else {
      await ledger.closeCardDeposit({
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
    if (!payment || outcome !== 'pending') return outcome;
    return settle((await check(payment.paymentId)) ?? 'pending');
  }

  setHandler(cardDepositUpdates.open, async () => {
    await condition(() => answer !== undefined);
    return answer!;
  });
  setHandler(
    cardDepositUpdates.notify,
    async ({ status }) => {
      if (asksProviderOnNotify(outcomeOf(status))) return sync();
      await condition(isOpen);
      return settle(outcomeOf(status));
    },
    {
      validator: ({ status }: { status: string }) => {
        if (!CARD_PAYMENT_STATES.includes(status)) throw new Error(`unknown status ${status}`);
      },
    },
  );
  setHandler(cardDepositUpdates.sync, sync);
  handleResolution(
    settle,
    () => ({ outcome, settling, waiting: payment !== undefined }),
    (asked) => {
      const card = { mode: input.mode, paymentId: payment!.paymentId };
      return providerAnswer(async () =>
        outcomeOf(
          asked === 'failed'
            ? await resolver.cancelCardPayment(card)
            : await resolver.checkCardPayment(card),
        ),
      );
    },
  );
  setHandler(depositStateQuery, () => outcome);

  try {
    payment = await provider.openCardDeposit(input);
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
    answer = refused;
    outcome = 'failed';
    setPaymentStatus('failed');
    payments.settled(answer);
    await condition(allHandlersFinished);
    return outcome;
  }

  if (payment.paymentStatus === 'succeeded') await settle('completed');
  answer = { status: 'opened', outcome, payment };
  payments.settled(answer);

  const untilExpiry = Math.max(1_000, Date.parse(payment.expiresAt) - Date.now());
  const paymentId = payment.paymentId;
  await clock.wait(
    () => outcome !== 'pending',
    untilExpiry,
    async () => {
      if (settling) return;
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
      await settle(last);
    },
  );
  await condition(() => outcome !== 'pending' && allHandlersFinished());
  return outcome;
}
