import type { Config } from '../config';
import { lockCardCase } from '../db/card-cases';
import { depositFacts } from '../db/card-cases';
import { cardRefundRules } from '../domain/money-rules';
import type { Mode } from '../domain/types';
import type { Providers } from '../providers';
import type { CardRefundStatus, RefundReason } from '../providers/card';
import type { PayoutStatus } from '../providers/mobile-money';
import type { ApplicationRow } from '../db/applications';
import type { MoneyOutInput } from '../workflows/money-out-shared';
import { refuseUnlessAll } from './money-rules';
import type { MoneyOutPort, MoneyOutPrice, MoneyOutSpec } from './money-out';

/**
 * How long a Test Mode refund the sandbox accepted waits before the saga asks the sandbox again:
 * its failing refund (`pm_card_refundFails`) reads failed a moment after it was accepted, and the
 * wallet must have its money back within seconds (docs/api.md, Refunds and Disputes).
 */
export const SANDBOX_REFUND_CHECK_SECONDS = 1;

/**
 * How long after the card provider reported a refund made it may still report it failed
 * (Stripe's `refund.failed` can come days later); the saga then gives the wallet its money
 * back. The sandbox never fails a refund it reported made: no window in Test Mode.
 */
export const LIVE_REFUND_LATE_FAILURE_SECONDS = 14 * 24 * 60 * 60;

/** A refund carries no fee: the wallet pays back the amount, the card gets the amount. */
export function priceCardRefund(app: ApplicationRow, input: MoneyOutInput): MoneyOutPrice {
  const amount = input.amount;
  return {
    currency: app.base_currency,
    amount,
    provider_fee: '0',
    application_fee: '0',
    total: amount,
    provider_currency: app.base_currency,
    provider_amount: amount,
    provider_fee_provider: '0',
    fx_sle_per_usd: null,
  };
}

const REFUND_OUTCOME: Record<CardRefundStatus, PayoutStatus> = {
  succeeded: 'completed',
  pending: 'pending',
  failed: 'failed',
};

const REASONS: readonly string[] = [
  'requested_by_customer',
  'duplicate',
  'fraudulent',
] satisfies RefundReason[];

/** The mode's card provider's refunds of the deposit's payment (`destination.payment_id`). */
function cardRefundPort(providers: Providers, mode: Mode): MoneyOutPort {
  return {
    send: async ({ idempotencyKey, reference, record }) => {
      const { payment_id: paymentId, reason } = record.meta.destination;
      const refund = await providers.card(mode).createRefund({
        idempotencyKey,
        reference,
        paymentId: paymentId ?? '',
        amount: BigInt(record.meta.provider_amount),
        currency: record.meta.provider_currency,
        reason: reason && REASONS.includes(reason) ? (reason as RefundReason) : null,
      });
      return { id: refund.id, status: REFUND_OUTCOME[refund.status] };
    },
    check: async (refundId) => {
      const refund = await providers.card(mode).getRefund(refundId);
      return { id: refund.id, status: REFUND_OUTCOME[refund.status] };
    },
    cancel: async (refundId) => {
      const refund = await providers.card(mode).cancelRefund(refundId);
      return { id: refund.id, status: REFUND_OUTCOME[refund.status] };
    },
  };
}

/**
 * Card refunds, as a kind of the money-out saga (src/activities/money-out.ts): the wallet the deposit
 * credited pays back the amount, the card provider refunds it to the card. The reserve decides
 * under the deposit's lock (src/db/card-cases.ts), which disputes of the deposit take too.
 */
export const cardRefundSpec: MoneyOutSpec = {
  type: 'card_refund',
  description: 'Card refund',
  events: { completed: 'refund.completed', failed: 'refund.failed' },
  refusal: 'Provider refused the refund',
  providerAccount: 'provider_clearing_card',
  lateFailureWindowSeconds: (mode) => (mode === 'live' ? LIVE_REFUND_LATE_FAILURE_SECONDS : 0),
  pendingTtlSeconds: (mode: Mode, config: Config) =>
    mode === 'test' ? SANDBOX_REFUND_CHECK_SECONDS : config.moneyOut.pendingTtlSeconds,
  price: priceCardRefund,
  port: cardRefundPort,
  async reserveCase(trx, input) {
    const depositId = input.destination.deposit_id ?? '';
    const facts = await lockCardCase(trx, depositId);
    if (facts && facts.deposit.wallet_id !== input.walletId) {
      throw new Error(
        `refund ${input.transactionId}: not the wallet deposit ${depositId} credited`,
      );
    }
    return {
      parentId: depositId,
      destination: { payment_id: facts?.deposit.provider_reference ?? '' },
      decide: (wallet) =>
        refuseUnlessAll(cardRefundRules, {
          subjects: { deposit: facts && depositFacts(facts), wallet },
          params: {
            applicationId: input.applicationId,
            mode: input.mode,
            amount: BigInt(input.amount),
          },
        }),
    };
  },
};
