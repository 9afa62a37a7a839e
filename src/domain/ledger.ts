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

/** An escrow hold: the amount leaves the sender's wallet for the escrow account. */
export function holdPostings(input: {
  walletId: string;
  escrowAccountId: string;
  currency: Currency;
  amount: bigint;
}): Posting[] {
  return transferPostings(input.walletId, input.escrowAccountId, input.currency, input.amount);
}

/** An escrow refund: what the hold still holds goes back from escrow to the sender's wallet. */
export function refundPostings(input: {
  escrowAccountId: string;
  walletId: string;
  currency: Currency;
  amount: bigint;
}): Posting[] {
  return transferPostings(input.escrowAccountId, input.walletId, input.currency, input.amount);
}

/**
 * An escrow release of `net + fee`: it leaves the escrow account, the recipient gets the net
 * and the application's fee account the fee (either leg is left out when it is zero).
 */
export function releasePostings(input: {
  escrowAccountId: string;
  recipientWalletId: string;
  feeAccountId: string | null;
  currency: Currency;
  net: bigint;
  fee: bigint;
}): Posting[] {
  const { currency, net, fee } = input;
  if (net < 0n || fee < 0n || net + fee <= 0n) throw new Error('a release must move money');
  if (fee > 0n && !input.feeAccountId) throw new Error('a release fee needs a fee account');
  const postings: Posting[] = [
    { accountId: input.escrowAccountId, currency, amount: -(net + fee) },
  ];
  if (net > 0n) postings.push({ accountId: input.recipientWalletId, currency, amount: net });
  if (fee > 0n) postings.push({ accountId: input.feeAccountId!, currency, amount: fee });
  return postings;
}

/**
 * A paid mobile-money deposit (SLE cents from the provider). The provider's clearing account gives
 * what the payer paid and keeps its fee; the fee account gets the application fee; the wallet the
 * deposit, through the FX accounts for a USD wallet (SLE in, `creditedUsd` out).
 */
export function depositCompletionPostings(input: {
  walletId: string;
  clearingAccountId: string;
  feeAccountId: string;
  sleAmount: bigint;
  totalPaid: bigint;
  providerFee: bigint;
  applicationFee: bigint;
  /** For a USD wallet: the FX accounts and the USD cents credited. */
  fx: { sleAccountId: string; usdAccountId: string; creditedUsd: bigint } | null;
}): Posting[] {
  const postings: Posting[] = [
    { accountId: input.clearingAccountId, currency: 'SLE', amount: -input.totalPaid },
  ];
  if (input.providerFee > 0n)
    postings.push({
      accountId: input.clearingAccountId,
      currency: 'SLE',
      amount: input.providerFee,
    });
  if (input.applicationFee > 0n)
    postings.push({ accountId: input.feeAccountId, currency: 'SLE', amount: input.applicationFee });
  if (input.fx === null) {
    postings.push({ accountId: input.walletId, currency: 'SLE', amount: input.sleAmount });
  } else {
    postings.push(
      { accountId: input.fx.sleAccountId, currency: 'SLE', amount: input.sleAmount },
      { accountId: input.fx.usdAccountId, currency: 'USD', amount: -input.fx.creditedUsd },
      { accountId: input.walletId, currency: 'USD', amount: input.fx.creditedUsd },
    );
  }
  assertBalanced(postings);
  return postings;
}

/**
 * A card deposit the provider charged (in the base currency: no FX). The card clearing account
 * gives what the card was charged and keeps the provider's fee; the application's fee account
 * gets the application fee; the wallet gets the deposit.
 */
export function cardDepositCompletionPostings(input: {
  walletId: string;
  clearingAccountId: string;
  feeAccountId: string;
  currency: Currency;
  amount: bigint;
  totalPaid: bigint;
  providerFee: bigint;
  applicationFee: bigint;
}): Posting[] {
  const { currency } = input;
  if (input.amount <= 0n) throw new Error('a card deposit amount must be positive');
  const postings: Posting[] = [
    { accountId: input.clearingAccountId, currency, amount: -input.totalPaid },
  ];
  if (input.providerFee > 0n)
    postings.push({ accountId: input.clearingAccountId, currency, amount: input.providerFee });
  if (input.applicationFee > 0n)
    postings.push({ accountId: input.feeAccountId, currency, amount: input.applicationFee });
  postings.push({ accountId: input.walletId, currency, amount: input.amount });
  assertBalanced(postings);
  return postings;
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

/**
 * Money out, step 1 (reserve): the whole debit of a payout or cashout (amount and every fee)
 * leaves the wallet for the payouts clearing account, in one ledger transaction, before the
 * provider is asked; the wallet check constraint refuses an overdraft.
 */
export function moneyOutReservePostings(input: {
  walletId: string;
  clearingAccountId: string;
  currency: Currency;
  total: bigint;
}): Posting[] {
  return transferPostings(input.walletId, input.clearingAccountId, input.currency, input.total);
}

/**
 * Money out, step 3a (settle): the payouts clearing account gives all it reserved, the application
 * fee to the fee account and the provider's share to its clearing account, through the FX accounts
 * when the provider works in another currency (a USD application's mobile-money cashout).
 */
export function moneyOutSettlementPostings(input: {
  clearingAccountId: string;
  feeAccountId: string;
  providerAccountId: string;
  currency: Currency;
  /** Amount and provider fee, in the reserve's currency. */
  providerShare: bigint;
  applicationFee: bigint;
  fx: {
    fromAccountId: string;
    toAccountId: string;
    providerCurrency: Currency;
    providerAmount: bigint;
  } | null;
}): Posting[] {
  const { currency, providerShare, applicationFee } = input;
  if (providerShare <= 0n || applicationFee < 0n) throw new Error('a settlement must move money');
  const postings: Posting[] = [
    { accountId: input.clearingAccountId, currency, amount: -(providerShare + applicationFee) },
  ];
  if (applicationFee > 0n)
    postings.push({ accountId: input.feeAccountId, currency, amount: applicationFee });
  if (input.fx === null) {
    postings.push({ accountId: input.providerAccountId, currency, amount: providerShare });
  } else {
    const { fromAccountId, toAccountId, providerCurrency, providerAmount } = input.fx;
    postings.push(
      { accountId: fromAccountId, currency, amount: providerShare },
      { accountId: toAccountId, currency: providerCurrency, amount: -providerAmount },
      { accountId: input.providerAccountId, currency: providerCurrency, amount: providerAmount },
    );
  }
  assertBalanced(postings);
  return postings;
}

/**
 * Money out, step 3b (give back): the provider refused or failed; everything reserved (amount
 * and every fee) goes back from the payouts clearing account to the wallet.
 */
export function moneyOutGiveBackPostings(input: {
  clearingAccountId: string;
  walletId: string;
  currency: Currency;
  total: bigint;
}): Posting[] {
  return transferPostings(input.clearingAccountId, input.walletId, input.currency, input.total);
}

/**
 * Money out, after a settlement (reverse): a payout reported paid failed later (a card payout can
 * fail days after). The settlement's legs, negated, with the wallet in the clearing account's
 * place: everything it moved comes back to the wallet.
 */
export function moneyOutReversalPostings(
  input: Omit<Parameters<typeof moneyOutSettlementPostings>[0], 'clearingAccountId'> & {
    walletId: string;
  },
): Posting[] {
  const settled = moneyOutSettlementPostings({ ...input, clearingAccountId: input.walletId });
  return settled.map((p) => ({ ...p, amount: -p.amount }));
}

/** Which way a dispute's reserve moves: in at opening, back to the wallet, or out when lost. */
export type DisputeStep = 'reserve' | 'won' | 'lost';

/**
 * A dispute's money (docs/api.md, Refunds and Disputes): what the wallet holds of it
 * (`reserved`) moves to the dispute reserve, then back when won or to the card provider when lost.
 * Null when `reserved` is zero: nothing moves (the uncovered part is only recorded).
 */
export function disputePostings(input: {
  step: DisputeStep;
  walletId: string;
  reserveAccountId: string;
  /** The card clearing account, for a lost dispute. */
  providerAccountId: string | null;
  currency: Currency;
  reserved: bigint;
}): Posting[] | null {
  const { step, currency, reserved } = input;
  if (reserved < 0n) throw new Error('a dispute cannot reserve a negative amount');
  if (reserved === 0n) return null;
  if (step === 'reserve') {
    return transferPostings(input.walletId, input.reserveAccountId, currency, reserved);
  }
  if (step === 'won') {
    return transferPostings(input.reserveAccountId, input.walletId, currency, reserved);
  }
  if (!input.providerAccountId) throw new Error('a lost dispute pays the provider’s account');
  return transferPostings(input.reserveAccountId, input.providerAccountId, currency, reserved);
}
