import { readFileSync } from 'node:fs';

/** A process's resident memory in bytes, read from /proc (Linux). */
export function residentBytes(pid: number | string): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (!kb) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kb) * 1024;
}

/** Samples `pid`'s resident memory every `everyMs` until stopped; answers the highest seen. */
export function sampleResident(pid: number, everyMs = 100): { stop: () => number; start: number } {
  const start = residentBytes(pid);
  let highest = start;
  const timer = setInterval(() => {
    highest = Math.max(highest, residentBytes(pid));
  }, everyMs);
  return {
    start,
    stop: () => {
      clearInterval(timer);
      return Math.max(highest, residentBytes(pid));
    },
  };
}

/** Samples this process's used V8 heap (main thread) every `everyMs`; answers the highest seen. */
export function sampleHeap(everyMs = 100): { stop: () => number; start: number } {
  const used = () => process.memoryUsage().heapUsed;
  const start = used();
  let highest = start;
  const timer = setInterval(() => {
    highest = Math.max(highest, used());
  }, everyMs);
  return {
    start,
    stop: () => {
      clearInterval(timer);
      return Math.max(highest, used());
    },
  };
}
