/**
 * The engine's workflows in the worker's main thread (worker/inline-workflows.ts): calls into
 * the sandbox run without Node's vm timeout, so a workflow stuck in a loop is caught by the
 * watch's own thread instead, which kills the process; the SDK's promise hook (the "Stack
 * Trace" query) is there only when configured, in the SDK's own workflow threads; and an
 * activation's sink calls reach the sinks once each, in order.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Worker as NodeWorker } from 'node:worker_threads';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflows } from '../../worker/bundle';
import { createEngineWorker } from '../../worker/engine-worker';
import { createTimeSkippingEnv, testDataConverter } from '../support/time-skipping';
import type { InjectedSinks } from '@temporalio/worker';
import {
  go,
  leavesAGlobal,
  saysThrice,
  spinForever,
  waitForever,
  type SaidSinks,
} from './inline-workflows.workflow';

let env: TestWorkflowEnvironment;
let code: string;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  code = await bundleWorkflows(require.resolve('./inline-workflows.workflow'));
});

afterAll(async () => {
  await env?.teardown();
});

const worker = (taskQueue: string, stackTraces: boolean) =>
  createEngineWorker(
    {
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { code },
      dataConverter: testDataConverter(),
    },
    { stackTraces, stuckAfterMs: 1_000 },
  );

test('a workflow stuck in a loop: the watch logs it, naming the workflow, and kills the process', async () => {
  const taskQueue = `inline-${randomUUID()}`;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', require.resolve('./stuck-worker.ts'), env.address, taskQueue],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  try {
    for (let waited = 0; !stdout.includes('polling'); waited += 100) {
      if (waited > 30_000 || child.exitCode !== null) throw new Error(`no worker: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const workflowId = randomUUID();
    const began = Date.now();
    await env.client.workflow.start(spinForever, { taskQueue, workflowId });
    const [code, signal] = await exited;
    // The limit (1 s here, the SDK's deadlock limit of 5 s by default), not a hang.
    expect(Date.now() - began).toBeLessThan(8_000);
    expect({ code, signal }).toEqual({ code: null, signal: 'SIGKILL' });
    const line = stderr.split('\n').find((l) => l.includes('stuck in a loop'));
    expect(JSON.parse(line ?? '{}')).toMatchObject({
      level: 'ERROR',
      workflowType: 'spinForever',
      workflowId,
      runId: expect.any(String),
    });
  } finally {
    child.kill('SIGKILL');
  }
});

test('workflows run in the main thread: no workflow thread is started', async () => {
  const started: string[] = [];
  const original = NodeWorker.prototype.postMessage;
  NodeWorker.prototype.postMessage = function (this: NodeWorker, message: unknown, transfer) {
    started.push((message as { input?: { type?: string } } | null)?.input?.type ?? 'other');
    return original.call(this, message, transfer);
  };
  try {
    const taskQueue = `inline-${randomUUID()}`;
    const sinks: InjectedSinks<SaidSinks> = { said: { it: { fn: () => undefined } } };
    const w = await createEngineWorker(
      {
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: { code },
        dataConverter: testDataConverter(),
        sinks,
      },
      { stackTraces: false },
    );
    await w.runUntil(async () => {
      const handle = await env.client.workflow.start(saysThrice, {
        taskQueue,
        workflowId: randomUUID(),
      });
      await handle.signal(go);
      await handle.result();
    });
    expect(started).toEqual([]);
  } finally {
    NodeWorker.prototype.postMessage = original;
  }
});

/** The "Stack Trace" query's answer (or its refusal) for a workflow parked in `condition`. */
async function stackTraceOf(stackTraces: boolean): Promise<string> {
  const taskQueue = `inline-${randomUUID()}`;
  const w = await worker(taskQueue, stackTraces);
  return w.runUntil(async () => {
    const handle = await env.client.workflow.start(waitForever, {
      taskQueue,
      workflowId: randomUUID(),
    });
    const queried = await handle
      .query<string>('__stack_trace')
      .catch((e: Error) => `${e.message}: ${(e.cause as Error | undefined)?.message}`);
    await handle.terminate();
    return queried;
  });
}

test('stack traces off (the default): workflows run, and the query says they are not enabled', async () => {
  // A query is an activation of its own: answered, the workflow runs (and is unwatched) after it.
  expect(await stackTraceOf(false)).toMatch(/stack traces are not enabled on this worker/i);
});

test('with stack traces on, the "Stack Trace" query shows where the workflow waits', async () => {
  expect(await stackTraceOf(true)).toMatch(
    /^\s+at waitForever \(.*inline-workflows\.workflow\.ts:\d+:\d+\)/,
  );
});

test('sink calls reach the sinks once each, in order, with the workflow info and its clock', async () => {
  const taskQueue = `inline-${randomUUID()}`;
  const heard: { n: number; workflowId: string; now: unknown }[] = [];
  const sinks: InjectedSinks<SaidSinks> = {
    said: {
      it: {
        fn: (info, n) => {
          heard.push({ n, workflowId: info.workflowId, now: typeof info.unsafe.now });
        },
      },
    },
  };
  const w = await createEngineWorker(
    {
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { code },
      dataConverter: testDataConverter(),
      sinks,
    },
    { stackTraces: false },
  );
  const workflowId = randomUUID();
  await w.runUntil(async () => {
    const handle = await env.client.workflow.start(saysThrice, { taskQueue, workflowId });
    await handle.signal(go);
    await handle.result();
  });
  expect(heard).toEqual([1, 2, 3].map((n) => ({ n, workflowId, now: 'function' })));
});

/** Waits for `done`, checking every 20 ms, for at most 20 s. */
async function until(done: () => boolean): Promise<void> {
  for (const began = Date.now(); !done();) {
    if (Date.now() - began > 20_000) throw new Error('not done within 20 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('workflows that take turns in the shared sandbox each see their own state (info, sinks, conditions)', async () => {
  const taskQueue = `inline-${randomUUID()}`;
  const heard: { n: number; workflowId: string }[] = [];
  const sinks: InjectedSinks<SaidSinks> = {
    said: {
      it: {
        fn: (info, n) => {
          heard.push({ n, workflowId: info.workflowId });
        },
      },
    },
  };
  const w = await createEngineWorker(
    {
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { code },
      dataConverter: testDataConverter(),
      sinks,
    },
    { stackTraces: false, checkGlobals: true },
  );
  const ids = Array.from({ length: 6 }, () => randomUUID());
  await w.runUntil(async () => {
    const handles = await Promise.all(
      ids.map((workflowId) => env.client.workflow.start(saysThrice, { taskQueue, workflowId })),
    );
    // Every one has said 1 and waits for its signal; the others wake in the reverse order.
    await until(() => heard.length === ids.length);
    for (const handle of [...handles].reverse()) await handle.signal(go);
    // Waiting on the results would let the time-skipping server skip ahead while a signal's
    // task is still on its way (it once timed a workflow out): the sinks say when all are done.
    await until(() => heard.length === 3 * ids.length);
  });
  for (const workflowId of ids) {
    expect(heard.filter((h) => h.workflowId === workflowId).map((h) => h.n)).toEqual([1, 2, 3]);
  }
  expect(heard).toHaveLength(3 * ids.length);
});

test('checkGlobals: a workflow that leaves a global in the shared sandbox fails its task, naming it', async () => {
  const taskQueue = `inline-${randomUUID()}`;
  const w = await createEngineWorker(
    {
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { code },
      dataConverter: testDataConverter(),
    },
    { stackTraces: false, checkGlobals: true },
  );
  const failure = await w.runUntil(async () => {
    const handle = await env.client.workflow.start(leavesAGlobal, {
      taskQueue,
      workflowId: randomUUID(),
    });
    for (;;) {
      const { events } = await handle.fetchHistory();
      const failed = events?.find((e) => e.workflowTaskFailedEventAttributes);
      if (failed) {
        await handle.terminate();
        return failed.workflowTaskFailedEventAttributes?.failure?.message;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
  expect(failure).toMatch(/left globals of its own in the shared sandbox: leftBehind/);
});
