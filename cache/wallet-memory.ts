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
 * The wallets this API process found active, so that a payment between wallets it has seen
 * needs no lookup before its workflow starts (one database round trip less per transfer or
 * escrow step). Memory only ever answers "go on": a wallet it does not know, or knows as
 * another application's, is read from the database and answered 404 or 403 at once, as before.
 * A wallet disabled since it was remembered is refused all the same, by the workflow's ledger
 * step, which asks the same rules again under its lock (domain/money-rules.ts) and declines
 * with the same 403; only the answer then costs a workflow. Which application and mode
 * a wallet belongs to never changes.
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
