/**
 * What a process remembers of values that, once committed, never change (a wallet's currency, a
 * system account's id, a hold's owner): a map that starts over past `limit` entries, so that it
 * never grows without bound. Each caller's guard or lookup checks again what it remembers.
 */
export function remember<V>(memory: Map<string, V>, key: string, value: V, limit = 100_000): void {
  if (memory.size >= limit && !memory.has(key)) memory.clear();
  memory.set(key, value);
}
