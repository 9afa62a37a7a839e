import {
  basisPoints,
  divideRoundHalfEven,
  majorNumberToMinor,
  minorToDecimalString,
  minorTextToWireInteger,
  minorToMajorNumber,
  minorToWireInteger,
  parseMajorDecimal,
} from '../../src/domain/money';

describe('majorNumberToMinor reads wire amounts exactly', () => {
  it.each([
    [0, 0n],
    [0.01, 1n],
    [0.1, 10n],
    [1, 100n],
    [12.5, 1250n],
    [19.99, 1999n],
    [1234567.89, 123456789n],
    [100000000000, 10n ** 13n],
  ])('%p -> %p minor units', (value, minor) => {
    expect(majorNumberToMinor(value)).toBe(minor);
  });

  it.each([
    ['more than 2 decimals', 1.001],
    ['a float artefact', 0.1 + 0.2],
    ['negative', -1],
    ['NaN', Number.NaN],
    ['infinity', Number.POSITIVE_INFINITY],
    ['exponent notation', 1e-7],
    ['above the maximum', 100000000000.01],
  ])('refuses %s', (_name, value) => {
    expect(majorNumberToMinor(value)).toBeNull();
  });
});

describe('parseMajorDecimal', () => {
  it.each([
    ['0.50', 50n],
    ['3', 300n],
    ['3.5', 350n],
    ['007.05', 705n],
  ])('%p -> %p', (text, minor) => expect(parseMajorDecimal(text)).toBe(minor));

  it.each(['', '-1', '1.234', '1,5', '.5', '1e3', ' 1'])('refuses %p', (text) => {
    expect(parseMajorDecimal(text)).toBeNull();
  });
});

describe('minor units on the way out', () => {
  it.each([
    [0n, 0, '0.00'],
    [1n, 0.01, '0.01'],
    [1250n, 12.5, '12.50'],
    [123456789n, 1234567.89, '1234567.89'],
    [-5n, -0.05, '-0.05'],
  ])('%p -> %p and %p', (minor, number, text) => {
    expect(minorToMajorNumber(minor)).toBe(number);
    expect(minorToDecimalString(minor)).toBe(text);
  });

  it('round-trips every cent amount of a range through the wire number', () => {
    for (let minor = 0n; minor < 20_000n; minor += 1n) {
      expect(majorNumberToMinor(minorToMajorNumber(minor))).toBe(minor);
    }
  });
});

describe('divideRoundHalfEven (banker’s rounding)', () => {
  it.each([
    [5n, 2n, 2n], // 2.5 -> 2
    [7n, 2n, 4n], // 3.5 -> 4
    [9n, 4n, 2n], // 2.25 -> 2
    [11n, 4n, 3n], // 2.75 -> 3
    [0n, 7n, 0n],
    [-5n, 2n, -2n],
    [-7n, 2n, -4n],
    [10n ** 20n + 1n, 2n, 5n * 10n ** 19n], // large, halves to even
  ])('%p / %p = %p', (n, d, q) => expect(divideRoundHalfEven(n, d)).toBe(q));

  it('refuses a zero or negative denominator', () => {
    expect(() => divideRoundHalfEven(1n, 0n)).toThrow(RangeError);
    expect(() => divideRoundHalfEven(1n, -1n)).toThrow(RangeError);
  });
});

describe('basisPoints', () => {
  it.each([
    [10_000n, 150, 150n],
    [1n, 150, 0n], // 0.015 -> 0
    [50n, 100, 0n], // 0.5 -> 0 (even)
    [150n, 100, 2n], // 1.5 -> 2 (even)
    [333n, 10_000, 333n],
    [0n, 250, 0n],
  ])('%p at %p bps = %p', (amount, bps, fee) => expect(basisPoints(amount, bps)).toBe(fee));
});

describe('checked conversions to JSON numbers', () => {
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  it.each([
    [0n, 0, 0],
    [1250n, 1250, 12.5],
    [-5n, -5, -0.05],
    [max, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER / 100],
  ])('%p minor units -> integer %p, major %p', (minor, integer, major) => {
    expect(minorToWireInteger(minor)).toBe(integer);
    expect(minorToMajorNumber(minor)).toBe(major);
  });

  it.each([[max + 1n], [-max - 1n], [10n ** 20n]])('refuses %p instead of rounding', (minor) => {
    expect(() => minorToWireInteger(minor)).toThrow(RangeError);
    expect(() => minorToMajorNumber(minor)).toThrow(RangeError);
  });

  it.each([
    ['0', 0],
    ['10100', 10100],
    ['-3', -3],
  ])('reads the minor-unit text %p as %p', (text, integer) => {
    expect(minorTextToWireInteger(text)).toBe(integer);
  });

  it.each([['1.5'], [''], ['1e3'], ['9007199254740993']])('refuses the text %p', (text) => {
    expect(() => minorTextToWireInteger(text)).toThrow(RangeError);
  });
});
