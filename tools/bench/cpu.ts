import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time by group, read from /proc (every figure 0 without it): `node` the engine's processes
 * (countAsEngine), `load` the load generator's (countAsLoad), `other` the rest of the machine,
 * whose work makes every other figure lower.
 */
export type CpuGroups = {
  node: number;
  load: number;
  postgres: number;
  temporal: number;
  other: number;
};

const loadPids = new Set<number>();

/** Counts process `pid` (a child of this one) in the `load` group. */
export function countAsLoad(pid: number): void {
  loadPids.add(pid);
}

const enginePids = new Set<number>();

/** Counts process `pid` (a child of this one: the split shape's API or worker) as `node`. */
export function countAsEngine(pid: number): void {
  enginePids.add(pid);
}

const TICKS_PER_SECOND = 100;

type Stat = { pid: number; ppid: number; comm: string; own: number; reaped: number };

/** One `/proc/.../stat` file (a process's or a thread's); throws when it is gone. */
function readStat(file: string, pid: number): Stat {
  const text = readFileSync(file, 'utf8');
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const fields = text.slice(close + 2).split(' ');
  // fields[0] is the state (field 3 of stat(5)); utime is field 14, so fields[11].
  return {
    pid,
    ppid: Number(fields[1]),
    comm,
    own: Number(fields[11]) + Number(fields[12]),
    reaped: Number(fields[13]) + Number(fields[14]),
  };
}

/** A process's CPU time so far, user and system, in milliseconds (its exited children apart). */
export function processCpuMs(pid: number): number {
  return (readStat(`/proc/${pid}/stat`, pid).own * 1000) / TICKS_PER_SECOND;
}

function readStats(): Stat[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
  const stats: Stat[] = [];
  for (const entry of entries) {
    try {
      stats.push(readStat(`/proc/${entry}/stat`, Number(entry)));
    } catch {
      // The process exited while we looked.
    }
  }
  return stats;
}

type Group = 'node' | 'load' | 'postgres' | 'temporal';

function groupOf(stat: Stat): Group | null {
  if (stat.pid === process.pid || enginePids.has(stat.pid)) return 'node';
  if (loadPids.has(stat.pid)) return 'load';
  if (stat.comm === 'postgres') return 'postgres';
  if (stat.comm === 'temporal') return 'temporal';
  return null;
}

/** CPU seconds the whole machine has been busy (all CPUs), from the first line of /proc/stat. */
function machineBusy(): number {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
    // cpu user nice system idle iowait irq softirq steal ...
    const [user, nice, system, , , irq, softirq, steal] = fields.slice(1, 9).map(Number);
    return (user! + nice! + system! + irq! + softirq! + steal!) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** This process and its descendants. */
function family(stats: readonly Stat[]): Set<number> {
  const mine = new Set<number>([process.pid]);
  // Parents are listed before their children only by chance: repeat until nothing is added.
  for (let grew = true; grew;) {
    grew = false;
    for (const s of stats) {
      if (!mine.has(s.pid) && mine.has(s.ppid)) {
        mine.add(s.pid);
        grew = true;
      }
    }
  }
  return mine;
}

/** CPU seconds used so far by each group. */
export function cpuSnapshot(): CpuGroups {
  const stats = readStats();
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const mine = family(stats);
  const totals: Record<Group, number> = { node: 0, load: 0, postgres: 0, temporal: 0 };
  for (const pid of mine) {
    const s = byPid.get(pid)!;
    const group = groupOf(s);
    if (!group) continue;
    totals[group] += s.own;
    // A group's root (the postmaster) has reaped its exited children (closed connections).
    const parent = byPid.get(s.ppid);
    const server = group === 'postgres' || group === 'temporal';
    if (server && (!parent || groupOf(parent) !== group)) totals[group] += s.reaped;
  }
  const [node, load, postgres, temporal] = [
    totals.node,
    totals.load,
    totals.postgres,
    totals.temporal,
  ].map((ticks) => ticks / TICKS_PER_SECOND) as [number, number, number, number];
  return {
    node,
    load,
    postgres,
    temporal,
    other: machineBusy() - node - load - postgres - temporal,
  };
}

/**
 * Cores busy on average over several windows (the interleaved rows' bursts of one kind), from
 * each window's CPU seconds by group (`coresUsed` over 1 s) and its length in seconds.
 */
export function coresOver(windows: readonly { cpu: CpuGroups; seconds: number }[]): CpuGroups {
  const seconds = windows.reduce((a, w) => a + w.seconds, 0);
  const busy = (k: keyof CpuGroups) => windows.reduce((a, w) => a + w.cpu[k], 0) / seconds;
  return {
    node: busy('node'),
    load: busy('load'),
    postgres: busy('postgres'),
    temporal: busy('temporal'),
    other: busy('other'),
  };
}

/** Cores used by each group between two snapshots `seconds` apart. */
export function coresUsed(before: CpuGroups, after: CpuGroups, seconds: number): CpuGroups {
  const f = (k: keyof CpuGroups) => (after[k] - before[k]) / seconds;
  return {
    node: f('node'),
    load: f('load'),
    postgres: f('postgres'),
    temporal: f('temporal'),
    other: Math.max(0, f('other')),
  };
}

/**
 * CPU seconds so far by kind of thread of this process (threadKind: `workflow` is where workflow
 * code runs). `exited` is the process total minus its live threads: Node's `vm` watchdog starts a
 * thread per call into the workflow sandbox.
 */
export function threadSnapshot(): Map<string, number> {
  const seconds = new Map<string, number>();
  let live = 0;
  try {
    for (const task of readdirSync(`/proc/${process.pid}/task`)) {
      try {
        const thread = readStat(`/proc/${process.pid}/task/${task}/stat`, Number(task));
        const kind = threadKind(thread.pid, thread.comm);
        seconds.set(kind, (seconds.get(kind) ?? 0) + thread.own / TICKS_PER_SECOND);
        live += thread.own / TICKS_PER_SECOND;
      } catch {
        // The thread ended while we looked: its time shows under `exited`.
      }
    }
    const own = readStat(`/proc/${process.pid}/stat`, process.pid).own;
    seconds.set('exited', own / TICKS_PER_SECOND - live);
  } catch {
    // No /proc: nothing to split.
  }
  return seconds;
}

function threadKind(tid: number, comm: string): string {
  if (tid === process.pid) return 'main';
  if (comm === 'WorkerThread') return 'workflow';
  if (comm.startsWith('tokio') || comm.startsWith('workflow-proces')) return 'temporal core';
  if (comm === 'V8Worker') return 'V8 helpers';
  return 'other';
}

/** CPU milliseconds per operation by thread kind between two `threadSnapshot`s. */
export function threadMsPer(
  before: Map<string, number>,
  after: Map<string, number>,
  operations: number,
): { kind: string; ms: number }[] {
  return [...after]
    .map(([kind, s]) => ({
      kind,
      ms: ((s - (before.get(kind) ?? 0)) * 1000) / Math.max(1, operations),
    }))
    .sort((a, b) => b.ms - a.ms);
}
