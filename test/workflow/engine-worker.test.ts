/**
 * The engine's worker runs workflows as the SDK does: a looping workflow fails only its own task;
 * "Stack Trace" shows where one waits; workflows taking turns reach the sinks once each, in order,
 * with their own info; a payload that is not encrypted is refused.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { InjectedSinks, Worker } from '@temporalio/worker';
import { PLAINTEXT_REFUSED } from '../../src/temporal/payload-codec';
import { bundleWorkflows } from '../../src/worker/bundle';
import { createEngineWorker } from '../../src/worker/engine-worker';
import { createTimeSkippingEnv, testDataConverter } from '../support/time-skipping';
import {
  answers,
  go,
  saysThrice,
  spinForever,
  waitForever,
  type SaidSinks,
} from './engine-worker.workflow';

let env: TestWorkflowEnvironment;
let code: string;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  code = await bundleWorkflows(require.resolve('./engine-worker.workflow'));
});

afterAll(async () => {
  await env?.teardown();
});

const worker = (taskQueue: string, sinks?: InjectedSinks<SaidSinks>): Promise<Worker> =>
  createEngineWorker({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { code },
    dataConverter: testDataConverter(),
    ...(sinks ? { sinks } : {}),
  });

/** Waits for `done` to answer something, checking every 50 ms, for at most 30 s. */
async function until<T>(done: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (const began = Date.now(); ;) {
    const found = await done();
    if (found !== undefined) return found;
    if (Date.now() - began > 30_000) throw new Error('not done within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test('a workflow stuck in a loop fails its workflow task; the worker runs on and serves others', async () => {
  const taskQueue = `engine-worker-${randomUUID()}`;
  const w = await worker(taskQueue);
  const { failure, state, answer } = await w.runUntil(async () => {
    const stuck = await env.client.workflow.start(spinForever, {
      taskQueue,
      workflowId: randomUUID(),
    });
    const failure = await until(async () => {
      const { events } = await stuck.fetchHistory();
      return events?.find((e) => e.workflowTaskFailedEventAttributes)
        ?.workflowTaskFailedEventAttributes?.failure?.message;
    });
    const state = w.getState();
    const answer = await env.client.workflow.execute(answers, {
      taskQueue,
      workflowId: randomUUID(),
    });
    await stuck.terminate();
    return { failure, state, answer };
  });
  // The SDK's deadlock detection: one activation may run for a bounded time only.
  expect(failure).toMatch(/script execution timed out/i);
  expect(state).toBe('RUNNING');
  expect(answer).toBe('answered');
});

test('the "Stack Trace" query shows where a running workflow waits', async () => {
  const taskQueue = `engine-worker-${randomUUID()}`;
  const w = await worker(taskQueue);
  const trace = await w.runUntil(async () => {
    const handle = await env.client.workflow.start(waitForever, {
      taskQueue,
      workflowId: randomUUID(),
    });
    const queried = await handle.query<string>('__stack_trace');
    await handle.terminate();
    return queried;
  });
  expect(trace).toMatch(/^\s+at waitForever \(.*engine-worker\.workflow\.ts:\d+:\d+\)/m);
});

test('workflows that take turns in the shared context each reach the sinks with their own info, in order', async () => {
  const taskQueue = `engine-worker-${randomUUID()}`;
  const heard: { n: number; workflowId: string }[] = [];
  const w = await worker(taskQueue, {
    said: {
      it: {
        fn: (info, n) => {
          heard.push({ n, workflowId: info.workflowId });
        },
      },
    },
  });
  const ids = Array.from({ length: 6 }, () => randomUUID());
  await w.runUntil(async () => {
    const handles = await Promise.all(
      ids.map((workflowId) => env.client.workflow.start(saysThrice, { taskQueue, workflowId })),
    );
    // Every one has said 1 and waits for its signal; the others wake in the reverse order.
    await until(() => (heard.length === ids.length ? true : undefined));
    for (const handle of [...handles].reverse()) await handle.signal(go);
    // Waiting on the results would let the time-skipping server skip ahead while a signal's
    // task is still on its way: the sinks say when all are done.
    await until(() => (heard.length === 3 * ids.length ? true : undefined));
  });
  for (const workflowId of ids) {
    expect(heard.filter((h) => h.workflowId === workflowId).map((h) => h.n)).toEqual([1, 2, 3]);
  }
  expect(heard).toHaveLength(3 * ids.length);
});

test('a workflow started with a payload that is not encrypted never runs: its task fails instead', async () => {
  const taskQueue = `engine-worker-${randomUUID()}`;
  const w = await worker(taskQueue);
  // What anyone who can reach Temporal but has no key can send: the SDK's plain JSON.
  const keyless = new Client({ connection: env.client.connection });
  const { failure, status, sealed } = await w.runUntil(async () => {
    // By name: `answers` takes no argument, but an argument is what the worker must decode.
    const forged = await keyless.workflow.start('answers', {
      taskQueue,
      workflowId: randomUUID(),
      args: ['forged'],
    });
    const failure = await until(async () => {
      const { events } = await forged.fetchHistory();
      return events?.find((e) => e.workflowTaskFailedEventAttributes)
        ?.workflowTaskFailedEventAttributes?.failure?.message;
    });
    const { status } = await forged.describe();
    await forged.terminate();
    const sealed = await env.client.workflow.execute<(arg: string) => Promise<string>>('answers', {
      taskQueue,
      workflowId: randomUUID(),
      args: ['sealed'],
    });
    return { failure, status: status.name, sealed };
  });
  expect(failure).toContain(PLAINTEXT_REFUSED);
  expect(status).toBe('RUNNING');
  expect(sealed).toBe('answered');
});
