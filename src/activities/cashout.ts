import type { Config } from '../config';
import type { ApplicationRow } from '../db/applications';
import { CASHOUT_PROVIDER_FEE, computeMoneyOutFees } from '../domain/fees';
import { sleInBaseCurrency, sleToUsd } from '../domain/fx';
import type { Providers } from '../providers';
import type { MoneyOutInput } from '../workflows/money-out-shared';
import type { MoneyOutPort, MoneyOutPrice, MoneyOutSpec } from './money-out';

/**
 * A mobile-money cashout's figures (method `mobile_money_cashout`): the request's SLE cents, the
 * provider's 1% and the application's fee, each converted to USD cents for a USD application
 * (banker's rounding, the rate recorded). Null below a cent once converted (src/domain/money-rules.ts).
 */
export function priceCashout(
  app: ApplicationRow,
  input: MoneyOutInput,
  config: Config,
): MoneyOutPrice | null {
  const sle = computeMoneyOutFees({
    rule: CASHOUT_PROVIDER_FEE,
    amount: BigInt(input.amount),
    applicationFeeBps: app.fee_bps.mobile_money_cashout,
  });
  const usd = app.base_currency === 'USD';
  const convert = (cents: bigint) => (usd ? sleToUsd(cents, config.fx.slePerUsd) : cents);
  const amount = sleInBaseCurrency(sle.amount, app.base_currency, config.fx.slePerUsd);
  if (amount === null) return null;
  const providerFee = convert(sle.providerFee);
  const applicationFee = convert(sle.applicationFee);
  return {
    currency: app.base_currency,
    amount: amount.toString(),
    provider_fee: providerFee.toString(),
    application_fee: applicationFee.toString(),
    total: (amount + providerFee + applicationFee).toString(),
    provider_currency: 'SLE',
    provider_amount: sle.amount.toString(),
    provider_fee_provider: sle.providerFee.toString(),
    fx_sle_per_usd: usd ? config.fx.slePerUsd : null,
  };
}

/** The mobile-money provider of the mode as the saga's port: a payout to the phone number. */
function cashoutPort(providers: Providers, mode: 'test' | 'live'): MoneyOutPort {
  const provider = providers.mobileMoney(mode);
  return {
    send: async ({ idempotencyKey, reference, record }) => {
      const payout = await provider.createPayout({
        idempotencyKey,
        reference,
        amount: BigInt(record.meta.provider_amount),
        phoneNumber: record.meta.destination.phone_number ?? '',
        description: `Cashout from wallet ${record.row.wallet_id}`,
      });
      return { id: payout.id, status: payout.status };
    },
    check: async (id) => {
      const payout = await provider.getPayout(id);
      return { id: payout.id, status: payout.status };
    },
    cancel: async (id) => {
      const payout = await provider.cancelPayout(id);
      return { id: payout.id, status: payout.status };
    },
  };
}

/** Mobile-money cashouts, as a kind of the money-out saga (src/activities/money-out.ts). */
export const cashoutSpec: MoneyOutSpec = {
  type: 'mobile_money_cashout',
  description: 'Mobile money cashout',
  events: { completed: 'cashout.completed', failed: 'cashout.failed' },
  refusal: 'Provider refused the cashout',
  providerAccount: 'provider_clearing_mobile_money',
  // A mobile-money payout reported paid is final.
  lateFailureWindowSeconds: 0,
  price: priceCashout,
  port: cashoutPort,
};
