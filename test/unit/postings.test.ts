import { computeEscrowFee } from '../../src/domain/fees';
import {
  assertBalanced,
  depositCompletionPostings,
  disputePostings,
  holdPostings,
  refundPostings,
  releasePostings,
} from '../../src/domain/ledger';

describe('computeEscrowFee: basis points (half to even) plus fixed, capped at the amount', () => {
  it.each([
    // amount, bps, fixed, fee, net
    [10_000n, 0, 0n, 0n, 10_000n],
    [10_000n, 150, 0n, 150n, 9_850n],
    [10_000n, 150, 25n, 175n, 9_825n],
    [1_000n, 0, 50n, 50n, 950n],
    [50n, 100, 0n, 0n, 50n], // 0.5 cent: to the even 0
    [150n, 100, 0n, 2n, 148n], // 1.5 cents: to the even 2
    [250n, 100, 0n, 2n, 248n], // 2.5 cents: to the even 2
    [40n, 0, 50n, 40n, 0n], // the fixed fee alone exceeds the amount: capped
    [100n, 10_000, 1n, 100n, 0n], // 100% plus fixed: capped
    [0n, 150, 25n, 0n, 0n],
  ])('%p at %p bps + %p -> fee %p, net %p', (amount, bps, fixed, fee, net) => {
    expect(computeEscrowFee(amount, { bps, fixed })).toEqual({ fee, net });
  });

  it('refuses a negative amount', () => {
    expect(() => computeEscrowFee(-1n, { bps: 0, fixed: 0n })).toThrow(RangeError);
  });
});

describe('escrow postings', () => {
  it('holds: the sender’s wallet to the escrow account', () => {
    expect(
      holdPostings({ walletId: 'w', escrowAccountId: 'e', currency: 'USD', amount: 1000n }),
    ).toEqual([
      { accountId: 'w', currency: 'USD', amount: -1000n },
      { accountId: 'e', currency: 'USD', amount: 1000n },
    ]);
  });

  it('refunds: the escrow account back to the sender’s wallet', () => {
    expect(
      refundPostings({ escrowAccountId: 'e', walletId: 'w', currency: 'SLE', amount: 750n }),
    ).toEqual([
      { accountId: 'e', currency: 'SLE', amount: -750n },
      { accountId: 'w', currency: 'SLE', amount: 750n },
    ]);
  });

  const release = { escrowAccountId: 'e', recipientWalletId: 'r', currency: 'USD' as const };
  it.each([
    [
      'net and fee',
      { ...release, feeAccountId: 'f', net: 825n, fee: 175n },
      [
        { accountId: 'e', currency: 'USD', amount: -1000n },
        { accountId: 'r', currency: 'USD', amount: 825n },
        { accountId: 'f', currency: 'USD', amount: 175n },
      ],
    ],
    [
      'no fee',
      { ...release, feeAccountId: null, net: 1000n, fee: 0n },
      [
        { accountId: 'e', currency: 'USD', amount: -1000n },
        { accountId: 'r', currency: 'USD', amount: 1000n },
      ],
    ],
    [
      'the fee took it all',
      { ...release, feeAccountId: 'f', net: 0n, fee: 40n },
      [
        { accountId: 'e', currency: 'USD', amount: -40n },
        { accountId: 'f', currency: 'USD', amount: 40n },
      ],
    ],
  ])('releases with %s', (_name, input, expected) => {
    const postings = releasePostings(input);
    expect(postings).toEqual(expected);
    expect(() => assertBalanced(postings)).not.toThrow();
  });

  it('refuses a release that moves nothing, or a fee without a fee account', () => {
    expect(() => releasePostings({ ...release, feeAccountId: null, net: 0n, fee: 0n })).toThrow();
    expect(() => releasePostings({ ...release, feeAccountId: null, net: 5n, fee: 1n })).toThrow();
  });
});

describe('depositCompletionPostings', () => {
  const accounts = { walletId: 'w', clearingAccountId: 'c', feeAccountId: 'f' };
  it.each([
    [
      'an SLE wallet, with both fees',
      {
        ...accounts,
        sleAmount: 10_000n,
        providerFee: 100n,
        applicationFee: 150n,
        totalPaid: 10_250n,
        fx: null,
      },
      [
        { accountId: 'c', currency: 'SLE', amount: -10_250n },
        { accountId: 'c', currency: 'SLE', amount: 100n },
        { accountId: 'f', currency: 'SLE', amount: 150n },
        { accountId: 'w', currency: 'SLE', amount: 10_000n },
      ],
    ],
    [
      'an SLE wallet, no application fee',
      {
        ...accounts,
        sleAmount: 10_000n,
        providerFee: 100n,
        applicationFee: 0n,
        totalPaid: 10_100n,
        fx: null,
      },
      [
        { accountId: 'c', currency: 'SLE', amount: -10_100n },
        { accountId: 'c', currency: 'SLE', amount: 100n },
        { accountId: 'w', currency: 'SLE', amount: 10_000n },
      ],
    ],
    [
      'a USD wallet, through the FX accounts',
      {
        ...accounts,
        sleAmount: 240_000n,
        providerFee: 2_400n,
        applicationFee: 0n,
        totalPaid: 242_400n,
        fx: { sleAccountId: 'xs', usdAccountId: 'xu', creditedUsd: 10_000n },
      },
      [
        { accountId: 'c', currency: 'SLE', amount: -242_400n },
        { accountId: 'c', currency: 'SLE', amount: 2_400n },
        { accountId: 'xs', currency: 'SLE', amount: 240_000n },
        { accountId: 'xu', currency: 'USD', amount: -10_000n },
        { accountId: 'w', currency: 'USD', amount: 10_000n },
      ],
    ],
  ])('credits %s', (_name, input, expected) => {
    expect(depositCompletionPostings(input)).toEqual(expected);
  });

  it('refuses figures that do not add up', () => {
    expect(() =>
      depositCompletionPostings({
        ...accounts,
        sleAmount: 10_000n,
        providerFee: 100n,
        applicationFee: 0n,
        totalPaid: 10_000n,
        fx: null,
      }),
    ).toThrow(/do not balance/);
  });
});

describe('dispute postings: the reserve in, back to the wallet, or out to the provider', () => {
  const accounts = { walletId: 'w', reserveAccountId: 'r', currency: 'USD' as const };
  it.each([
    [
      'opening reserves what the wallet holds of it',
      { ...accounts, step: 'reserve' as const, providerAccountId: null, reserved: 2_500n },
      [
        { accountId: 'w', currency: 'USD', amount: -2_500n },
        { accountId: 'r', currency: 'USD', amount: 2_500n },
      ],
    ],
    [
      'won gives the reserve back to the wallet',
      { ...accounts, step: 'won' as const, providerAccountId: null, reserved: 2_500n },
      [
        { accountId: 'r', currency: 'USD', amount: -2_500n },
        { accountId: 'w', currency: 'USD', amount: 2_500n },
      ],
    ],
    [
      'lost pays the reserve to the card provider’s clearing account',
      { ...accounts, step: 'lost' as const, providerAccountId: 'c', reserved: 1n },
      [
        { accountId: 'r', currency: 'USD', amount: -1n },
        { accountId: 'c', currency: 'USD', amount: 1n },
      ],
    ],
    [
      'nothing reserved (all uncovered): nothing moves at opening',
      { ...accounts, step: 'reserve' as const, providerAccountId: null, reserved: 0n },
      null,
    ],
    [
      'nothing reserved: nothing moves when won',
      { ...accounts, step: 'won' as const, providerAccountId: null, reserved: 0n },
      null,
    ],
    [
      'nothing reserved: nothing moves when lost',
      { ...accounts, step: 'lost' as const, providerAccountId: 'c', reserved: 0n },
      null,
    ],
  ])('%s', (_name, input, expected) => {
    const postings = disputePostings(input);
    expect(postings).toEqual(expected);
    if (postings) expect(() => assertBalanced(postings)).not.toThrow();
  });

  it('refuses a negative reserve, and a lost dispute without the provider’s account', () => {
    const base = { ...accounts, providerAccountId: null };
    expect(() => disputePostings({ ...base, step: 'reserve', reserved: -1n })).toThrow(/negative/);
    expect(() => disputePostings({ ...base, step: 'lost', reserved: 5n })).toThrow(/provider/);
  });
});
