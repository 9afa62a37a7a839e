import type { CommonQueryMethods } from '../db/pool';
import { findTransaction } from '../db/transactions';
import { findUser, type UserRow } from '../db/users';
import type { WalletMemory } from '../cache/wallet-memory';
import { findWallet, walletStates, type WalletRow, type WalletState } from '../db/wallets';
import {
  activeWalletRules,
  decide,
  decideOverWallets,
  reads,
  type Facts,
  type MoneyStep,
} from '../domain/money-rules';
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
  refuseIfDeclined(activeWalletRules, { subjects: { wallet }, params: {} });
  return wallet;
}

/** A money step's rules over what the API read: the first that does not hold is its answer. */
export function refuseIfDeclined<S extends string, P extends string>(
  step: MoneyStep<S, P>,
  facts: Facts<S, P>,
): void {
  const decision = decide(step, facts);
  if (decision.status === 'declined') throw new AppError(decision.code, decision.detail);
}

/** What a money step's early answer knows: the wallets it names, its other subjects, its params. */
export type EarlyFacts<S extends string, P extends string> = {
  /** The wallets the step names, by role; null: the role is not named. */
  wallets: Partial<Record<S, string | null>>;
  subjects?: Facts<S, P>['subjects'];
  params?: Facts<S, P>['params'];
  /**
   * The route's own checks past the money rules (a payout account able to receive, say): run
   * with the early answer, so a retry whose key's payment exists skips them as it skips the rules.
   */
  checks?: () => void | Promise<void>;
};

/**
 * The early answer of the money step of payment `payment` (the id the route derives from the
 * request's key), as the pipeline binds it to a request (src/api/route.ts `RouteContext`).
 */
export type EarlyAnswer = <S extends string, P extends string>(
  payment: string,
  step: MoneyStep<S, P>,
  known: EarlyFacts<S, P>,
  memory?: WalletMemory,
) => Promise<void>;

/**
 * The request's early answer. A retry whose key's first attempt made its payment skips it: the
 * payment's workflow then answers its outcome, never a decline computed after the money moved.
 */
export function earlyAnswer(
  db: CommonQueryMethods,
  caller: Caller,
  idempotency: { fresh: boolean } | null,
): EarlyAnswer {
  return async (payment, step, known, memory) => {
    if (idempotency && !idempotency.fresh && (await findTransaction(db, payment))) return;
    await answerEarly(db, caller, step, known, memory);
    await known.checks?.();
  };
}

/**
 * A money step's early answer, before its workflow starts (src/domain/money-rules.ts): the first rule
 * that fails over what the API knows answers as the step would; a rule that needs what only the
 * step knows (a balance under its lock, a wallet from memory) is left to it, with every rule after.
 */
async function answerEarly<S extends string, P extends string>(
  db: CommonQueryMethods,
  caller: Caller,
  step: MoneyStep<S, P>,
  known: EarlyFacts<S, P>,
  memory?: WalletMemory,
): Promise<void> {
  const named = Object.entries<string | null | undefined>(known.wallets);
  const params = {
    applicationId: caller.applicationId,
    mode: caller.mode,
    ...known.params,
  } as Facts<S, P>['params'];
  const decideWith = (states: Map<string, WalletState> | undefined) =>
    decideOverWallets(step, known.wallets, states, {
      params,
      ...(known.subjects && { subjects: known.subjects }),
    });
  // What is known without a read first: the wallets are read only if the next rule asks them, in
  // one query, and not when `memory` found each the caller's and active before.
  let decision = decideWith(undefined);
  const ids = named.flatMap(([, id]) => (id ? [id] : []));
  const next = decision.status === 'unknown' ? decision.rule : undefined;
  if (
    next &&
    named.some(([role, id]) => id && reads(next.holds, role)) &&
    !memory?.allActive(caller, ids)
  ) {
    const states = await walletStates(db, ids);
    memory?.remember([...states.values()]);
    decision = decideWith(states);
  }
  if (decision.status === 'declined') throw new AppError(decision.code, decision.detail);
}
