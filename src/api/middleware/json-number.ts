/**
 * A JSON number whose decimal value is not the double's shortest form (`10.10000000000000001`) or
 * that no double holds (`1e400`). Request bodies carry it instead of the number, so that money
 * schemas judge what the client wrote, not what the float rounded it to.
 */
export class InexactNumber {
  constructor(
    readonly value: number,
    readonly source: string,
  ) {}

  /** Serialized as the number it was read as, as before it was kept apart. */
  toJSON(): number {
    return this.value;
  }
}

/** A decimal as its significant digits and the power of ten of the last one: 12.50 is 125e-1. */
type Decimal = { negative: boolean; digits: string; exponent: number };

const LITERAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** The exact value of a JSON number literal (or of `String(number)`); null if it is not one. */
function decimalOf(literal: string): Decimal | null {
  const match = LITERAL.exec(literal);
  if (!match) return null;
  const fraction = match[3] ?? '';
  const all = `${match[2]}${fraction}`.replace(/^0+/, '');
  const digits = all.replace(/0+$/, '');
  if (digits === '') return { negative: false, digits: '', exponent: 0 };
  return {
    negative: match[1] === '-',
    digits,
    exponent: Number(match[4] ?? '0') - fraction.length + (all.length - digits.length),
  };
}

function sameDecimal(a: Decimal | null, b: Decimal | null): boolean {
  return (
    a !== null &&
    b !== null &&
    a.negative === b.negative &&
    a.digits === b.digits &&
    a.exponent === b.exponent
  );
}

/** Longest plain decimal worth writing out: far more than any amount or count of minor units. */
export const MAX_PLAIN_DIGITS = 40;

/**
 * The exact value in plain notation without superfluous zeros (`1.005e1` -> "10.05",
 * `12.50` -> "12.5", `1e2` -> "100"), or null when it would take more than 40 digits.
 */
export function plainDecimal(literal: string): string | null {
  const decimal = decimalOf(literal);
  if (!decimal) return null;
  const { negative, digits, exponent } = decimal;
  if (digits === '') return '0';
  const width = Math.max(digits.length + exponent, digits.length, -exponent);
  if (width > MAX_PLAIN_DIGITS) return null;
  const sign = negative ? '-' : '';
  if (exponent >= 0) return `${sign}${digits}${'0'.repeat(exponent)}`;
  const point = digits.length + exponent;
  if (point > 0) return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
  return `${sign}0.${'0'.repeat(-point)}${digits}`;
}

/**
 * `JSON.parse`, except that a number whose literal is not exactly its double arrives as an
 * `InexactNumber` (Node 24 hands a reviver the source text of each primitive).
 */
export function parseJsonKeepingLiterals(text: string): unknown {
  return JSON.parse(
    text,
    function keepLiteral(_key: string, value: unknown, context?: { source?: string }) {
      if (typeof value !== 'number' || context?.source === undefined) return value;
      const { source } = context;
      if (source === String(value)) return value;
      if (Number.isFinite(value) && sameDecimal(decimalOf(source), decimalOf(String(value)))) {
        return value;
      }
      return new InexactNumber(value, source);
    },
  );
}
