/**
 * Names the samples of a `perf record -g` of a stripped Go binary (the Temporal CLI) from the Go
 * runtime's function table (`.gopclntab`, Go 1.20+ layout), which stripping keeps; usage in
 * docs/benchmarks.md "Profiling the dev server".
 */
import { readFileSync } from 'node:fs';

const PCLNTAB_MAGIC_GO120 = 0xfffffff1;
const PT_LOAD = 1;

export type GoSymbols = {
  /** The function whose code holds `address` (a virtual address), or null before the first. */
  lookup: (address: bigint) => string | null;
  /** Where the binary's first loaded segment sits: perf prints user addresses from it. */
  base: bigint;
  entries: readonly bigint[];
  names: readonly string[];
};

function section(elf: Buffer, wanted: string): { addr: bigint; offset: number; size: number } {
  const shoff = Number(elf.readBigUInt64LE(0x28));
  const shentsize = elf.readUInt16LE(0x3a);
  const shnum = elf.readUInt16LE(0x3c);
  const shstrndx = elf.readUInt16LE(0x3e);
  const header = (i: number) => shoff + i * shentsize;
  const strtab = Number(elf.readBigUInt64LE(header(shstrndx) + 0x18));
  for (let i = 0; i < shnum; i += 1) {
    const h = header(i);
    const nameAt = strtab + elf.readUInt32LE(h);
    const name = elf.toString('latin1', nameAt, elf.indexOf(0, nameAt));
    if (name === wanted) {
      return {
        addr: elf.readBigUInt64LE(h + 0x10),
        offset: Number(elf.readBigUInt64LE(h + 0x18)),
        size: Number(elf.readBigUInt64LE(h + 0x20)),
      };
    }
  }
  throw new Error(`no ${wanted} section: not a Go binary`);
}

function loadBase(elf: Buffer): bigint {
  const phoff = Number(elf.readBigUInt64LE(0x20));
  const phentsize = elf.readUInt16LE(0x36);
  const phnum = elf.readUInt16LE(0x38);
  for (let i = 0; i < phnum; i += 1) {
    const h = phoff + i * phentsize;
    if (elf.readUInt32LE(h) === PT_LOAD) {
      return elf.readBigUInt64LE(h + 0x10) - elf.readBigUInt64LE(h + 0x08);
    }
  }
  throw new Error('no loadable segment');
}

/** Reads the function table of a Go 1.20+ ELF binary (amd64 or arm64, 64-bit). */
export function readGoSymbols(binary: string): GoSymbols {
  const elf = readFileSync(binary);
  if (elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 2) throw new Error('not a 64-bit ELF file');
  const text = section(elf, '.text');
  const pcln = section(elf, '.gopclntab');
  const tab = elf.subarray(pcln.offset, pcln.offset + pcln.size);
  if (tab.readUInt32LE(0) !== PCLNTAB_MAGIC_GO120) throw new Error('not a Go 1.20+ function table');
  const nfunc = Number(tab.readBigUInt64LE(8));
  const funcnameOffset = Number(tab.readBigUInt64LE(32));
  const pclnOffset = Number(tab.readBigUInt64LE(64));
  const entries: bigint[] = [];
  const names: string[] = [];
  for (let i = 0; i < nfunc; i += 1) {
    const entryOff = tab.readUInt32LE(pclnOffset + 8 * i);
    const funcOff = tab.readUInt32LE(pclnOffset + 8 * i + 4);
    const nameAt = funcnameOffset + tab.readInt32LE(pclnOffset + funcOff + 4);
    entries.push(text.addr + BigInt(entryOff));
    names.push(tab.toString('utf8', nameAt, tab.indexOf(0, nameAt)));
  }
  const lookup = (address: bigint) => {
    let lo = 0;
    let hi = entries.length - 1;
    if (hi < 0 || address < entries[0]!) return null;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (entries[mid]! <= address) lo = mid;
      else hi = mid - 1;
    }
    return names[lo]!;
  };
  return { lookup, base: loadBase(elf), entries, names };
}

export type SampleShares = {
  samples: number;
  self: Map<string, number>;
  inclusive: Map<string, number>;
};

const KERNEL = 0xffff800000000000n;

/**
 * `perf script -F ip,sym` output: one block of frames a sample, innermost first, blocks apart
 * by blank lines. User addresses are offsets from the binary's load base.
 */
export function shares(perfScript: string, symbols: GoSymbols): SampleShares {
  const result: SampleShares = { samples: 0, self: new Map(), inclusive: new Map() };
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  for (const block of perfScript.split(/\n\s*\n/)) {
    const frames = block
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .filter((parts) => /^[0-9a-f]+$/i.test(parts[0] ?? ''))
      .map(([ip, ...sym]) => {
        const address = BigInt(`0x${ip}`);
        if (address >= KERNEL) return `[kernel] ${sym.join(' ')}`;
        return symbols.lookup(address + symbols.base) ?? `0x${ip}`;
      });
    if (!frames.length) continue;
    result.samples += 1;
    add(result.self, frames[0]!.startsWith('[kernel]') ? '[kernel]' : frames[0]!);
    for (const name of new Set(frames)) add(result.inclusive, name);
  }
  return result;
}

function render(result: SampleShares, rows: number): string {
  const top = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, rows)
      .map(([name, n]) => `${((100 * n) / result.samples).toFixed(2).padStart(6)} %  ${name}`);
  return [
    `${result.samples} samples`,
    '-- self (the function a sample was in; every kernel frame as one)',
    ...top(result.self),
    '-- inclusive (a function anywhere on the sample’s stack)',
    ...top(result.inclusive),
  ].join('\n');
}

if (require.main === module) {
  const [binary, rows] = process.argv.slice(2);
  if (!binary) {
    process.stderr.write('usage: perf script -F ip,sym | go-perf.ts <go binary> [rows]\n');
    process.exit(2);
  }
  const symbols = readGoSymbols(binary);
  const input = readFileSync(0, 'utf8');
  process.stdout.write(`${render(shares(input, symbols), Number(rows ?? 40))}\n`);
}
