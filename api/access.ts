import type { CommonQueryMethods } from '../db/pool';
import { findUser, type UserRow } from '../db/users';
import type { WalletMemory } from '../cache/wallet-memory';
import { findWallet, findWallets, type WalletRow } from '../db/wallets';
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
 * The wallets of a payment whose workflow checks them again under its lock: with `memory`
 * (cache/wallet-memory.ts), nothing is read when every one of them was found the caller's and
 * active before; else they are read, in one query, and checked in the order asked as
 * `activeWallet` checks one (the first that fails answers), or, with `ownershipFirst`, all found
 * and owned before any is refused as disabled.
 */
export async function checkPaymentWallets(
  db: CommonQueryMethods,
  caller: Caller,
  ids: readonly string[],
  memory: WalletMemory | undefined,
  { ownershipFirst = false }: { ownershipFirst?: boolean } = {},
): Promise<void> {
  if (memory?.allActive(caller, ids)) return;
  const found = await findWallets(db, ids);
  memory?.remember([...found.values()]);
  const owned = (id: string) => assertOwned(caller, found.get(id) ?? null, 'Wallet');
  if (ownershipFirst) ids.map(owned).forEach(assertActive);
  else for (const id of ids) assertActive(owned(id));
}
