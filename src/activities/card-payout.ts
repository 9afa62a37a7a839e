import type { Config } from '../config';
import type { ApplicationRow } from '../db/applications';
import { computeMoneyOutFees, type FeeRule } from '../domain/fees';
import type { Mode } from '../domain/types';
import type { Providers } from '../providers';
import type { CardPayoutStatus } from '../providers/card';
import type { PayoutStatus } from '../providers/mobile-money';
import type { MoneyOutInput } from '../workflows/money-out-shared';
import type { MoneyOutPort, MoneyOutPrice, MoneyOutSpec } from './money-out';

/**
 * The card provider's own fee on a payout: none is charged to the wallet (docs/api.md, Fees, names
 * only the application's fee, method `card_payout`); what the provider keeps is the platform's.
 */
export const CARD_PAYOUT_PROVIDER_FEE: FeeRule = { bps: 0, fixed: 0n };

/**
 * How long a Test Mode payout the sandbox accepted waits before the saga asks the sandbox again:
 * the sandbox's accepted-then-failed payout (40.40) reads failed from the next look on, so the
 * wallet has its money back within seconds (docs/api.md, Test Mode sandbox).
 */
export const SANDBOX_PAYOUT_CHECK_SECONDS = 2;

/**
 * How long after reporting a payout paid the card provider may still report it failed (a returned
 * payout): the saga stays that long to reverse the settlement on such a report. Live Mode only: the
 * sandbox never fails a payout it reported paid.
 */
export const LIVE_PAYOUT_LATE_FAILURE_SECONDS = 14 * 24 * 60 * 60;

/**
 * A card payout's figures: the request names major units of the base currency (here minor
 * units); the wallet pays the amount and the application's fee (method `card_payout`).
 */
export function priceCardPayout(app: ApplicationRow, input: MoneyOutInput): MoneyOutPrice {
  const fees = computeMoneyOutFees({
    rule: CARD_PAYOUT_PROVIDER_FEE,
    amount: BigInt(input.amount),
    applicationFeeBps: app.fee_bps.card_payout,
  });
  return {
    currency: app.base_currency,
    amount: fees.amount.toString(),
    provider_fee: fees.providerFee.toString(),
    application_fee: fees.applicationFee.toString(),
    total: fees.total.toString(),
    provider_currency: app.base_currency,
    provider_amount: fees.amount.toString(),
    provider_fee_provider: fees.providerFee.toString(),
    fx_sle_per_usd: null,
  };
}

const PAYOUT_OUTCOME: Record<CardPayoutStatus, PayoutStatus> = {
  paid: 'completed',
  pending: 'pending',
  failed: 'failed',
};

/**
 * The card provider's connected payout accounts of the mode as the saga's port: a transfer to
 * the owner's connected account and a payout to its debit card (`destination.account_id`).
 */
function cardPayoutPort(providers: Providers, mode: Mode): MoneyOutPort {
  const provider = providers.connect(mode);
  return {
    send: async ({ idempotencyKey, reference, record }) => {
      const payout = await provider.createPayout({
        idempotencyKey,
        reference,
        accountId: record.meta.destination.account_id ?? '',
        amount: BigInt(record.meta.provider_amount),
        currency: record.meta.provider_currency,
      });
      return { id: payout.id, status: PAYOUT_OUTCOME[payout.status] };
    },
    check: async (payoutId, record) => {
      const payout = await provider.getPayout(record.meta.destination.account_id ?? '', payoutId);
      return { id: payout.id, status: PAYOUT_OUTCOME[payout.status] };
    },
    cancel: async (payoutId, record) => {
      const accountId = record.meta.destination.account_id ?? '';
      const payout = await provider.cancelPayout(accountId, payoutId);
      return { id: payout.id, status: PAYOUT_OUTCOME[payout.status] };
    },
  };
}

/** Card payouts, as a kind of the money-out saga (src/activities/money-out.ts). */
export const cardPayoutSpec: MoneyOutSpec = {
  type: 'card_payout',
  description: 'Card payout',
  events: { completed: 'payout.completed', failed: 'payout.failed' },
  refusal: 'Provider refused the payout',
  providerAccount: 'provider_clearing_card',
  lateFailureWindowSeconds: (mode) => (mode === 'live' ? LIVE_PAYOUT_LATE_FAILURE_SECONDS : 0),
  pendingTtlSeconds: (mode: Mode, config: Config) =>
    mode === 'test' ? SANDBOX_PAYOUT_CHECK_SECONDS : config.moneyOut.pendingTtlSeconds,
  price: priceCardPayout,
  port: cardPayoutPort,
};
