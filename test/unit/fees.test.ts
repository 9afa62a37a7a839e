import {
  computeDepositFees,
  PROVIDER_FEES,
  providerFeeRule,
  type DepositFees,
} from '../../src/domain/fees';
import type { PaymentMethod } from '../../src/domain/types';

type Row = {
  method: PaymentMethod;
  international?: boolean;
  amount: bigint;
  bps?: number;
  provider: bigint;
  application: bigint;
};

/** The expected result, with the totals derived from the two fees as the contract states. */
function expected(row: Row): DepositFees {
  const totalFees = row.provider + row.application;
  return {
    transactionAmount: row.amount,
    applicationFee: row.application,
    providerFee: row.provider,
    totalFees,
    totalAmountToPay: row.amount + totalFees,
    netAmount: row.amount,
    feeEnabled: (row.bps ?? 0) > 0,
  };
}

function compute(row: Row): DepositFees {
  return computeDepositFees({
    method: row.method,
    international: row.international,
    amount: row.amount,
    applicationFeeBps: row.bps,
  });
}

const name = (row: Row) =>
  `${row.method}${row.international ? ' (international)' : ''} ${row.amount} at ${row.bps ?? '-'} bps`;

function table(rows: Row[]): [string, Row][] {
  return rows.map((row) => [name(row), row]);
}

describe('computeDepositFees', () => {
  describe('smallest amounts: 1 minor unit', () => {
    it.each(
      table([
        { method: 'mobile_money', amount: 1n, provider: 0n, application: 0n },
        { method: 'card', amount: 1n, provider: 30n, application: 0n },
        { method: 'card', international: true, amount: 1n, provider: 30n, application: 0n },
        { method: 'bank', amount: 1n, provider: 100n, application: 0n },
        { method: 'wallet', amount: 1n, provider: 0n, application: 0n },
        // 1 × 150 / 10 000 = 0.015: the application fee applies but rounds to nothing.
        { method: 'mobile_money', amount: 1n, bps: 150, provider: 0n, application: 0n },
        { method: 'wallet', amount: 1n, bps: 5_000, provider: 0n, application: 0n },
        // 1 × 10 000 / 10 000: a 100 % fee is 1.
        { method: 'wallet', amount: 1n, bps: 10_000, provider: 0n, application: 1n },
        { method: 'bank', amount: 2n, bps: 2_500, provider: 100n, application: 0n },
        { method: 'bank', amount: 3n, bps: 2_500, provider: 100n, application: 1n },
      ]),
    )('%s', (_name, row) => {
      expect(compute(row)).toEqual(expected(row));
    });

    it('charges no fee at all on an amount of 0 except the fixed parts', () => {
      expect(
        compute({ method: 'card', amount: 0n, bps: 150, provider: 0n, application: 0n }),
      ).toMatchObject({ providerFee: 30n, applicationFee: 0n, totalAmountToPay: 30n });
    });
  });

  describe('rounding halves: half to even on the exact quotient', () => {
    it.each(
      table([
        // Application fee, 100 bps: amount / 100.
        { method: 'wallet', amount: 49n, bps: 100, provider: 0n, application: 0n },
        { method: 'wallet', amount: 50n, bps: 100, provider: 0n, application: 0n }, // 0.5 -> 0
        { method: 'wallet', amount: 51n, bps: 100, provider: 0n, application: 1n },
        { method: 'wallet', amount: 150n, bps: 100, provider: 0n, application: 2n }, // 1.5 -> 2
        { method: 'wallet', amount: 250n, bps: 100, provider: 0n, application: 2n }, // 2.5 -> 2
        { method: 'wallet', amount: 350n, bps: 100, provider: 0n, application: 4n }, // 3.5 -> 4
        // Application fee, 150 bps: 100 × 0.015 = 1.5 -> 2, 300 × 0.015 = 4.5 -> 4.
        { method: 'wallet', amount: 100n, bps: 150, provider: 0n, application: 2n },
        { method: 'wallet', amount: 300n, bps: 150, provider: 0n, application: 4n },
        // Application fee, 1 bps: 5 000 -> 0.5 -> 0, 15 000 -> 1.5 -> 2, 14 999 -> 1.4999 -> 1.
        { method: 'wallet', amount: 5_000n, bps: 1, provider: 0n, application: 0n },
        { method: 'wallet', amount: 14_999n, bps: 1, provider: 0n, application: 1n },
        { method: 'wallet', amount: 15_000n, bps: 1, provider: 0n, application: 2n },
        // Mobile-money provider fee, 100 bps.
        { method: 'mobile_money', amount: 50n, provider: 0n, application: 0n },
        { method: 'mobile_money', amount: 150n, provider: 2n, application: 0n },
        { method: 'mobile_money', amount: 1_250n, provider: 12n, application: 0n }, // 12.5
        // Card provider fee, 290 bps + 30: 500 -> 14.5 -> 14, 1 500 -> 43.5 -> 44.
        { method: 'card', amount: 500n, provider: 44n, application: 0n },
        { method: 'card', amount: 1_500n, provider: 74n, application: 0n },
        // International card, 390 bps + 30: 500 -> 19.5 -> 20, 1 500 -> 58.5 -> 58.
        { method: 'card', international: true, amount: 500n, provider: 50n, application: 0n },
        { method: 'card', international: true, amount: 1_500n, provider: 88n, application: 0n },
        // Both fees rounding on the same amount: 1 250 -> provider 12.5 -> 12, 150 bps 18.75 -> 19.
        { method: 'mobile_money', amount: 1_250n, bps: 150, provider: 12n, application: 19n },
      ]),
    )('%s', (_name, row) => {
      expect(compute(row)).toEqual(expected(row));
    });
  });

  describe('large amounts stay exact', () => {
    const max = 10n ** 13n; // MAX_MINOR_UNITS, 100 billion major units
    const beyondFloat = 2n ** 53n + 1n; // not representable as a double
    it.each(
      table([
        { method: 'mobile_money', amount: max, provider: 100_000_000_000n, application: 0n },
        { method: 'card', amount: max, provider: 290_000_000_030n, application: 0n },
        {
          method: 'card',
          international: true,
          amount: max,
          provider: 390_000_000_030n,
          application: 0n,
        },
        { method: 'bank', amount: max, provider: 100n, application: 0n },
        { method: 'wallet', amount: max, provider: 0n, application: 0n },
        {
          method: 'mobile_money',
          amount: max,
          bps: 150,
          provider: 100_000_000_000n,
          application: 150_000_000_000n,
        },
        { method: 'wallet', amount: max, bps: 10_000, provider: 0n, application: max },
        // Halves at the top: 100 000 000 000.5 -> ...000, 100 000 000 001.5 -> ...002.
        { method: 'mobile_money', amount: max + 50n, provider: 100_000_000_000n, application: 0n },
        { method: 'mobile_money', amount: max + 150n, provider: 100_000_000_002n, application: 0n },
        // 9 007 199 254 740 993 / 100 = 90 071 992 547 409.93 -> ...410.
        {
          method: 'mobile_money',
          amount: beyondFloat,
          provider: 90_071_992_547_410n,
          application: 0n,
        },
      ]),
    )('%s', (_name, row) => {
      expect(compute(row)).toEqual(expected(row));
    });

    it('adds up to the exact payer total at the maximum', () => {
      expect(
        compute({
          method: 'card',
          international: true,
          amount: max,
          bps: 250,
          provider: 0n,
          application: 0n,
        }),
      ).toEqual({
        transactionAmount: 10_000_000_000_000n,
        applicationFee: 250_000_000_000n,
        providerFee: 390_000_000_030n,
        totalFees: 640_000_000_030n,
        totalAmountToPay: 10_640_000_000_030n,
        netAmount: 10_000_000_000_000n,
        feeEnabled: true,
      });
    });
  });

  describe('provider rules per method', () => {
    it.each(
      table([
        // 100.00 in minor units.
        { method: 'mobile_money', amount: 10_000n, provider: 100n, application: 0n },
        { method: 'card', amount: 10_000n, provider: 320n, application: 0n },
        { method: 'card', international: true, amount: 10_000n, provider: 420n, application: 0n },
        { method: 'card', international: false, amount: 10_000n, provider: 320n, application: 0n },
        // Bank: a fixed fee whatever the amount; wallet: free.
        { method: 'bank', amount: 10_000n, provider: 100n, application: 0n },
        { method: 'bank', amount: 123_456_789n, provider: 100n, application: 0n },
        { method: 'wallet', amount: 10_000n, provider: 0n, application: 0n },
        { method: 'wallet', amount: 12_345n, bps: 200, provider: 0n, application: 247n },
        // is_international only changes the card rate.
        {
          method: 'mobile_money',
          international: true,
          amount: 10_000n,
          provider: 100n,
          application: 0n,
        },
        { method: 'bank', international: true, amount: 10_000n, provider: 100n, application: 0n },
        { method: 'wallet', international: true, amount: 10_000n, provider: 0n, application: 0n },
      ]),
    )('%s', (_name, row) => {
      expect(compute(row)).toEqual(expected(row));
    });

    it('reads its rates from PROVIDER_FEES', () => {
      expect(providerFeeRule('card')).toBe(PROVIDER_FEES.card);
      expect(providerFeeRule('card', true)).toBe(PROVIDER_FEES.card_international);
      expect(providerFeeRule('bank', true)).toBe(PROVIDER_FEES.bank);
    });
  });

  describe('fee_enabled', () => {
    it.each([
      [undefined, false, 0n],
      [0, false, 0n],
      [-5, false, 0n],
      [1, true, 1n],
      [150, true, 150n],
    ])('application fee %p bps: enabled %p, fee %p on 100.00', (bps, enabled, fee) => {
      const fees = computeDepositFees({
        method: 'wallet',
        amount: 10_000n,
        applicationFeeBps: bps,
      });
      expect(fees.feeEnabled).toBe(enabled);
      expect(fees.applicationFee).toBe(fee);
      expect(fees.totalAmountToPay).toBe(10_000n + fee);
    });
  });

  it('refuses a negative amount', () => {
    expect(() =>
      computeDepositFees({ method: 'wallet', amount: -1n, applicationFeeBps: undefined }),
    ).toThrow(RangeError);
  });
});
