import { spawn } from 'node:child_process';
import { supervise, type Supervised } from '../../tools/harness/supervise';
import { isAlive, waitFor } from '../../tools/harness/processes';
import { createLogger } from '../../src/observability/logger';

/**
 * The restart policy of `npm start` (tools/harness/supervise.ts) on real child processes (`sleep`),
 * killed with SIGKILL: restarted while failures stay under the limit, then given up with a
 * reason; a stopped supervisor restarts nothing and leaves no child behind.
 */
const logger = createLogger('silent');
const policy = { initialBackoffMs: 20, maxBackoffMs: 80, maxFailures: 3, windowMs: 60_000 };

function sleeper(pids: number[]): () => Promise<Supervised> {
  return () => {
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    pids.push(child.pid!);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    return Promise.resolve({
      exited,
      stop: async () => {
        child.kill('SIGTERM');
        await exited;
      },
    });
  };
}

/** A supervisor of `sleep` children (their pids in `pids`) under the short test policy. */
const superviseSleepers = (pids: number[], onGiveUp: (error: Error) => void = () => undefined) =>
  supervise({ name: 'sleeper', start: sleeper(pids), logger, policy, onGiveUp });

const killLast = (pids: number[]) => process.kill(pids[pids.length - 1]!, 'SIGKILL');

describe('supervise', () => {
  it('restarts a killed child, then gives up after too many failures in the window', async () => {
    const pids: number[] = [];
    const gaveUp: Error[] = [];
    const supervisor = await superviseSleepers(pids, (error) => gaveUp.push(error));
    for (let kill = 1; kill <= policy.maxFailures; kill++) {
      killLast(pids);
      expect(await waitFor(() => pids.length === kill + 1 && isAlive(pids[kill]!), 5_000)).toBe(
        true,
      );
    }
    expect(supervisor.restarts()).toBe(policy.maxFailures);
    expect(gaveUp).toEqual([]);

    killLast(pids);
    expect(await waitFor(() => gaveUp.length === 1, 5_000)).toBe(true);
    expect(gaveUp[0]!.message).toBe('sleeper failed 4 times within 60 s: giving up');
    expect(pids).toHaveLength(policy.maxFailures + 1);
    expect(pids.filter(isAlive)).toEqual([]);
    await supervisor.stop();
  });

  it('counts a start that fails as a failure, and stops the child it has', async () => {
    const pids: number[] = [];
    const start = sleeper(pids);
    let refusals = 1;
    const supervisor = await supervise({
      name: 'flaky',
      logger,
      policy,
      onGiveUp: () => undefined,
      start: () => {
        if (pids.length === 1 && refusals-- > 0) {
          return Promise.reject(new Error('port taken'));
        }
        return start();
      },
    });
    killLast(pids);
    expect(await waitFor(() => pids.length === 2 && isAlive(pids[1]!), 5_000)).toBe(true);
    expect(supervisor.restarts()).toBe(1);
    await supervisor.stop();
    expect(pids.filter(isAlive)).toEqual([]);
  });

  it('restarts nothing once halted (a signal to the process group stops the children)', async () => {
    const pids: number[] = [];
    const supervisor = await superviseSleepers(pids);
    supervisor.halt();
    killLast(pids);
    await new Promise((resolve) => setTimeout(resolve, policy.maxBackoffMs * 3));
    expect(pids).toHaveLength(1);
    expect(supervisor.restarts()).toBe(0);
    await supervisor.stop();
  });
});
