import { divideRoundHalfEven, parseMajorDecimal, type Currency } from './money';

/**
 * SLE cents to USD cents at `slePerUsd` SLE for one USD (a decimal string such as "24.00"),
 * rounded half to even to the cent (docs/api.md, API conventions).
 */
export function sleToUsd(sleCents: bigint, slePerUsd: string): bigint {
  const rateCents = parseMajorDecimal(slePerUsd);
  if (rateCents === null || rateCents <= 0n) throw new RangeError(`invalid FX rate ${slePerUsd}`);
  return divideRoundHalfEven(sleCents * 100n, rateCents);
}

/**
 * SLE cents in an application's base currency: as they are in SLE, converted in USD; null when
 * the converted amount is less than one cent, which no ledger entry can carry.
 */
export function sleInBaseCurrency(
  sleCents: bigint,
  base: Currency,
  slePerUsd: string,
): bigint | null {
  if (base === 'SLE') return sleCents;
  const usd = sleToUsd(sleCents, slePerUsd);
  return usd > 0n ? usd : null;
}
