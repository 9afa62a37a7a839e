import type { Config } from '../config';
import { findApplication } from '../db/applications';
import {
  findCardDeposit,
  lockCardDeposit,
  setCardPayment,
  type CardDepositMetadata,
  type CardDepositRecord,
  type CardPaymentMetadata,
} from '../db/card-deposits';
import { systemAccountsIn, type SystemAccountMemory } from '../db/ledger';
import { recordMoneyStep } from '../db/money-steps';
import type { DatabasePool } from '../db/pool';
import type { TransactionRow } from '../db/transactions';
import { computeCardDepositFees } from '../domain/fees';
import { cardDepositCompletionPostings } from '../domain/ledger';
import { minorToMajorNumber } from '../domain/money';
import type { Mode } from '../domain/types';
import type { Providers } from '../providers';
import { UnknownPaymentMethodError, type CardPayment } from '../providers/card';
import { ProviderNotConfiguredError } from '../providers/mobile-money';
import { workflowIds } from '../workflows/ids';
import type { CardDepositInput, CardPaymentOpened, CardPaymentState } from '../workflows/shared';
import { decline } from './declines';
import { checkDepositWallet, insertPendingDeposit } from './deposit';
import { depositCompletion } from './deposit-completion';
import { transactionEventData } from './events';

/**
 * A card provider call, with an unknown payment method and missing credentials turned into
 * declines (never retried); anything else (a timeout, a 5xx) is left to the activity's bounded
 * retry, which sends the same idempotency key again.
 */
async function callCardProvider<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof UnknownPaymentMethodError) throw decline('payment_method_not_found');
    if (error instanceof ProviderNotConfiguredError)
      throw decline('provider_unavailable', error.message);
    throw error;
  }
}

/** The detail of a card decline: docs/api.md has it start `Card declined`. */
const declined = (message: string | null) =>
  decline('card_declined', message ? `Card declined: ${message}` : 'Card declined');

const paymentMetadata = (p: CardPayment): CardPaymentMetadata => ({
  id: p.id,
  status: p.status,
  next_action_url: p.nextActionUrl,
  decline_message: p.declineMessage,
});

function opened({ row, meta }: CardDepositRecord): CardPaymentOpened {
  const payment = meta.payment!;
  return {
    transactionId: row.id,
    paymentId: payment.id,
    paymentStatus: payment.status,
    nextActionUrl: payment.next_action_url,
    expiresAt: meta.expires_at,
  };
}

export function createCardDepositActivities(deps: {
  pool: DatabasePool;
  providers: Providers;
  config: Config;
  /** System account ids seen committed (src/db/ledger.ts); none to start with when absent. */
  systemAccounts?: SystemAccountMemory;
}) {
  const { pool, providers, config } = deps;
  const systemAccount = systemAccountsIn(deps.systemAccounts);

  /** The pending deposit with its fees, written once; a retry finds it. */
  async function recordPending(input: CardDepositInput): Promise<CardDepositRecord> {
    const existing = await findCardDeposit(pool, input.transactionId);
    if (existing) return existing;
    const app = await findApplication(pool, input.applicationId);
    if (!app) throw new Error(`application ${input.applicationId} does not exist`);
    // Refused before the provider is asked: no card is charged for money that cannot be credited.
    await checkDepositWallet(pool, input, app.base_currency, BigInt(input.amount));
    const card = await callCardProvider(() =>
      providers.card(input.mode).getCardMetadata(input.paymentMethodId),
    );
    const amount = BigInt(input.amount);
    const fees = computeCardDepositFees({
      card,
      baseCurrency: app.base_currency,
      amount,
      applicationFeeBps: app.fee_bps.card,
    });
    const meta: CardDepositMetadata = {
      payment_method_id: input.paymentMethodId,
      card: {
        brand: card.brand,
        country: card.country,
        funding: card.funding,
        last4: card.last4,
      },
      international: fees.international,
      provider_fee: fees.providerFee.toString(),
      application_fee: fees.applicationFee.toString(),
      total_amount_paid: fees.totalAmountToPay.toString(),
      expires_at: new Date(Date.now() + config.cards.pendingTtlSeconds * 1000).toISOString(),
      payment: null,
    };
    const row = await insertPendingDeposit(pool, input, app.base_currency, {
      id: input.transactionId,
      applicationId: input.applicationId,
      mode: input.mode,
      type: 'card_deposit',
      status: 'pending',
      currency: app.base_currency,
      amount,
      walletId: input.walletId,
      applicationFee: fees.applicationFee,
      description: 'Card deposit',
      workflowId: workflowIds.cardDeposit(input.transactionId),
      metadata: meta,
      merchantMetadata: input.metadata,
    });
    return { row, meta };
  }

  /**
   * Charges the card with the workflow id as the provider's idempotency key, so that a retry after
   * a timeout gets the same payment and never a second charge; running it again answers what it
   * answered. See docs/architecture.md, The card deposit path.
   */
  async function openCardDeposit(input: CardDepositInput): Promise<CardPaymentOpened> {
    const pending = await recordPending(input);
    // Closed before the provider ever answered (it stayed unreachable): a workflow started again
    // under the same id must not charge a card for a deposit that can no longer be credited.
    if (!pending.meta.payment && pending.row.status !== 'pending') {
      throw decline('provider_unavailable');
    }
    if (pending.meta.payment) {
      if (pending.meta.payment.status === 'failed' && pending.row.status === 'failed') {
        throw declined(pending.meta.payment.decline_message);
      }
      return opened(pending);
    }
    const { row, meta } = pending;
    const payment = await callCardProvider(() =>
      providers.card(input.mode).createPayment({
        idempotencyKey: workflowIds.cardDeposit(row.id),
        reference: row.id,
        amount: BigInt(meta.total_amount_paid),
        currency: row.currency,
        paymentMethodId: meta.payment_method_id,
        description: `Deposit to wallet ${input.walletId}`,
      }),
    );
    if (payment.status !== 'failed') {
      return opened(await setCardPayment(pool, row.id, paymentMetadata(payment)));
    }
    await pool.transaction(async (trx) => {
      await lockCardDeposit(trx, row.id);
      const updated = await setCardPayment(trx, row.id, paymentMetadata(payment));
      if (updated.row.status !== 'pending') return;
      await recordMoneyStep(trx, {
        transaction: { id: row.id, status: 'failed' },
        event: {
          type: 'deposit.failed',
          data: (closed) => cardDepositEventData(closed, updated.meta),
        },
      });
    });
    throw declined(payment.declineMessage);
  }

  /** The provider's view of the payment now. */
  async function checkCardPayment(input: {
    mode: Mode;
    paymentId: string;
  }): Promise<CardPaymentState> {
    const payment = await callCardProvider(() =>
      providers.card(input.mode).getPayment(input.paymentId),
    );
    return payment.status;
  }

  /**
   * At expiry: cancels the payment at the provider unless it was charged, so that a payer who
   * authenticates later is never charged for a deposit recorded expired. Answers its state then.
   */
  async function cancelCardPayment(input: {
    mode: Mode;
    paymentId: string;
  }): Promise<CardPaymentState> {
    const payment = await callCardProvider(() =>
      providers.card(input.mode).cancelPayment(input.paymentId),
    );
    return payment.status;
  }

  /** Charged: one ledger transaction (src/domain/ledger.ts `cardDepositCompletionPostings`). */
  const { complete: completeCardDeposit, close } = depositCompletion(pool, {
    lock: lockCardDeposit,
    async credit(trx, { row, meta }) {
      const { application_id: app, mode, currency } = row;
      const walletId = row.wallet_id!;
      const clearing = await systemAccount(trx, app, mode, 'provider_clearing_card', currency);
      const fees = await systemAccount(trx, app, mode, 'application_fees', currency);
      return {
        accounts: [walletId, clearing, fees],
        ledger: {
          metadata: {
            payment_method_id: meta.payment_method_id,
            provider_reference: row.provider_reference,
            international: meta.international,
          },
          postings: cardDepositCompletionPostings({
            walletId,
            clearingAccountId: clearing,
            feeAccountId: fees,
            currency,
            amount: row.amount,
            totalPaid: BigInt(meta.total_amount_paid),
            providerFee: BigInt(meta.provider_fee),
            applicationFee: BigInt(meta.application_fee),
          }),
        },
      };
    },
    eventData: cardDepositEventData,
  });

  async function closeCardDeposit(input: Parameters<typeof close>[0]): Promise<void> {
    // A deposit refused before it was recorded (the provider unreachable) has nothing to close.
    if (!(await findCardDeposit(pool, input.transactionId))) return;
    await close(input);
  }

  return {
    openCardDeposit,
    checkCardPayment,
    cancelCardPayment,
    completeCardDeposit,
    closeCardDeposit,
  };
}

/** A card deposit's event: the payment as the API shows it, with the card's figures. */
function cardDepositEventData(row: TransactionRow, meta: CardDepositMetadata) {
  return {
    ...transactionEventData(row),
    payment_method: 'card',
    provider_reference: row.provider_reference,
    provider_fee: minorToMajorNumber(BigInt(meta.provider_fee)),
    application_fee: minorToMajorNumber(BigInt(meta.application_fee)),
    total_amount_paid: minorToMajorNumber(BigInt(meta.total_amount_paid)),
    decline_message: meta.payment?.decline_message ?? null,
  };
}
