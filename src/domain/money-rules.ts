import type { ErrorCode } from './errors';

/**
 * Every decline of every money step, written once, as data; the first rule that does not hold is
 * the answer. `decide` reads the same list as the SQL compiled from it (src/db/money-rules.ts), so no
 * path can decide a decline its own way. See docs/architecture.md, Money rules.
 */

/** A fact's or parameter's value: text, minor units, a flag, or none. */
export type Value = string | bigint | boolean | null;

/** What a money step reads of a wallet (under its lock, for `balance`). */
export type WalletFacts = {
  id: string;
  application_id: string;
  mode: string;
  is_active: boolean;
  currency: string;
  base_currency: string;
  balance: bigint;
};

/** What a release or refund reads of its hold. */
export type HoldFacts = {
  id: string;
  application_id: string;
  mode: string;
  status: string;
  currency: string;
  escrow_amount: bigint;
};

/**
 * What a card refund or a dispute's opening reads of the card deposit it concerns
 * (src/db/card-cases.ts, under its lock in the activity): `left` is what neither a refund (pending or
 * completed) nor a dispute not won has taken.
 */
export type DepositFacts = {
  id: string;
  application_id: string;
  mode: string;
  transaction_type: string;
  status: string;
  currency: string;
  left: bigint;
};

type SubjectFacts = WalletFacts | HoldFacts | DepositFacts;
type Field = keyof WalletFacts | keyof HoldFacts | keyof DepositFacts;

export type Term =
  { subject: string; field: Field } | { param: string } | { value: Exclude<Value, null> };

export type Expr =
  | { op: 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge'; left: Term; right: Term }
  | { op: 'and' | 'or'; of: readonly Expr[] }
  | { op: 'not'; of: Expr }
  /** The subject (a wallet, a hold) was found. */
  | { op: 'exists'; subject: string }
  /** The parameter is null (a recipient not named, a release of all that is held). */
  | { op: 'absent'; param: string };

/** A decline: when `holds` is not true, the step answers `code` (with `detail`, if given). */
export type MoneyRule = { code: ErrorCode; detail?: string; holds: Expr };

/**
 * A money step's rules, over its subjects `S` (wallets named by their role, or `hold`) and its
 * parameters `P`, which type the facts a caller passes.
 */
export type MoneyStep<S extends string, P extends string> = {
  name: string;
  subjects: readonly S[];
  params: readonly P[];
  rules: readonly MoneyRule[];
};

/**
 * What is known when a step is decided. A subject `null` is known missing; `undefined` (a
 * subject, a field or a parameter) is not known here: `decide` stops at the first rule that needs
 * it, so the API, which reads no balance under a lock, answers only what it can know.
 */
export type Facts<S extends string, P extends string> = {
  subjects: { [K in S]?: Partial<SubjectFacts> | null };
  params: { [K in P]?: Value };
};

export type Decision =
  | { status: 'passed' }
  | { status: 'declined'; code: ErrorCode; detail?: string }
  /** `rule` needs a fact not known here; the rules before it all hold. */
  | { status: 'unknown'; rule: MoneyRule };

// The tiny expression form's builders.
const fact = (subject: string, field: Field): Term => ({ subject, field });
const param = (name: string): Term => ({ param: name });
const value = (v: Exclude<Value, null>): Term => ({ value: v });
const cmp =
  (op: 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge') =>
  (left: Term, right: Term): Expr => ({ op, left, right });
const eq = cmp('eq');
const ne = cmp('ne');
const gt = cmp('gt');
const ge = cmp('ge');
const le = cmp('le');
const and = (...of: Expr[]): Expr => ({ op: 'and', of });
const or = (...of: Expr[]): Expr => ({ op: 'or', of });
const exists = (subject: string): Expr => ({ op: 'exists', subject });
const absent = (name: string): Expr => ({ op: 'absent', param: name });

/** An active wallet: a disabled one takes part in no payment. */
const walletActive = (role: string): Expr => eq(fact(role, 'is_active'), value(true));

/** A wallet that may take part: found, the application's and mode's, active. */
function walletUsable(role: string, optional?: string): MoneyRule[] {
  const unlessUnnamed = (e: Expr) => (optional ? or(absent(optional), e) : e);
  return [
    { code: 'wallet_not_found', holds: unlessUnnamed(exists(role)) },
    {
      code: 'wallet_forbidden',
      holds: unlessUnnamed(
        and(
          eq(fact(role, 'application_id'), param('applicationId')),
          eq(fact(role, 'mode'), param('mode')),
        ),
      ),
    },
    { code: 'wallet_disabled', holds: unlessUnnamed(walletActive(role)) },
  ];
}

/**
 * A wallet in its application's base currency, and in `same`'s currency when given: a wallet
 * left in another currency takes no money step at all.
 */
function walletInCurrency(role: string, same?: Term, optional?: string): MoneyRule {
  const own = eq(fact(role, 'currency'), fact(role, 'base_currency'));
  const holds = same ? and(own, eq(fact(role, 'currency'), same)) : own;
  return { code: 'currency_mismatch', holds: optional ? or(absent(optional), holds) : holds };
}

const fundsFor = (role: string, amount: string): MoneyRule => ({
  code: 'insufficient_funds',
  holds: ge(fact(role, 'balance'), param(amount)),
});

/** An amount that converts to at least a cent of the base currency (`param` null: it does not). */
const convertible = (name: string): MoneyRule => ({
  code: 'validation_failed',
  detail: 'amount: too small to convert to the base currency',
  holds: { op: 'not', of: absent(name) },
});

const held: MoneyRule = {
  code: 'escrow_not_held',
  holds: and(
    eq(fact('hold', 'status'), value('held')),
    gt(fact('hold', 'escrow_amount'), value(0n)),
  ),
};

const step = <S extends string, P extends string>(
  name: string,
  subjects: readonly S[],
  params: readonly P[],
  rules: readonly MoneyRule[],
): MoneyStep<S, P> => ({ name, subjects, params, rules });

/**
 * A wallet of the caller's (found and owned already) asked to take part in a payment, before its
 * money step is known (src/api/access.ts `activeWallet`): the step's own rule that it be active.
 */
export const activeWalletRules = step(
  'active wallet',
  ['wallet'],
  [],
  [{ code: 'wallet_disabled', holds: walletActive('wallet') }],
);

/**
 * A hold still holding, read after a release or refund could not reach its workflow (src/api/routes/
 * escrow.ts): the steps' own rule, so a hold ended meanwhile answers as they would.
 */
export const heldRules = step('hold held', ['hold'], [], [held]);

/** Every wallet owned first, then every wallet active, as a payment between two reads best. */
export const transferRules = step(
  'transfer',
  ['from', 'to'],
  ['applicationId', 'mode', 'fromWalletId', 'toWalletId', 'amount'],
  [
    { code: 'same_wallet', holds: ne(param('fromWalletId'), param('toWalletId')) },
    ...['from', 'to'].flatMap((role) => walletUsable(role).slice(0, 2)),
    ...['from', 'to'].map((role) => walletUsable(role)[2]!),
    walletInCurrency('from'),
    walletInCurrency('to', fact('from', 'currency')),
    fundsFor('from', 'amount'),
  ],
);

/** A hold from `sender`, naming `recipient` (or no one) as whom a release pays by default. */
export const holdRules = step(
  'hold',
  ['sender', 'recipient'],
  ['applicationId', 'mode', 'walletId', 'recipientWalletId', 'amount'],
  [
    ...walletUsable('sender'),
    ...walletUsable('recipient', 'recipientWalletId'),
    walletInCurrency('sender'),
    walletInCurrency('recipient', fact('sender', 'currency'), 'recipientWalletId'),
    {
      code: 'same_wallet',
      detail: 'The recipient cannot be the sender',
      holds: or(absent('recipientWalletId'), ne(param('walletId'), param('recipientWalletId'))),
    },
    fundsFor('sender', 'amount'),
  ],
);

/** A release of `amount` (null: all that is held) to `recipient`, in the hold's currency. */
export const releaseRules = step(
  'release',
  ['hold', 'recipient'],
  ['applicationId', 'mode', 'recipientWalletId', 'amount'],
  [
    held,
    {
      code: 'validation_failed',
      detail: 'recipient_wallet_id: required (the hold names no recipient)',
      holds: { op: 'not', of: absent('recipientWalletId') },
    },
    ...walletUsable('recipient'),
    walletInCurrency('recipient', fact('hold', 'currency')),
    {
      code: 'validation_failed',
      detail: 'amount must be greater than 0',
      holds: or(absent('amount'), gt(param('amount'), value(0n))),
    },
    {
      code: 'release_exceeds_hold',
      holds: or(absent('amount'), le(param('amount'), fact('hold', 'escrow_amount'))),
    },
  ],
);

/**
 * A refund of all that is still held, to the sender. Only the sender's account is asked, not its
 * wallet: the money goes back where it came from, even from a wallet disabled or deleted since,
 * and is held only where the sender's account now holds another currency than the hold.
 */
export const refundRules = step(
  'escrow refund',
  ['hold', 'sender'],
  [],
  [
    held,
    { code: 'currency_mismatch', holds: eq(fact('sender', 'currency'), fact('hold', 'currency')) },
  ],
);

/**
 * A deposit opened into `wallet` in `currency` (the base currency when it opens), crediting
 * `credited` (null: a mobile-money amount too small to convert): refused before any provider is
 * asked, since money that cannot be credited must not be taken.
 */
export const depositRules = step(
  'deposit',
  ['wallet'],
  ['applicationId', 'mode', 'currency', 'credited'],
  [
    ...walletUsable('wallet'),
    walletInCurrency('wallet', param('currency')),
    convertible('credited'),
  ],
);

/**
 * A deposit's completion: the provider has the money, so it is credited as recorded (its
 * currency held by the pending record: src/db/transactions.ts `insertTransactionInCurrency`).
 */
export const depositCompletionRules = step('deposit completion', [], [], []);

/**
 * A payout's or cashout's reserve of `total` (the amount, `converted` to the base currency, and
 * every fee; both null when the amount is too small to convert) from `wallet`.
 */
export const moneyOutReserveRules = step(
  'money-out reserve',
  ['wallet'],
  ['applicationId', 'mode', 'converted', 'total'],
  [
    ...walletUsable('wallet'),
    walletInCurrency('wallet'),
    convertible('converted'),
    fundsFor('wallet', 'total'),
  ],
);

/** The card deposit a refund or a dispute concerns: found, the caller's application's and mode's. */
const depositOfCaller: MoneyRule[] = [
  { code: 'not_found', detail: 'Transaction not found', holds: exists('deposit') },
  {
    code: 'forbidden',
    detail: 'You do not have permission to access this transaction',
    holds: and(
      eq(fact('deposit', 'application_id'), param('applicationId')),
      eq(fact('deposit', 'mode'), param('mode')),
    ),
  },
];

/** A completed card deposit: the only payment a refund or a dispute may concern. */
const completedCardDeposit = (code: ErrorCode): MoneyRule => ({
  code,
  holds: and(
    eq(fact('deposit', 'transaction_type'), value('card_deposit')),
    eq(fact('deposit', 'status'), value('completed')),
  ),
});

/**
 * A dispute's opening on a completed card deposit of the caller: for at most what is left of it,
 * unless `byProvider`, whose amount (the whole charge, fees included) stands whatever its size.
 * The reserve takes what it can (`disputeReserve`); the rest is recorded uncovered, never declined.
 */
export const disputeOpenRules = step(
  'dispute open',
  ['deposit'],
  ['applicationId', 'mode', 'amount', 'byProvider'],
  [
    ...depositOfCaller,
    completedCardDeposit('dispute_not_allowed'),
    {
      code: 'validation_failed',
      detail: 'amount must be greater than 0',
      holds: or(absent('amount'), gt(param('amount'), value(0n))),
    },
    {
      code: 'dispute_exceeds_disputable',
      holds: or(
        eq(param('byProvider'), value(true)),
        and(
          gt(fact('deposit', 'left'), value(0n)),
          or(absent('amount'), le(param('amount'), fact('deposit', 'left'))),
        ),
      ),
    },
  ],
);

/**
 * What a dispute of `amount` reserves from a wallet holding `balance`, of a deposit with `left`
 * not refunded or disputed yet: no more than either; the rest of `amount` is uncovered.
 */
export function disputeReserve(amount: bigint, left: bigint, balance: bigint): bigint {
  const reservable = [amount, left, balance].reduce((a, b) => (b < a ? b : a));
  return reservable > 0n ? reservable : 0n;
}

/**
 * A card refund of `amount` (null: all that is left) of `deposit`, paid back by `wallet`, the
 * wallet it credited. The API decides it over what it reads without a lock, then names the
 * amount; the reserve decides it again under the deposit's lock (src/db/card-cases.ts).
 */
export const cardRefundRules = step(
  'card refund',
  ['deposit', 'wallet'],
  ['applicationId', 'mode', 'amount'],
  [
    ...depositOfCaller,
    completedCardDeposit('refund_not_allowed'),
    ...walletUsable('wallet'),
    walletInCurrency('wallet', fact('deposit', 'currency')),
    {
      // Nothing left refuses a refund of all that is left the same way.
      code: 'refund_exceeds_refundable',
      holds: or(
        and(absent('amount'), gt(fact('deposit', 'left'), value(0n))),
        le(param('amount'), fact('deposit', 'left')),
      ),
    },
    {
      code: 'insufficient_funds',
      holds: or(
        and(absent('amount'), ge(fact('wallet', 'balance'), fact('deposit', 'left'))),
        ge(fact('wallet', 'balance'), param('amount')),
      ),
    },
  ],
);

/**
 * What keeps an application's base currency from switching, in the order asked: each wallet is
 * switched with it, so none may hold money, and no payment or dispute may still settle in the old
 * currency (a dispute won later credits its wallet in the currency it was opened in).
 */
const CURRENCY_SWITCH_BLOCKERS = [
  { blocker: 'funded', detail: 'a wallet of the application holds money' },
  { blocker: 'open', detail: 'a payment of the application is still open' },
  { blocker: 'disputed', detail: 'a dispute of the application is still open' },
] as const;

/** What src/db/applications.ts reads of an application before switching its base currency. */
export type CurrencySwitchFacts = {
  [B in (typeof CURRENCY_SWITCH_BLOCKERS)[number]['blocker']]: boolean;
};

/** Why the base currency may not switch now (the first blocker found), or null: it may. */
export function currencySwitchRefusal(facts: CurrencySwitchFacts): string | null {
  const found = CURRENCY_SWITCH_BLOCKERS.find((b) => facts[b.blocker]);
  return found ? `the base currency cannot change: ${found.detail}` : null;
}

/** Every money step's rules, for the documentation and the parity test. */
export const MONEY_STEPS = {
  transfer: transferRules,
  hold: holdRules,
  release: releaseRules,
  refund: refundRules,
  deposit: depositRules,
  depositCompletion: depositCompletionRules,
  moneyOutReserve: moneyOutReserveRules,
  disputeOpen: disputeOpenRules,
  cardRefund: cardRefundRules,
} as const;

/**
 * A step's decision over the wallets it names by role (an id, or null: the role is not named),
 * with `states` the wallets read by id (one missing: not found) or undefined when none was read
 * yet: the early answer's reading, the API's (src/api/access.ts) and a bulk payment's alike.
 */
export function decideOverWallets<S extends string, P extends string>(
  step: MoneyStep<S, P>,
  wallets: Partial<Record<S, string | null>>,
  states: ReadonlyMap<string, Partial<WalletFacts>> | undefined,
  facts: { params: Facts<S, P>['params']; subjects?: Facts<S, P>['subjects'] },
): Decision {
  const named = Object.entries<string | null | undefined>(wallets);
  const subjects = Object.fromEntries(
    named.map(([role, id]) => [role, id ? (states ? (states.get(id) ?? null) : undefined) : null]),
  ) as Facts<S, P>['subjects'];
  return decide(step, { subjects: { ...subjects, ...facts.subjects }, params: facts.params });
}

/** SQL's three values, and `undefined` for a fact not known here. */
type Truth = boolean | null | undefined;

function termValue(term: Term, facts: Facts<string, string>): Value | undefined {
  if ('value' in term) return term.value;
  if ('param' in term) return facts.params[term.param];
  const subject = facts.subjects[term.subject];
  if (subject === undefined) return undefined;
  // A missing subject's fields are null, as an outer join reads them.
  if (subject === null) return null;
  return (subject as Record<string, Value | undefined>)[term.field];
}

/** Two known values compared (`op` of an `Expr`); values of two types are a mistake of a rule. */
export function compareValues(op: string, left: Value, right: Value): boolean {
  if (typeof left !== typeof right) {
    throw new Error(`money rules compare ${typeof left} with ${typeof right}`);
  }
  switch (op) {
    case 'eq':
      return left === right;
    case 'ne':
      return left !== right;
    case 'lt':
      return left! < right!;
    case 'le':
      return left! <= right!;
    case 'gt':
      return left! > right!;
    default:
      return left! >= right!;
  }
}

/** An expression's truth over the facts, by SQL's rules (src/db/money-rules.ts compiles it so). */
export function truthOf(expr: Expr, facts: Facts<string, string>): Truth {
  switch (expr.op) {
    case 'exists': {
      const subject = facts.subjects[expr.subject];
      return subject === undefined ? undefined : subject !== null;
    }
    case 'absent': {
      const v = facts.params[expr.param];
      return v === undefined ? undefined : v === null;
    }
    case 'not': {
      const t = truthOf(expr.of, facts);
      return typeof t === 'boolean' ? !t : t;
    }
    case 'and':
    case 'or': {
      const decisive = expr.op === 'or';
      const truths = expr.of.map((e) => truthOf(e, facts));
      if (truths.includes(decisive)) return decisive;
      if (truths.includes(undefined)) return undefined;
      if (truths.includes(null)) return null;
      return !decisive;
    }
    default: {
      const left = termValue(expr.left, facts);
      const right = termValue(expr.right, facts);
      if (left === undefined || right === undefined) return undefined;
      if (left === null || right === null) return null;
      return compareValues(expr.op, left, right);
    }
  }
}

/**
 * The step's answer over what is known: the first rule that does not hold declines; a rule that
 * needs a fact not known stops there (the rules after it are for whoever knows more).
 */
export function decide<S extends string, P extends string>(
  rules: MoneyStep<S, P>,
  facts: Facts<S, P>,
): Decision {
  for (const rule of rules.rules) {
    const truth = truthOf(rule.holds, facts);
    if (truth === undefined) return { status: 'unknown', rule };
    if (truth !== true) {
      return { status: 'declined', code: rule.code, ...(rule.detail && { detail: rule.detail }) };
    }
  }
  return { status: 'passed' };
}

/** Whether an expression reads a fact of `subject` (a wallet's role, `hold`). */
export function reads(expr: Expr, subject: string): boolean {
  switch (expr.op) {
    case 'exists':
      return expr.subject === subject;
    case 'absent':
      return false;
    case 'not':
      return reads(expr.of, subject);
    case 'and':
    case 'or':
      return expr.of.some((e) => reads(e, subject));
    default:
      return [expr.left, expr.right].some((t) => 'subject' in t && t.subject === subject);
  }
}
