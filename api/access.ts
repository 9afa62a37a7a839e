import type { CommonQueryMethods } from '../db/pool';
import { findUser, type UserRow } from '../db/users';
import type { WalletMemory } from '../cache/wallet-memory';
import { findWallet, walletStates, type WalletRow } from '../db/wallets';
import { decide, type Facts, type MoneyStep } from '../domain/money-rules';
import type { Caller } from '../domain/types';
import { AppError, notFound } from './errors';

/** 404 when it does not exist at all, 403 when it belongs to another application or mode. */
export function assertOwned<T extends { application_id: string; mode: string }>(
  caller: Caller,
  row: T | null,
  what: string,
): T {
  if (!row) throw notFound(what);
  if (row.application_id !== caller.applicationId || row.mode !== caller.mode) {
    throw new AppError(
      'forbidden',
      `You do not have permission to access this ${what.toLowerCase()}`,
    );
  }
  return row;
}

export async function ownedUser(
  db: CommonQueryMethods,
  caller: Caller,
  id: string,
): Promise<UserRow> {
  return assertOwned(caller, await findUser(db, id), 'User');
}

export async function ownedWallet(
  db: CommonQueryMethods,
  caller: Caller,
  id: string,
): Promise<WalletRow> {
  return assertOwned(caller, await findWallet(db, id), 'Wallet');
}

/** A wallet of the caller's that may take part in a payment: 403 when it is disabled. */
export async function activeWallet(
  db: CommonQueryMethods,
  caller: Caller,
  id: string,
): Promise<WalletRow> {
  return assertActive(await ownedWallet(db, caller, id));
}

function assertActive(wallet: WalletRow): WalletRow {
  if (!wallet.is_active) throw new AppError('wallet_disabled');
  return wallet;
}

/**
 * A money step's early answer (domain/money-rules.ts), before its workflow starts: the wallets it
 * names are read in one query (or, with `memory`, cache/wallet-memory.ts, not read when each was
 * found the caller's and active before), and the step's rules are decided over them and what else
 * is known (`subjects`, such as a hold); the first that does not hold answers as the workflow's
 * step would. A rule that needs what the API does not know (a balance under its lock, a wallet
 * from memory) is left to the step, with every rule after it.
 */
export async function answerEarly<S extends string, P extends string>(
  db: CommonQueryMethods,
  caller: Caller,
  step: MoneyStep<S, P>,
  known: {
    /** The wallets the step names, by role; null: the role is not named. */
    wallets: Partial<Record<S, string | null>>;
    subjects?: Facts<S, P>['subjects'];
    params?: Facts<S, P>['params'];
  },
  memory?: WalletMemory,
): Promise<void> {
  const named = Object.entries<string | null | undefined>(known.wallets);
  const ids = named.flatMap(([, id]) => (id ? [id] : []));
  const states = memory?.allActive(caller, ids) ? undefined : await walletStates(db, ids);
  if (states) memory?.remember([...states.values()]);
  const wallets = Object.fromEntries(
    named.map(([role, id]) => [role, id ? (states ? (states.get(id) ?? null) : undefined) : null]),
  ) as Facts<S, P>['subjects'];
  const decision = decide(step, {
    subjects: { ...wallets, ...known.subjects },
    params: { applicationId: caller.applicationId, mode: caller.mode, ...known.params } as Facts<
      S,
      P
    >['params'],
  });
  if (decision.status === 'declined') throw new AppError(decision.code, decision.detail);
}
