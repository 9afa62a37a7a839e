import { divideRoundHalfEven, parseMajorDecimal } from './money';

/**
 * SLE cents to USD cents at `slePerUsd` SLE for one USD (a decimal string such as "24.00"),
 * rounded half to even to the cent (decisions.md).
 */
export function sleToUsd(sleCents: bigint, slePerUsd: string): bigint {
  const rateCents = parseMajorDecimal(slePerUsd);
  if (rateCents === null || rateCents <= 0n) throw new RangeError(`invalid FX rate ${slePerUsd}`);
  return divideRoundHalfEven(sleCents * 100n, rateCents);
}
