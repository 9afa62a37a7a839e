/** A small seeded generator (mulberry32): the same seed gives the same plan. */
export function seeded(seed: number) {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  /** An integer in [min, max]. */
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => {
    if (!items.length) throw new Error('pick from an empty list');
    return items[int(0, items.length - 1)]!;
  };
  /** One of `weights`' keys, with the probability of its weight. */
  const weighted = <K extends string>(weights: Readonly<Record<K, number>>): K => {
    const entries = Object.entries(weights) as [K, number][];
    let roll = next() * entries.reduce((sum, [, w]) => sum + w, 0);
    for (const [key, weight] of entries) {
      roll -= weight;
      if (roll < 0) return key;
    }
    return entries[entries.length - 1]![0];
  };
  return { next, int, pick, weighted };
}

export type Random = ReturnType<typeof seeded>;
