/**
 * The deposit saga, one for every provider: a deposit settles exactly once, by notification, sync,
 * resolution or expiry; paid credits the wallet in one ledger step, failed or expired moves no
 * money. Each provider's workflow opens its payment, answers `open` and watches its expiry.
 */
import type { UpdateDefinition } from '@temporalio/common';
import { condition, setHandler } from '@temporalio/workflow';
import type { AuditEntry } from '../domain/audit';
import { paymentClock, type PaymentClock } from './clock';
import { asDeclined, exhausted } from './declines';
import { asksProviderOnNotify } from './notifications';
import { handleResolution, providerAnswer, type ResolutionOutcome } from './resolution';
import { depositStateQuery, type DepositOutcome } from './shared';
import { setPaymentStatus } from './status';

/** What a provider gives the saga: its updates, its ledger steps and its answers. */
export type DepositProvider<P, A, S extends string> = {
  transactionId: string;
  mode: 'test' | 'live';
  updates: {
    open: UpdateDefinition<A>;
    /** The provider's notification, in its own words (`statuses`, read by `outcomeOf`). */
    notify: UpdateDefinition<DepositOutcome, [{ status: S }]>;
    sync: UpdateDefinition<DepositOutcome>;
  };
  statuses: readonly string[];
  outcomeOf(status: S): DepositOutcome;
  /** Paid: credits the wallet. */
  complete(step: { transactionId: string; audit?: AuditEntry }): Promise<unknown>;
  /** Failed or expired: moves no money. */
  close(step: {
    transactionId: string;
    status: 'failed' | 'expired';
    audit?: AuditEntry;
  }): Promise<unknown>;
  /** The provider's view of the payment, or null when it cannot tell (see `providerView`). */
  check(payment: P): Promise<DepositOutcome | null>;
  /** For an operator's resolution: the payment's status after a cancel (`failed`) or a look. */
  resolve(asked: ResolutionOutcome, payment: P): Promise<string>;
};

/** Where the deposit stands; its workflow writes `payment` and `answer` as it opens. */
export type DepositSaga<P, A> = {
  /** The provider's payment, once it exists. */
  payment: P | undefined;
  /** What `open` answers, once known: the opened deposit or its refusal. */
  answer: A | undefined;
  outcome: DepositOutcome;
  /** A settlement is being written. */
  settling: boolean;
  clock: PaymentClock;
  settle(status: DepositOutcome, audit?: AuditEntry): Promise<DepositOutcome>;
};

/**
 * The provider's view as the deposit's outcome, or null when it cannot tell: it refused (a
 * decline) or stayed unreachable through every attempt of the bounded retry.
 */
export async function providerView<T>(
  ask: () => Promise<T>,
  outcomeOf: (status: T) => DepositOutcome,
): Promise<DepositOutcome | null> {
  try {
    return outcomeOf(await ask());
  } catch (error) {
    if (asDeclined(error) || exhausted(error)) return null;
    throw error;
  }
}

/**
 * Starts the saga: the payment's clock, then the handlers of `open`, `notify`, `sync`, `resolve`
 * and the state query, in the order every recorded deposit registered them.
 */
export function depositSaga<P, A, S extends string>(
  provider: DepositProvider<P, A, S>,
): DepositSaga<P, A> {
  const saga: DepositSaga<P, A> = {
    payment: undefined,
    answer: undefined,
    outcome: 'pending',
    settling: false,
    clock: paymentClock(provider.mode),
    settle,
  };
  /** Whether the provider's payment exists, or the deposit was refused before it did. */
  const isOpen = () => saga.payment !== undefined || saga.answer !== undefined;

  /**
   * Settles once; a second caller (a duplicate notification, a racing sync) waits for the first,
   * and a caller that found nothing new while a settlement runs gets its outcome too.
   */
  async function settle(status: DepositOutcome, audit?: AuditEntry): Promise<DepositOutcome> {
    if (!saga.payment) return saga.outcome;
    if (saga.outcome !== 'pending' || saga.settling) {
      await condition(() => saga.outcome !== 'pending');
      return saga.outcome;
    }
    if (status === 'pending') return saga.outcome;
    saga.settling = true;
    if (status === 'completed') {
      await provider.complete({ transactionId: provider.transactionId, ...(audit && { audit }) });
    } else {
      await provider.close({
        transactionId: provider.transactionId,
        status,
        ...(audit && { audit }),
      });
    }
    saga.outcome = status;
    setPaymentStatus(status);
    return saga.outcome;
  }

  /** Asks the provider and settles on its answer; one that cannot tell changes nothing. */
  async function sync(): Promise<DepositOutcome> {
    await condition(isOpen);
    if (!saga.payment || saga.outcome !== 'pending') return saga.outcome;
    return settle((await provider.check(saga.payment)) ?? 'pending');
  }

  setHandler(provider.updates.open, async () => {
    await condition(() => saga.answer !== undefined);
    return saga.answer!;
  });
  setHandler(
    provider.updates.notify,
    async ({ status }) => {
      const claimed = provider.outcomeOf(status);
      if (asksProviderOnNotify(claimed)) return sync();
      await condition(isOpen);
      return settle(claimed);
    },
    {
      validator: ({ status }: { status: string }) => {
        if (!provider.statuses.includes(status)) throw new Error(`unknown status ${status}`);
      },
    },
  );
  setHandler(provider.updates.sync, sync);
  handleResolution(
    settle,
    () => ({ outcome: saga.outcome, settling: saga.settling, waiting: saga.payment !== undefined }),
    (asked) => providerAnswer(() => provider.resolve(asked, saga.payment!)),
  );
  setHandler(depositStateQuery, () => saga.outcome);
  return saga;
}
