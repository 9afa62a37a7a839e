/**
 * Money is bigint minor units inside the service and JSON numbers in major units (at most 2
 * decimals) on the wire. These functions are the only crossing, and never do float arithmetic on
 * money: a number is read through its shortest decimal string.
 */

export const CURRENCIES = ['USD', 'SLE'] as const;
export type Currency = (typeof CURRENCIES)[number];

/** Largest amount accepted on the wire, in minor units: 10^13 = 100 billion major units. */
export const MAX_MINOR_UNITS = 10n ** 13n;

const DECIMAL = /^(\d+)(?:\.(\d{1,2}))?$/;

/** Parses a decimal string in major units ("12.5") into minor units (1250n); null if invalid. */
export function parseMajorDecimal(text: string): bigint | null {
  const match = DECIMAL.exec(text);
  if (!match) return null;
  const whole = match[1] ?? '0';
  const fraction = (match[2] ?? '').padEnd(2, '0');
  return BigInt(whole) * 100n + BigInt(fraction);
}

/**
 * Converts a JSON number in major units into minor units. Returns null for NaN, infinities,
 * negative numbers, more than 2 decimals, or amounts above MAX_MINOR_UNITS.
 */
export function majorNumberToMinor(value: number): bigint | null {
  if (!Number.isFinite(value) || value < 0) return null;
  // String(x) is the shortest decimal that round-trips, so 12.5 -> "12.5", 0.1 + 0.2 -> too many decimals.
  const text = String(value);
  if (text.includes('e')) return null;
  const minor = parseMajorDecimal(text);
  if (minor === null || minor > MAX_MINOR_UNITS) return null;
  return minor;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Whether a JSON number holds this many minor units exactly. */
export function fitsWireInteger(minor: bigint): boolean {
  return minor <= MAX_SAFE && minor >= -MAX_SAFE;
}

/**
 * Minor units as a JSON integer (SLE cents on the wire: 1250n -> 1250). Throws beyond
 * Number.MAX_SAFE_INTEGER, where a number can no longer hold every integer.
 */
export function minorToWireInteger(minor: bigint): number {
  if (!fitsWireInteger(minor)) {
    throw new RangeError(`${minor.toString()} minor units do not fit a JSON number exactly`);
  }
  return Number(minor);
}

/**
 * Minor units to a JSON number in major units (1250n -> 12.5). Exact, because the integer is
 * exact and a division by 100 of an exact integer gives the closest double to the decimal; throws
 * beyond Number.MAX_SAFE_INTEGER minor units instead of rounding.
 */
export function minorToMajorNumber(minor: bigint): number {
  return minorToWireInteger(minor) / 100;
}

/** A decimal string of minor units from a JSON payload ("1250") as a JSON integer, checked. */
export function minorTextToWireInteger(text: string): number {
  if (!/^-?\d+$/.test(text)) throw new RangeError(`${text} is not an integer count of minor units`);
  return minorToWireInteger(BigInt(text));
}

/** Minor units to a decimal string with 2 decimals (1250n -> "12.50", -5n -> "-0.05"). */
export function minorToDecimalString(minor: bigint): string {
  const negative = minor < 0n;
  const abs = negative ? -minor : minor;
  const whole = abs / 100n;
  const fraction = (abs % 100n).toString().padStart(2, '0');
  return `${negative ? '-' : ''}${whole.toString()}.${fraction}`;
}

/** Integer division rounding half to even (banker's rounding); denominator must be positive. */
export function divideRoundHalfEven(numerator: bigint, denominator: bigint): bigint {
  if (denominator <= 0n) throw new RangeError('denominator must be positive');
  const negative = numerator < 0n;
  const n = negative ? -numerator : numerator;
  let quotient = n / denominator;
  const twiceRemainder = (n % denominator) * 2n;
  if (twiceRemainder > denominator || (twiceRemainder === denominator && quotient % 2n === 1n)) {
    quotient += 1n;
  }
  return negative ? -quotient : quotient;
}

/** Basis points of an amount, rounded half to even: bps(10_000n, 150) = 150n. */
export function basisPoints(amount: bigint, bps: number): bigint {
  return divideRoundHalfEven(amount * BigInt(bps), 10_000n);
}
