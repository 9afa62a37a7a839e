/**
 * What a process remembers of values that rarely change (a wallet's currency, switched only while
 * empty; a system account's id; a hold's owner), in a map that starts over past `limit` entries.
 * Each caller's guard or lookup checks again what it remembers, so a stale entry is read afresh.
 */
export function remember<V>(memory: Map<string, V>, key: string, value: V, limit = 100_000): void {
  if (memory.size >= limit && !memory.has(key)) memory.clear();
  memory.set(key, value);
}

/** A bounded memory whose entries are forgotten `ttlMs` after they were set. */
export type ExpiringMemory<V> = {
  /** The value of `key` while fresh; else undefined. */
  get: (key: string) => V | undefined;
  set: (key: string, value: V) => void;
  forget: (key: string) => void;
  forgetAll: () => void;
};

/**
 * A memory of values that may change (a credential, a wallet's state): each is trusted for
 * `ttlMs` only, and the memory starts over past `limit` entries, as `remember`'s does.
 */
export function expiringMemory<V>(options: { limit: number; ttlMs: number }): ExpiringMemory<V> {
  const entries = new Map<string, { value: V; at: number }>();
  return {
    get: (key) => {
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (Date.now() - entry.at > options.ttlMs) {
        entries.delete(key);
        return undefined;
      }
      return entry.value;
    },
    set: (key, value) => remember(entries, key, { value, at: Date.now() }, options.limit),
    forget: (key) => {
      entries.delete(key);
    },
    forgetAll: () => entries.clear(),
  };
}
