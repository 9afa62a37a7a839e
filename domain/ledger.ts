import type { Currency } from './money';

/** One leg of a ledger transaction: a signed amount on one account (credit +, debit -). */
export type Posting = { accountId: string; currency: Currency; amount: bigint };

/** An account's place in the fixed lock order: user wallets first, hot system accounts last. */
export type AccountRef = { id: string; kind: string };

/**
 * Checks that postings can form one ledger transaction: no zero legs, and the signed amounts
 * sum to zero per currency. Throws on a programming error; the database checks it again.
 */
export function assertBalanced(postings: readonly Posting[]): void {
  if (postings.length < 2) throw new Error('a ledger transaction needs at least two postings');
  const sums = new Map<Currency, bigint>();
  for (const p of postings) {
    if (p.amount === 0n) throw new Error(`zero posting on account ${p.accountId}`);
    sums.set(p.currency, (sums.get(p.currency) ?? 0n) + p.amount);
  }
  for (const [currency, sum] of sums) {
    if (sum !== 0n) throw new Error(`postings do not balance in ${currency}: ${sum.toString()}`);
  }
}

/** A transfer of `amount` from one account to another. */
export function transferPostings(
  from: string,
  to: string,
  currency: Currency,
  amount: bigint,
): Posting[] {
  if (amount <= 0n) throw new Error('a transfer amount must be positive');
  return [
    { accountId: from, currency, amount: -amount },
    { accountId: to, currency, amount },
  ];
}

/**
 * The order in which accounts are locked: user wallets before system accounts (the hot fee and
 * escrow accounts are held for the shortest time), then by id. Every writer uses it, so two
 * concurrent ledger transactions never wait on each other in a cycle.
 */
export function lockOrder<T extends AccountRef>(accounts: readonly T[]): T[] {
  const rank = (a: AccountRef) => (a.kind === 'user_wallet' ? 0 : 1);
  return [...accounts].sort(
    (a, b) => rank(a) - rank(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
}
