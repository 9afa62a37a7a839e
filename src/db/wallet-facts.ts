import { sql, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import type { HoldFacts, WalletFacts } from '../domain/money-rules';

/**
 * Where each fact of `WalletFacts` (src/domain/money-rules.ts) is read, and its type: the one place a
 * new wallet fact is added besides its type, which the compiler holds this to. `scope` is the
 * wallet's row or its ledger account's, alike for a wallet (`walletFacts`'s `scope`).
 */
const WALLET_FACTS = {
  id: { from: 'scope', type: z.string() },
  application_id: { from: 'scope', type: z.string() },
  mode: { from: 'scope', type: z.enum(['test', 'live']) },
  is_active: { from: 'wallet', type: z.boolean() },
  currency: { from: 'account', type: z.enum(['USD', 'SLE']) },
  base_currency: { from: 'application', type: z.enum(['USD', 'SLE']) },
  balance: { from: 'account', type: z.bigint() },
} as const satisfies {
  [K in keyof WalletFacts]: {
    from: 'scope' | 'wallet' | 'account' | 'application';
    type: z.ZodType<WalletFacts[K]>;
  };
};

/** The hold fields a step's facts hold, columns of `transactions` of the same names. */
const HOLD_FACTS = {
  id: true,
  application_id: true,
  mode: true,
  status: true,
  currency: true,
  escrow_amount: true,
} as const satisfies { [K in keyof HoldFacts]: true };

type WalletField = keyof typeof WALLET_FACTS;

/** The wallet fields a step's facts hold, as columns of a relation that reads a wallet. */
export const WALLET_FIELDS = Object.keys(WALLET_FACTS) as WalletField[];

/** The hold fields a step's facts hold, as columns of `transactions`. */
export const HOLD_FIELDS = Object.keys(HOLD_FACTS) as (keyof HoldFacts)[];

type WalletFactsShape = { [K in WalletField]: (typeof WALLET_FACTS)[K]['type'] };

/** A wallet's facts as a query reads them (`walletFacts`). */
export const walletFactsRow = z.object(
  Object.fromEntries(WALLET_FIELDS.map((f) => [f, WALLET_FACTS[f].type])) as WalletFactsShape,
);

/**
 * What a money step checks of a wallet without its lock: its scope, whether it is active, its
 * currency and its application's base currency (src/domain/money-rules.ts); all but the balance.
 */
export const walletState = walletFactsRow.omit({ balance: true });
export type WalletState = z.infer<typeof walletState>;
const WALLET_STATE_FIELDS = WALLET_FIELDS.filter((f) => f !== 'balance');

type StateShape = typeof walletState.shape;
type Prefixed<P extends string, T> = { [K in keyof T & string as `${P}${K}`]: T[K] };

/**
 * A wallet's state columns as an outer join reads them, named `<prefix><field>`: every one null
 * when there is no wallet.
 */
export function joinedWalletStateShape<P extends string = ''>(
  prefix = '' as P,
): Prefixed<P, { [K in keyof StateShape]: z.ZodNullable<StateShape[K]> }> {
  return Object.fromEntries(
    WALLET_STATE_FIELDS.map((f) => [`${prefix}${f}`, WALLET_FACTS[f].type.nullable()]),
  ) as never;
}

/** The state an outer join read (`joinedWalletStateShape`), or undefined when it found no wallet. */
export function joinedWalletState<P extends string = ''>(
  row: Prefixed<P, { [K in keyof WalletState]: WalletState[K] | null }>,
  prefix = '' as P,
): WalletState | undefined {
  const state: Record<string, unknown> = {};
  for (const field of WALLET_STATE_FIELDS) {
    const v = (row as Record<string, unknown>)[`${prefix}${field}`];
    if (v === null || v === undefined) return undefined;
    state[field] = v;
  }
  return state as WalletState;
}

/** The aliases a query gives the tables a wallet's facts are read from. */
export type WalletFactTables = {
  /** `ledger_accounts` (default `a`). */
  account?: string;
  /** `wallets` (default `w`). */
  wallet?: string;
  /** `applications`, the wallet's (default `app`). */
  application?: string;
  /**
   * Which row reads the scope (id, application, mode): the wallet's (default), or the ledger
   * account's, in a relation of accounts some of which are no wallet.
   */
  scope?: 'wallet' | 'account';
};

/**
 * A wallet's facts as a select list, `<table>.<field> AS <prefix><field>`, from the tables the
 * query joins (`tables`): the one projection every reader of a wallet's facts writes. `omit`
 * leaves out what a reader does not read (the balance, without its lock).
 */
export function walletFacts(
  tables: WalletFactTables = {},
  options: { prefix?: string; omit?: readonly WalletField[] } = {},
): FragmentSqlToken {
  const { account = 'a', wallet = 'w', application = 'app', scope = 'wallet' } = tables;
  const alias = { account, wallet, application, scope: scope === 'wallet' ? wallet : account };
  const columns = WALLET_FIELDS.filter((f) => !options.omit?.includes(f)).map(
    (f) =>
      sql.fragment`${sql.identifier([alias[WALLET_FACTS[f].from], f])} AS ${sql.identifier([
        `${options.prefix ?? ''}${f}`,
      ])}`,
  );
  return sql.fragment`${sql.join(columns, sql.fragment`, `)}`;
}

/** A hold's facts as a select list of `transactions` (`HOLD_FIELDS`). */
export const holdFacts: FragmentSqlToken = sql.fragment`${sql.join(
  HOLD_FIELDS.map((f) => sql.identifier([f])),
  sql.fragment`, `,
)}`;
