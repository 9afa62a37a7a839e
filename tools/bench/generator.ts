/**
 * The load generator's child process (load-process.ts, jobs over IPC), so that the engine's
 * process runs the API and the worker alone and the load's CPU is counted apart (cpu.ts).
 */
import { fork } from 'node:child_process';
import { countAsLoad } from './cpu';
import type { LoadResult } from './load';
import type { SenderSpec } from './senders';

export type LoadShape =
  | { kind: 'closed'; concurrency: number; durationS: number; warmupS: number }
  | { kind: 'open'; rate: number; durationS: number };

export type LoadJob = { sender: SenderSpec; shape: LoadShape };

export type ToLoadProcess = { run: number; job: LoadJob } | { stop: number };
export type FromLoadProcess =
  { ready: true } | { id: number; result: LoadResult } | { id: number; error: string };

export type LoadProcess = {
  pid: number;
  /** Runs `job` in the child; `signal` stops the sending (what was sent is still awaited). */
  run: (job: LoadJob, signal?: AbortSignal) => Promise<LoadResult>;
  /** Ends the child (it exits when the IPC channel closes; killed if it lingers). */
  close: () => Promise<void>;
};

export async function forkLoadProcess(): Promise<LoadProcess> {
  // Advanced serialization: a LoadResult's NaN (no successful request) survives the trip.
  const child = fork(require.resolve('./load-process'), [], {
    execArgv: ['--import', 'tsx'],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<
    number,
    { resolve: (r: LoadResult) => void; reject: (e: Error) => void }
  >();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A message that cannot be sent any more (the child gone) is an 'error' event: not a crash.
  child.on('error', () => undefined);
  const killAtExit = () => child.kill('SIGKILL');
  process.once('exit', killAtExit);
  void exited.then(() => {
    process.off('exit', killAtExit);
    for (const { reject } of pending.values()) reject(new Error('the load process exited'));
    pending.clear();
  });
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    void exited.then(() => reject(new Error('the load process exited during start-up')));
    child.on('message', (message: FromLoadProcess) => {
      if ('ready' in message) resolve();
      else {
        const waiting = pending.get(message.id);
        pending.delete(message.id);
        if ('result' in message) waiting?.resolve(message.result);
        else waiting?.reject(new Error(`load process: ${message.error}`));
      }
    });
  });
  countAsLoad(child.pid!);
  let next = 0;
  const close = async () => {
    if (child.connected) child.disconnect();
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(timer);
  };
  return {
    pid: child.pid!,
    run: (job, signal) => {
      const id = (next += 1);
      const send = (message: ToLoadProcess) => child.connected && child.send(message);
      return new Promise<LoadResult>((resolve, reject) => {
        const stop = () => send({ stop: id });
        signal?.addEventListener('abort', stop, { once: true });
        pending.set(id, {
          resolve: (r) => {
            signal?.removeEventListener('abort', stop);
            resolve(r);
          },
          reject: (e) => {
            signal?.removeEventListener('abort', stop);
            reject(e);
          },
        });
        send({ run: id, job });
        if (signal?.aborted) stop();
      });
    },
    close,
  };
}
