import { Worker } from 'node:worker_threads';
import { processCpuMs, threadMsPer, threadSnapshot } from '../../tools/bench/cpu';

/** Keeps the calling thread busy until it has used `ms` of CPU (however busy the machine is). */
const spin = (ms: number): void => {
  const start = process.threadCpuUsage();
  const used = () => {
    const now = process.threadCpuUsage(start);
    return (now.user + now.system) / 1000;
  };
  while (used() < ms) Math.sqrt(Math.random());
};

describe("the benchmark's CPU split by thread (tools/bench/cpu.ts)", () => {
  it('charges the main thread for work done in it, per operation', () => {
    const own = process.threadCpuUsage();
    const before = threadSnapshot();
    spin(300);
    const after = threadSnapshot();
    const usage = process.threadCpuUsage(own);
    // What the kernel says this thread used over the same window: the spin, and whatever the
    // thread did besides (on a loaded machine, V8 may run garbage collection in it).
    const used = (usage.user + usage.system) / 1000;
    const split = threadMsPer(before, after, 3);
    const main = split.find((t) => t.kind === 'main');
    // Per operation, at least a third of it, less the kernel's 10 ms ticks and a tenth. The upper
    // bound is loose on purpose (a loaded machine's /proc can overcharge the main thread): it only
    // rules out the split charging the main thread with other threads' time wholesale.
    expect(used).toBeGreaterThanOrEqual(300);
    expect(main?.ms).toBeGreaterThanOrEqual((used * 0.9 - 30) / 3);
    expect(main?.ms).toBeLessThanOrEqual((used * 2 + 30) / 3);
    // Not compared with the other threads: a jest worker that ran engine tests before may
    // collect their garbage on V8's helper threads meanwhile (once, in a full `npm test`, more
    // than the spin).
  });

  it("counts a thread that ended between the snapshots as `exited`, not as the main thread's", async () => {
    const own = process.threadCpuUsage();
    const before = threadSnapshot();
    const worker = new Worker(
      `const start = process.threadCpuUsage();
       const used = () => { const u = process.threadCpuUsage(start); return (u.user + u.system) / 1000; };
       while (used() < 300) Math.sqrt(Math.random());`,
      { eval: true },
    );
    await new Promise((resolve) => worker.once('exit', resolve));
    const split = new Map(threadMsPer(before, threadSnapshot(), 1).map((t) => [t.kind, t.ms]));
    const usage = process.threadCpuUsage(own);
    // What this thread did meanwhile (in a jest worker that ran engine tests before, perhaps
    // their leftovers, once 530 ms), as the kernel counts it: the split charges the main thread
    // that and no more, not the 300 ms of the thread that ended.
    const mainUsed = (usage.user + usage.system) / 1000;
    expect(split.get('exited')).toBeGreaterThanOrEqual(280);
    expect(split.get('main') ?? 0).toBeLessThan(mainUsed + 150);
  });

  it("reads a process's own CPU time (a dev server's, in the visibility comparison)", () => {
    const before = processCpuMs(process.pid);
    const own = process.cpuUsage();
    spin(200);
    const usage = process.cpuUsage(own);
    const after = processCpuMs(process.pid);
    // The kernel's 10 ms ticks, and whatever else the process's threads did in the window.
    expect(after - before).toBeGreaterThanOrEqual(200 - 20);
    expect(after - before).toBeLessThanOrEqual((usage.user + usage.system) / 1000 + 20);
    expect(() => processCpuMs(2 ** 22 + 1)).toThrow();
  });
});
