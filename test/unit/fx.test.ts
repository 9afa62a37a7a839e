import { sleToUsd } from '../../src/domain/fx';

describe('sleToUsd converts SLE cents to USD cents, half to even', () => {
  it.each([
    [0n, '24.00', 0n],
    [1n, '24.00', 0n],
    [2400n, '24.00', 100n],
    [1_000_000n, '24.00', 41_667n],
    [12n, '24.00', 0n], // exactly half a cent: to the even 0
    [36n, '24.00', 2n], // 1.5 cents: to the even 2
    [60n, '24.00', 2n], // 2.5 cents: to the even 2
    [84n, '24.00', 4n], // 3.5 cents: to the even 4
    [10_000n, '22.5', 444n],
    [10_000n, '1', 10_000n],
    [10n ** 13n, '24.00', 416_666_666_667n],
  ])('%p SLE cents at %s SLE per USD -> %p USD cents', (sle, rate, usd) => {
    expect(sleToUsd(sle, rate)).toBe(usd);
  });

  it.each([['0'], ['0.00'], ['-1'], ['24.001'], ['abc'], ['']])('refuses the rate %p', (rate) => {
    expect(() => sleToUsd(100n, rate)).toThrow(RangeError);
  });
});
