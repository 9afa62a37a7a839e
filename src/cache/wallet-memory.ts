import type { Caller } from '../domain/types';
import { expiringMemory } from './bounded';

/** A wallet found active longer ago than this is read again. */
const TTL_MS = 60_000;
/** Past this many wallets the memory starts over (it never grows without bound). */
const MAX_ENTRIES = 100_000;

export type WalletMemory = {
  /** Whether every wallet is the caller's and was found active within the TTL. */
  allActive: (caller: Caller, ids: readonly string[]) => boolean;
  /** Wallets just read: those that are active are remembered, any other is forgotten. */
  remember: (
    wallets: readonly { id: string; application_id: string; mode: string; is_active: boolean }[],
  ) => void;
  /** A wallet's or user's `is_active` was changed by this process: forget what was seen. */
  forgetAll: () => void;
};

/**
 * Wallets this API process found active, so a payment between them needs no lookup first. Memory
 * only ever answers "go on": a wallet disabled since is still refused with the same 403 by the
 * ledger step, under its lock (src/domain/money-rules.ts). See docs/api.md, API conventions.
 */
export function createWalletMemory(): WalletMemory {
  /** The scope (application and mode) of each wallet found active. */
  const seen = expiringMemory<string>({ limit: MAX_ENTRIES, ttlMs: TTL_MS });
  const scopeOf = (applicationId: string, mode: string) => `${applicationId}/${mode}`;
  return {
    allActive: (caller, ids) => {
      const scope = scopeOf(caller.applicationId, caller.mode);
      return ids.every((id) => seen.get(id) === scope);
    },
    remember: (wallets) => {
      for (const wallet of wallets) {
        if (wallet.is_active) seen.set(wallet.id, scopeOf(wallet.application_id, wallet.mode));
        else seen.forget(wallet.id);
      }
    },
    forgetAll: () => seen.forgetAll(),
  };
}
