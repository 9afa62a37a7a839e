import { reconAdjustment, type ReconSide } from '../../src/domain/recon-adjustments';

const side = (amount: bigint, status: string, currency = 'USD'): ReconSide => ({
  amount,
  currency,
  status,
});

describe('reconAdjustment', () => {
  it('is the provider’s amount less the engine’s where both moved money', () => {
    const ours = side(103_20n, 'completed');
    expect(
      reconAdjustment({
        type: 'card_deposit',
        paymentAmount: 100_00n,
        ours,
        theirs: side(103_21n, 'succeeded'),
      }),
    ).toEqual({ amount: 1n, basis: 'difference', currency: 'USD' });
    expect(
      reconAdjustment({
        type: 'card_deposit',
        paymentAmount: 100_00n,
        ours,
        theirs: side(103_00n, 'succeeded'),
      }).amount,
    ).toBe(-20n);
  });

  it('turns the direction round for money going out', () => {
    expect(
      reconAdjustment({
        type: 'mobile_money_cashout',
        paymentAmount: 50_00n,
        ours: side(50_00n, 'completed', 'SLE'),
        theirs: side(50_10n, 'succeeded', 'SLE'),
      }),
    ).toEqual({ amount: -10n, basis: 'difference', currency: 'SLE' });
    // The engine failed the cashout and gave the money back; the provider paid it out.
    expect(
      reconAdjustment({
        type: 'mobile_money_cashout',
        paymentAmount: 50_00n,
        ours: side(50_00n, 'failed', 'SLE'),
        theirs: side(50_00n, 'succeeded', 'SLE'),
      }),
    ).toEqual({ amount: -50_00n, basis: 'whole', currency: null });
  });

  it('takes the payment’s whole amount where only one side moved money', () => {
    const missingExternal = reconAdjustment({
      type: 'card_deposit',
      paymentAmount: 100_00n,
      ours: side(103_20n, 'completed'),
      theirs: null,
    });
    expect(missingExternal).toEqual({ amount: -100_00n, basis: 'whole', currency: null });
    const paidAfterFailed = reconAdjustment({
      type: 'card_deposit',
      paymentAmount: 100_00n,
      ours: side(103_20n, 'failed'),
      theirs: side(103_20n, 'succeeded'),
    });
    expect(paidAfterFailed.amount).toBe(100_00n);
    expect(
      reconAdjustment({
        type: 'card_refund',
        paymentAmount: 30_00n,
        ours: side(30_00n, 'completed'),
        theirs: side(30_00n, 'failed'),
      }).amount,
    ).toBe(30_00n);
  });

  it('is zero where neither side moved money, or both moved the same', () => {
    expect(
      reconAdjustment({
        type: 'card_deposit',
        paymentAmount: 10_00n,
        ours: side(10_00n, 'failed'),
        theirs: side(10_00n, 'reversed'),
      }).amount,
    ).toBe(0n);
    expect(
      reconAdjustment({
        type: 'card_deposit',
        paymentAmount: 10_00n,
        ours: side(10_00n, 'completed'),
        theirs: side(10_00n, 'succeeded'),
      }).amount,
    ).toBe(0n);
  });

  it('names no currency when the sides count in different ones', () => {
    expect(
      reconAdjustment({
        type: 'mobile_money_deposit',
        paymentAmount: 4_00n,
        ours: side(100_00n, 'completed', 'SLE'),
        theirs: side(4_17n, 'succeeded', 'USD'),
      }).currency,
    ).toBeNull();
  });
});
