import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { envSchema } from '../../src/config';
import { waitFor } from './processes';

/**
 * The split shape, as production runs the engine: `npm run api` and `npm run worker` on the same
 * servers, each started by its npm script's command without npm around it (so that its pid is
 * the engine's), configured by the environment.
 */
export type Role = 'api' | 'worker';

const rootDir = path.resolve(__dirname, '..', '..');

/** The command of `npm run <role>` (`node --import tsx src/api/main.ts`), Node being this one. */
export function entryCommand(role: Role): { file: string; args: string[] } {
  const manifest = JSON.parse(readFileSync(path.join(rootDir, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const [program, ...args] = (manifest.scripts[role] ?? '').split(/\s+/);
  if (program !== 'node' || !args.length) {
    throw new Error(`package.json's "${role}" script is not a plain node command`);
  }
  return { file: process.execPath, args };
}

/**
 * This process's environment without any of the engine's variables, plus `env`: a process of
 * the split shape is configured exactly as the in-process engine is, by `env` alone.
 */
export function engineEnvironment(env: Record<string, string>): NodeJS.ProcessEnv {
  const engine = new Set(Object.keys(envSchema.shape));
  const inherited = Object.entries(process.env).filter(([name]) => !engine.has(name));
  return { ...Object.fromEntries(inherited), ...env };
}

export type EngineProcess = {
  role: Role;
  pid: number;
  running: () => boolean;
  /** Settles with its exit code once it has exited (null when a signal ended it). */
  exited: Promise<number | null>;
  /** The last lines it wrote to stderr (and to stdout when kept), for a failure message. */
  output: () => string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop: (graceMs?: number) => Promise<void>;
  /** SIGKILL; resolves once it has exited. */
  kill: () => Promise<void>;
};

/** What is kept of a process's output. */
const OUTPUT_CHARS = 8_000;

/**
 * Starts `npm run <role>`'s entry point with `env` (see `engineEnvironment`) and `args` after
 * it. Its stdout is thrown away unless `keepStdout` (a loaded API's access log would cost the
 * reader).
 */
export function startEngineProcess(
  role: Role,
  env: NodeJS.ProcessEnv,
  options: { keepStdout?: boolean; args?: readonly string[] } = {},
): EngineProcess {
  const { file, args } = entryCommand(role);
  const child = spawn(file, [...args, ...(options.args ?? [])], {
    cwd: rootDir,
    env,
    stdio: ['ignore', options.keepStdout ? 'pipe' : 'ignore', 'pipe'],
  });
  let output = '';
  const hear = (chunk: string) => {
    output = (output + chunk).slice(-OUTPUT_CHARS);
  };
  child.stdout?.setEncoding('utf8').on('data', hear);
  child.stderr?.setEncoding('utf8').on('data', hear);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', (error) => {
      hear(`${error.message}\n`);
      resolve(null);
    });
  });
  const running = () => child.exitCode === null && child.signalCode === null;
  // A run that ends without stopping it (an uncaught error) takes it along.
  const killAtExit = () => child.kill('SIGKILL');
  process.once('exit', killAtExit);
  void exited.then(() => process.off('exit', killAtExit));
  const stop = async (graceMs = 5_000) => {
    if (running()) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    }
  };
  return {
    role,
    pid: child.pid ?? 0,
    running,
    exited,
    output: () => output,
    stop,
    kill: async () => {
      if (running()) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Whether the API at `url` answers `/readyz` 200 (its database and Temporal answer). */
export async function apiReady(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(3_000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/**
 * Whether the worker process `pid` polls `taskQueue` for workflow tasks (the server lists its
 * pollers; a worker's default identity starts with its pid).
 */
export async function workerPolling(
  connection: Connection,
  namespace: string,
  taskQueue: string,
  pid: number,
): Promise<boolean> {
  try {
    const { pollers } = await connection.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    return (pollers ?? []).some((poller) => poller.identity?.startsWith(`${pid}@`));
  } catch {
    return false;
  }
}

/**
 * Waits until `ready` answers true while `process` runs, polling; throws with its output when
 * it exits or `timeoutMs` passes.
 */
export async function waitUntilReady(
  child: EngineProcess,
  ready: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && child.running()) {
    if (await ready()) return;
    await waitFor(() => !child.running(), 200);
  }
  const why = child.running() ? `not ready after ${timeoutMs} ms` : 'exited';
  throw new Error(`npm run ${child.role} (pid ${child.pid}) ${why}:\n${child.output()}`);
}
