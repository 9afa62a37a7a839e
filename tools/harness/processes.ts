import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import net from 'node:net';

/** Whether process `pid` exists (a signal 0 reaches it; EPERM: it exists, owned by another). */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The command line of process `pid` (Linux /proc), or '' where it cannot be read. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}

/** Waits until `check` holds, polling every 50 ms; false if it still does not at `timeoutMs`. */
export async function waitFor(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

/**
 * Stops process `pid`: `signal` first, then SIGKILL after `graceMs`. Resolves once it is gone
 * (or at once when it was not running).
 */
export async function stopProcess(
  pid: number,
  signal: NodeJS.Signals,
  graceMs: number,
): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, signal);
  } catch {
    return;
  }
  if (await waitFor(() => !isAlive(pid), graceMs)) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return;
  }
  await waitFor(() => !isAlive(pid), 5_000);
}

/** A pattern matching `text` literally (a path inside a command line). */
export const literally = (text: string): RegExp =>
  new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.setTimeout(1_000);
    const done = (used: boolean) => {
      socket.destroy();
      resolve(used);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

/** The pid a pid file names (its first line), or null when there is no readable one. */
export function readPidFile(file: string): number | null {
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]?.trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

export const writePidFile = (file: string, pid: number): Promise<void> =>
  writeFile(file, `${pid}\n`);

export const removePidFile = (file: string): Promise<void> => rm(file, { force: true });

/**
 * A server left running by an earlier start that was killed (its pid file names a live
 * process whose command line matches `looksLike`): stopped, never shared. Then its port must
 * be free: a process there that this data folder did not start is refused with `portHint`.
 */
export async function stopLeftover(options: {
  name: string;
  pidFile: string;
  looksLike: RegExp;
  signal: NodeJS.Signals;
  port: number;
  portHint: string;
  log: (message: string) => void;
}): Promise<void> {
  const pid = readPidFile(options.pidFile);
  if (pid !== null && isAlive(pid) && options.looksLike.test(commandLine(pid))) {
    options.log(`stopping the ${options.name} left running by an earlier start (pid ${pid})`);
    await stopProcess(pid, options.signal, 5_000);
  }
  // A killed server's port may take a moment to be released by its last children.
  let free = false;
  for (let i = 0; i < 20 && !free; i++) {
    free = !(await portInUse(options.port));
    if (!free) await new Promise((resolve) => setTimeout(resolve, 250));
  }
  if (!free) {
    throw new Error(
      `port ${options.port} is taken by a process this data folder did not start ` +
        `(not the ${options.name} of an earlier start): stop it, or set ${options.portHint}`,
    );
  }
}

/**
 * The last `count` lines a child process printed, for the error that says why it did not start
 * (embedded Postgres, the Temporal dev server).
 */
export function lastLines(count = 5): { hear: (text: string) => void; said: () => string[] } {
  const lines: string[] = [];
  return {
    hear: (text) => {
      lines.push(...text.trimEnd().split('\n'));
      lines.splice(0, Math.max(0, lines.length - count));
    },
    said: () => [...lines],
  };
}
