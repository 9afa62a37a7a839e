/**
 * The engine's workflow threads (worker/engine-worker.ts): calls into the sandbox run without
 * Node's vm timeout, so a workflow stuck in a loop is caught from the main thread instead, and
 * the SDK's promise hook (the "Stack Trace" query) is there only when configured, and the sink
 * calls of an activation come back with its completion.
 */
import { randomUUID } from 'node:crypto';
import { Worker as NodeWorker } from 'node:worker_threads';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflows } from '../../worker/bundle';
import { createEngineWorker } from '../../worker/engine-worker';
import { createTimeSkippingEnv } from '../support/time-skipping';
import type { InjectedSinks } from '@temporalio/worker';
import {
  go,
  saysThrice,
  spinForever,
  waitForever,
  type SaidSinks,
} from './workflow-threads.workflow';

let env: TestWorkflowEnvironment;
let code: string;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  code = await bundleWorkflows(require.resolve('./workflow-threads.workflow'));
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
    },
    { stackTraces, stuckAfterMs: 1_000 },
  );

test('a workflow stuck in a loop gets its thread terminated: the worker fails (to be rebuilt)', async () => {
  const taskQueue = `threads-${randomUUID()}`;
  const stuck = await worker(taskQueue, false);
  const running = stuck.run();
  const began = Date.now();
  await env.client.workflow.start(spinForever, { taskQueue, workflowId: randomUUID() });
  await expect(running).rejects.toThrow(/Workflow Worker Thread exited/);
  // The limit (1 s here, the SDK's deadlock limit of 5 s by default), not a hang.
  expect(Date.now() - began).toBeLessThan(8_000);
  expect(stuck.getState()).toBe('FAILED');
});

/** The "Stack Trace" query's answer (or its refusal) for a workflow parked in `condition`. */
async function stackTraceOf(stackTraces: boolean): Promise<string> {
  const taskQueue = `threads-${randomUUID()}`;
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
  // A query is an activation of its own: answered, the thread runs (and is unwatched) after it.
  expect(await stackTraceOf(false)).toMatch(/stack traces are not enabled on this worker/i);
});

test('with stack traces on, the "Stack Trace" query shows where the workflow waits', async () => {
  expect(await stackTraceOf(true)).toMatch(
    /^\s+at waitForever \(.*workflow-threads\.workflow\.ts:\d+:\d+\)/,
  );
});

test('sink calls come back with the activation that made them: each once, in order, no request of their own', async () => {
  const taskQueue = `threads-${randomUUID()}`;
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
  const requests: string[] = [];
  // What the worker asks of its workflow thread.
  const original = NodeWorker.prototype.postMessage;
  NodeWorker.prototype.postMessage = function (this: NodeWorker, message: unknown, transfer) {
    const type = (message as { input?: { type?: string } } | null)?.input?.type;
    if (type) requests.push(type);
    return original.call(this, message, transfer);
  };
  try {
    const w = await createEngineWorker(
      { connection: env.nativeConnection, taskQueue, workflowBundle: { code }, sinks },
      { stackTraces: false },
    );
    const workflowId = randomUUID();
    await w.runUntil(async () => {
      const handle = await env.client.workflow.start(saysThrice, { taskQueue, workflowId });
      await handle.signal(go);
      await handle.result();
    });
    expect(heard).toEqual([1, 2, 3].map((n) => ({ n, workflowId, now: 'function' })));
    expect(requests.filter((type) => type === 'activate-workflow').length).toBeGreaterThanOrEqual(
      2,
    );
    expect(requests).not.toContain('extract-sink-calls');
  } finally {
    NodeWorker.prototype.postMessage = original;
  }
});
