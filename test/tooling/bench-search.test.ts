import { searchPayments, SEARCH_PAYMENTS } from '../../tools/bench/search';
import { busyWallets, chunks, md5Uuid } from '../../tools/bench/search-seed';

describe("row 8's seed (tools/bench/search-seed.ts, tools/bench/search.ts)", () => {
  it('cuts the payments into chunks that cover each one once', () => {
    expect(chunks(10, 4)).toEqual([
      [0, 4],
      [4, 8],
      [8, 10],
    ]);
    expect(chunks(8, 4)).toEqual([
      [0, 4],
      [4, 8],
    ]);
    expect(chunks(0, 4)).toEqual([]);
  });

  it("makes a wallet's id as Postgres's md5(text)::uuid does", () => {
    // SELECT md5('abc')::uuid
    expect(md5Uuid('abc')).toBe('90015098-3cd2-4fb0-d696-3f7d28e17f72');
  });

  it('has a tenth of a percent of the wallets busy, at least one', () => {
    expect(busyWallets(100_000)).toBe(100);
    expect(busyWallets(500)).toBe(1);
  });

  it('takes its size from the flag, else the environment, else ten million', () => {
    expect(searchPayments(undefined, {})).toBe(SEARCH_PAYMENTS);
    expect(searchPayments(undefined, { BENCH_SEARCH_PAYMENTS: '1_000_000' })).toBe(1_000_000);
    expect(searchPayments('200000', { BENCH_SEARCH_PAYMENTS: '1000000' })).toBe(200_000);
    for (const bad of ['abc', '1050', '100', '-10000']) {
      expect(() => searchPayments(bad, {})).toThrow(/whole number of hundreds/);
    }
  });
});
