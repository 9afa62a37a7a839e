import { loadConfig } from '../../src/config';
import type { ApplicationRow } from '../../src/db/applications';
import { priceCardRefund } from '../../src/activities/card-refund';
import { priceCashout } from '../../src/activities/cashout';
import { CASHOUT_PROVIDER_FEE, computeMoneyOutFees } from '../../src/domain/fees';
import {
  assertBalanced,
  moneyOutGiveBackPostings,
  moneyOutReservePostings,
  moneyOutReversalPostings,
  moneyOutSettlementPostings,
} from '../../src/domain/ledger';
import type { MoneyOutInput } from '../../src/workflows/money-out-shared';

describe('computeMoneyOutFees: provider rule and application basis points, half to even', () => {
  it.each([
    // amount, application bps, provider fee, application fee, total
    [10_000n, undefined, 100n, 0n, 10_100n],
    [10_000n, 200, 100n, 200n, 10_300n],
    [150n, 0, 2n, 0n, 152n], // 1.5 cents: to the even 2
    [250n, 100, 2n, 2n, 254n], // 2.5 cents: to the even 2, twice
    [1n, 0, 0n, 0n, 1n],
  ])('%p with %p bps -> provider %p, application %p, total %p', (amount, bps, pf, af, total) => {
    expect(
      computeMoneyOutFees({ rule: CASHOUT_PROVIDER_FEE, amount, applicationFeeBps: bps }),
    ).toEqual({ amount, providerFee: pf, applicationFee: af, total });
  });

  it('refuses an amount that is not positive', () => {
    expect(() =>
      computeMoneyOutFees({ rule: CASHOUT_PROVIDER_FEE, amount: 0n, applicationFeeBps: 0 }),
    ).toThrow(RangeError);
  });
});

const app = (currency: 'SLE' | 'USD', fee?: number): ApplicationRow => ({
  id: 'app',
  name: 'A',
  base_currency: currency,
  escrow_fee_bps: 0,
  escrow_fee_fixed: 0n,
  fee_bps: fee === undefined ? {} : { mobile_money_cashout: fee },
  rate_limits: {},
  created_at: '',
  updated_at: '',
});
const input = (amount: string): MoneyOutInput => ({
  kind: 'cashout',
  transactionId: 't',
  applicationId: 'app',
  mode: 'test',
  walletId: 'w',
  amount,
  destination: { phone_number: '+23276123456' },
});

describe('priceCashout', () => {
  const config = loadConfig({});

  it('prices an SLE cashout in SLE cents', () => {
    expect(priceCashout(app('SLE', 150), input('10000'), config)).toEqual({
      currency: 'SLE',
      amount: '10000',
      provider_fee: '100',
      application_fee: '150',
      total: '10250',
      provider_currency: 'SLE',
      provider_amount: '10000',
      provider_fee_provider: '100',
      fx_sle_per_usd: null,
    });
  });

  it('converts each figure to USD cents for a USD application, recording the rate', () => {
    // 25 000 SLE cents at 24.00: 1041.67 -> 1042; 250 -> 10.42 -> 10; 500 -> 20.83 -> 21.
    expect(priceCashout(app('USD', 200), input('25000'), config)).toEqual({
      currency: 'USD',
      amount: '1042',
      provider_fee: '10',
      application_fee: '21',
      total: '1073',
      provider_currency: 'SLE',
      provider_amount: '25000',
      provider_fee_provider: '250',
      fx_sle_per_usd: '24.00',
    });
  });

  it('prices no amount too small to be a USD cent (the reserve’s rules decline it)', () => {
    expect(priceCashout(app('USD'), input('10'), config)).toBeNull();
  });
});

describe('money-out postings', () => {
  it('reserves and gives back the total between the wallet and the payouts clearing account', () => {
    const reserve = moneyOutReservePostings({
      walletId: 'w',
      clearingAccountId: 'c',
      currency: 'SLE',
      total: 10_300n,
    });
    expect(reserve).toEqual([
      { accountId: 'w', currency: 'SLE', amount: -10_300n },
      { accountId: 'c', currency: 'SLE', amount: 10_300n },
    ]);
    const back = moneyOutGiveBackPostings({
      clearingAccountId: 'c',
      walletId: 'w',
      currency: 'SLE',
      total: 10_300n,
    });
    expect(back).toEqual([
      { accountId: 'c', currency: 'SLE', amount: -10_300n },
      { accountId: 'w', currency: 'SLE', amount: 10_300n },
    ]);
  });

  it('settles to the provider and the fee account in one currency', () => {
    const postings = moneyOutSettlementPostings({
      clearingAccountId: 'c',
      feeAccountId: 'f',
      providerAccountId: 'p',
      currency: 'SLE',
      providerShare: 10_100n,
      applicationFee: 200n,
      fx: null,
    });
    expect(postings).toEqual([
      { accountId: 'c', currency: 'SLE', amount: -10_300n },
      { accountId: 'f', currency: 'SLE', amount: 200n },
      { accountId: 'p', currency: 'SLE', amount: 10_100n },
    ]);
  });

  it('settles through the FX accounts when the provider works in another currency', () => {
    const postings = moneyOutSettlementPostings({
      clearingAccountId: 'c',
      feeAccountId: 'f',
      providerAccountId: 'p',
      currency: 'USD',
      providerShare: 1_010n,
      applicationFee: 0n,
      fx: {
        fromAccountId: 'fx-usd',
        toAccountId: 'fx-sle',
        providerCurrency: 'SLE',
        providerAmount: 24_240n,
      },
    });
    expect(() => assertBalanced(postings)).not.toThrow();
    expect(postings).toEqual([
      { accountId: 'c', currency: 'USD', amount: -1_010n },
      { accountId: 'fx-usd', currency: 'USD', amount: 1_010n },
      { accountId: 'fx-sle', currency: 'SLE', amount: -24_240n },
      { accountId: 'p', currency: 'SLE', amount: 24_240n },
    ]);
  });

  it('reverses a settlement: every leg back, to the wallet', () => {
    const postings = moneyOutReversalPostings({
      walletId: 'w',
      feeAccountId: 'f',
      providerAccountId: 'p',
      currency: 'USD',
      providerShare: 1_010n,
      applicationFee: 20n,
      fx: {
        fromAccountId: 'fx-usd',
        toAccountId: 'fx-sle',
        providerCurrency: 'SLE',
        providerAmount: 24_240n,
      },
    });
    expect(() => assertBalanced(postings)).not.toThrow();
    expect(postings).toEqual([
      { accountId: 'w', currency: 'USD', amount: 1_030n },
      { accountId: 'f', currency: 'USD', amount: -20n },
      { accountId: 'fx-usd', currency: 'USD', amount: -1_010n },
      { accountId: 'fx-sle', currency: 'SLE', amount: 24_240n },
      { accountId: 'p', currency: 'SLE', amount: -24_240n },
    ]);
  });
});

describe('card refunds: the amount, no fee, between the wallet and the card provider', () => {
  const refund = (amount: string): MoneyOutInput => ({
    kind: 'refund',
    transactionId: 't',
    applicationId: 'a',
    mode: 'test',
    walletId: 'w',
    amount,
    destination: { deposit_id: 'd' },
  });

  it.each([
    // currency, amount refunded (minor units)
    ['USD', '1'],
    ['USD', '2025'],
    ['SLE', '10000'],
    ['SLE', '9007199254740993'],
  ] as const)(
    'prices a %s refund of %s: the wallet pays the amount, no fee',
    (currency, amount) => {
      expect(priceCardRefund(app(currency), refund(amount))).toEqual({
        currency,
        amount,
        provider_fee: '0',
        application_fee: '0',
        total: amount,
        provider_currency: currency,
        provider_amount: amount,
        provider_fee_provider: '0',
        fx_sle_per_usd: null,
      });
    },
  );

  it.each([
    // step, postings
    [
      'reserve',
      moneyOutReservePostings({
        walletId: 'w',
        clearingAccountId: 'c',
        currency: 'USD',
        total: 2_025n,
      }),
      [
        { accountId: 'w', currency: 'USD', amount: -2_025n },
        { accountId: 'c', currency: 'USD', amount: 2_025n },
      ],
    ],
    [
      'settle',
      moneyOutSettlementPostings({
        clearingAccountId: 'c',
        feeAccountId: 'f',
        providerAccountId: 'p',
        currency: 'USD',
        providerShare: 2_025n,
        applicationFee: 0n,
        fx: null,
      }),
      [
        { accountId: 'c', currency: 'USD', amount: -2_025n },
        { accountId: 'p', currency: 'USD', amount: 2_025n },
      ],
    ],
    [
      'give back',
      moneyOutGiveBackPostings({
        clearingAccountId: 'c',
        walletId: 'w',
        currency: 'USD',
        total: 2_025n,
      }),
      [
        { accountId: 'c', currency: 'USD', amount: -2_025n },
        { accountId: 'w', currency: 'USD', amount: 2_025n },
      ],
    ],
    [
      'reverse',
      moneyOutReversalPostings({
        walletId: 'w',
        feeAccountId: 'f',
        providerAccountId: 'p',
        currency: 'USD',
        providerShare: 2_025n,
        applicationFee: 0n,
        fx: null,
      }),
      [
        { accountId: 'w', currency: 'USD', amount: 2_025n },
        { accountId: 'p', currency: 'USD', amount: -2_025n },
      ],
    ],
  ])('%s: two legs, balanced, no fee leg', (_step, postings, expected) => {
    expect(() => assertBalanced(postings)).not.toThrow();
    expect(postings).toEqual(expected);
  });
});
