import { Worker } from 'node:worker_threads';
import { threadMsPer, threadSnapshot } from '../../bench/cpu';

/** Keeps the calling thread busy until it has used `ms` of CPU (however busy the machine is). */
const spin = (ms: number): void => {
  const start = process.threadCpuUsage();
  const used = () => {
    const now = process.threadCpuUsage(start);
    return (now.user + now.system) / 1000;
  };
  while (used() < ms) Math.sqrt(Math.random());
};

describe("the benchmark's CPU split by thread (bench/cpu.ts)", () => {
  it('charges the main thread for work done in it, per operation', () => {
    const before = threadSnapshot();
    spin(300);
    const split = threadMsPer(before, threadSnapshot(), 3);
    const main = split.find((t) => t.kind === 'main');
    // 300 ms of CPU over 3 operations: about 100 ms each (the kernel counts in 10 ms ticks).
    expect(main?.ms).toBeGreaterThanOrEqual(90);
    expect(main?.ms).toBeLessThanOrEqual(120);
    expect(split[0]?.kind).toBe('main');
  });

  it("counts a thread that ended between the snapshots as `exited`, not as the main thread's", async () => {
    const before = threadSnapshot();
    const worker = new Worker(
      `const start = process.threadCpuUsage();
       const used = () => { const u = process.threadCpuUsage(start); return (u.user + u.system) / 1000; };
       while (used() < 300) Math.sqrt(Math.random());`,
      { eval: true },
    );
    await new Promise((resolve) => worker.once('exit', resolve));
    const split = new Map(threadMsPer(before, threadSnapshot(), 1).map((t) => [t.kind, t.ms]));
    expect(split.get('exited')).toBeGreaterThanOrEqual(280);
    expect(split.get('main') ?? 0).toBeLessThan(200);
  });
});
