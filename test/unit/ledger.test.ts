import { assertBalanced, lockOrder, transferPostings } from '../../src/domain/ledger';

describe('ledger postings', () => {
  it('builds a transfer as a debit and a credit that sum to zero', () => {
    const postings = transferPostings('a', 'b', 'SLE', 1250n);
    expect(postings).toEqual([
      { accountId: 'a', currency: 'SLE', amount: -1250n },
      { accountId: 'b', currency: 'SLE', amount: 1250n },
    ]);
    expect(() => assertBalanced(postings)).not.toThrow();
  });

  it('refuses a transfer of zero or less', () => {
    expect(() => transferPostings('a', 'b', 'SLE', 0n)).toThrow();
    expect(() => transferPostings('a', 'b', 'SLE', -1n)).toThrow();
  });

  it('refuses postings that do not balance per currency', () => {
    expect(() =>
      assertBalanced([
        { accountId: 'a', currency: 'SLE', amount: -100n },
        { accountId: 'b', currency: 'USD', amount: 100n },
      ]),
    ).toThrow(/do not balance/);
    expect(() =>
      assertBalanced([
        { accountId: 'a', currency: 'SLE', amount: -100n },
        { accountId: 'b', currency: 'SLE', amount: 99n },
      ]),
    ).toThrow(/do not balance in SLE: -1/);
  });

  it('refuses a single posting and a zero posting', () => {
    expect(() => assertBalanced([{ accountId: 'a', currency: 'SLE', amount: 0n }])).toThrow();
    expect(() =>
      assertBalanced([
        { accountId: 'a', currency: 'SLE', amount: 0n },
        { accountId: 'b', currency: 'SLE', amount: 0n },
      ]),
    ).toThrow(/zero posting/);
  });

  it('locks user wallets first, then system accounts, each by id', () => {
    const order = lockOrder([
      { id: 'c', kind: 'application_fees' },
      { id: 'b', kind: 'user_wallet' },
      { id: 'a', kind: 'escrow' },
      { id: 'd', kind: 'user_wallet' },
    ]);
    expect(order.map((a) => a.id)).toEqual(['b', 'd', 'a', 'c']);
  });
});
