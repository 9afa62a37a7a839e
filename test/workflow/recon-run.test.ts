import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Context } from '@temporalio/activity';
import { randomUUID } from 'node:crypto';
import { workflowIds } from '../../src/workflows/ids';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';

// Real servers on a shared machine: jest's 5-second default is too tight under load.
jest.setTimeout(60_000);

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

/** An attempt whose worker is gone: no heartbeat, no answer, until the worker shuts down. */
function lostAttempt(): Promise<never> {
  const { cancellationSignal } = Context.current();
  return new Promise((_, reject) =>
    cancellationSignal.addEventListener('abort', () => reject(new Error('worker gone'))),
  );
}

/** A run's steps whose first attempt of `lost` never answers, like a worker killed mid-step. */
function steps(lost: (typeof STEPS)[number]) {
  let attempts = 0;
  const once = <T>(answer: T) => (attempts++ === 0 ? lostAttempt() : Promise.resolve(answer));
  return mocked({
    loadReconRecords: () =>
      lost === 'loadReconRecords'
        ? once({ cursor: null, loaded: 3 })
        : Promise.resolve({ cursor: null, loaded: 3 }),
    matchReconRun: () => (lost === 'matchReconRun' ? once(undefined) : Promise.resolve(undefined)),
    startReconExceptionTimers: () =>
      lost === 'startReconExceptionTimers'
        ? once({ after: null })
        : Promise.resolve({ after: null }),
    failReconRun: () => Promise.resolve(),
  });
}

const STEPS = ['loadReconRecords', 'matchReconRun', 'startReconExceptionTimers'] as const;

describe('reconciliationRunWorkflow', () => {
  // Without a heartbeat timeout the silent attempt holds the run for its start-to-close timeout
  // (minutes, which the test server does not skip while an activity runs): past jest's timeout.
  it('retries each step at once when its worker is lost mid-step, one run for each', async () => {
    const runs = STEPS.map((lost) => ({ lost, runId: randomUUID(), activities: steps(lost) }));
    await Promise.all(
      runs.map(({ runId, activities }) =>
        withWorker(env, activities, async (taskQueue) => {
          const handle = await env.client.workflow.start('reconciliationRunWorkflow', {
            workflowId: workflowIds.reconRun(runId),
            taskQueue,
            args: [{ runId }],
          });
          // Polled rather than `result()`, which lets the test server skip time: a skip would
          // time out the other steps too and retry them.
          while ((await handle.describe()).status.name === 'RUNNING') {
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
          await handle.result();
        }),
      ),
    );
    for (const { lost, activities } of runs) {
      expect(activities[lost]).toHaveBeenCalledTimes(2);
      for (const step of STEPS.filter((s) => s !== lost)) {
        expect(activities[step]).toHaveBeenCalledTimes(1);
      }
      expect(activities.failReconRun).not.toHaveBeenCalled();
    }
  });
});
