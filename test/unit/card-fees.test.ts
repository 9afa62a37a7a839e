import {
  computeCardDepositFees,
  computeDepositFees,
  HOME_COUNTRY,
  isInternationalCard,
} from '../../src/domain/fees';
import { cardDepositCompletionPostings } from '../../src/domain/ledger';
import type { Currency } from '../../src/domain/money';

describe('isInternationalCard: home country SL for SLE, US for USD; amex always international', () => {
  it.each<[string, string, Currency, boolean]>([
    // brand, country, base currency, international
    ['visa', 'US', 'USD', false],
    ['mastercard', 'US', 'USD', false],
    ['visa', 'GB', 'USD', true],
    ['visa', 'SL', 'USD', true],
    ['amex', 'US', 'USD', true],
    ['visa', 'SL', 'SLE', false],
    ['visa', 'US', 'SLE', true],
    ['amex', 'SL', 'SLE', true],
    ['mastercard', 'GB', 'SLE', true],
    // Providers spell brands and countries in either case.
    ['AMEX', 'us', 'USD', true],
    ['Visa', 'us', 'USD', false],
    ['visa', 'sl', 'SLE', false],
  ])('%s issued in %s, %s application -> %p', (brand, country, base, international) => {
    expect(isInternationalCard({ brand, country }, base)).toBe(international);
  });

  it('names a home country for every currency', () => {
    expect(HOME_COUNTRY).toEqual({ SLE: 'SL', USD: 'US' });
  });
});

describe('computeCardDepositFees: the card rule, then the deposit fees of `card`', () => {
  it.each<[string, string, Currency, bigint, number | undefined, bigint, bigint]>([
    // brand, country, base, amount, app bps, provider fee, application fee
    ['visa', 'US', 'USD', 10_000n, undefined, 320n, 0n], // 2.9 % + 30
    ['visa', 'GB', 'USD', 10_000n, undefined, 420n, 0n], // 3.9 % + 30
    ['amex', 'US', 'USD', 10_000n, 150, 420n, 150n],
    ['visa', 'SL', 'SLE', 2_500n, 200, 102n, 50n], // 72.5 -> 72 (half to even) + 30
    ['visa', 'US', 'SLE', 1n, undefined, 30n, 0n],
  ])('%s %s on %s %p at %p bps', (brand, country, base, amount, bps, provider, application) => {
    const fees = computeCardDepositFees({
      card: { brand, country },
      baseCurrency: base,
      amount,
      applicationFeeBps: bps,
    });
    expect(fees.providerFee).toBe(provider);
    expect(fees.applicationFee).toBe(application);
    expect(fees.totalAmountToPay).toBe(amount + provider + application);
    // Exactly the generic estimate for `card` with the same international flag.
    const { international, ...rest } = fees;
    expect(rest).toEqual(
      computeDepositFees({ method: 'card', international, amount, applicationFeeBps: bps }),
    );
  });
});

describe('cardDepositCompletionPostings', () => {
  const base = {
    walletId: 'w',
    clearingAccountId: 'c',
    feeAccountId: 'f',
    currency: 'USD' as const,
  };

  it.each([
    [
      'provider and application fees',
      { amount: 10_000n, providerFee: 320n, applicationFee: 150n },
      [
        { accountId: 'c', currency: 'USD', amount: -10_470n },
        { accountId: 'c', currency: 'USD', amount: 320n },
        { accountId: 'f', currency: 'USD', amount: 150n },
        { accountId: 'w', currency: 'USD', amount: 10_000n },
      ],
    ],
    [
      'no application fee: no fee leg',
      { amount: 500n, providerFee: 45n, applicationFee: 0n },
      [
        { accountId: 'c', currency: 'USD', amount: -545n },
        { accountId: 'c', currency: 'USD', amount: 45n },
        { accountId: 'w', currency: 'USD', amount: 500n },
      ],
    ],
  ])('%s', (_name, figures, postings) => {
    expect(
      cardDepositCompletionPostings({
        ...base,
        ...figures,
        totalPaid: figures.amount + figures.providerFee + figures.applicationFee,
      }),
    ).toEqual(postings);
  });

  it('refuses figures that do not balance', () => {
    expect(() =>
      cardDepositCompletionPostings({
        ...base,
        amount: 100n,
        providerFee: 30n,
        applicationFee: 0n,
        totalPaid: 129n,
      }),
    ).toThrow(/do not balance/);
  });

  it('refuses a deposit of nothing', () => {
    expect(() =>
      cardDepositCompletionPostings({
        ...base,
        amount: 0n,
        providerFee: 30n,
        applicationFee: 0n,
        totalPaid: 30n,
      }),
    ).toThrow(/positive/);
  });
});
