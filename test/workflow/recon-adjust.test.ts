import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import { reconAdjustDeclined, reconAdjusted } from './scenarios';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

describe('reconAdjustWorkflow', () => {
  it('runs the one ledger step with an adjustment id of its own and answers what it wrote', async () => {
    const activities = mocked(reconAdjusted.activities(env));
    const { input, result } = await withWorker(env, activities, (taskQueue) =>
      reconAdjusted.play(env, taskQueue),
    );
    expect(activities.adjustReconExceptionStep).toHaveBeenCalledTimes(1);
    const [step] = activities.adjustReconExceptionStep.mock.calls[0]!;
    expect(step).toEqual({ ...input, adjustmentId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(result).toMatchObject({
      status: 'adjusted',
      exceptionId: input.exceptionId,
      adjustmentId: step.adjustmentId,
      amount: '1',
    });
  });

  it('answers a decline as data, without retrying it', async () => {
    const activities = mocked(reconAdjustDeclined.activities(env));
    const { result } = await withWorker(env, activities, (taskQueue) =>
      reconAdjustDeclined.play(env, taskQueue),
    );
    expect(result).toEqual({
      status: 'declined',
      code: 'insufficient_funds',
      detail: 'Insufficient funds',
    });
    expect(activities.adjustReconExceptionStep).toHaveBeenCalledTimes(1);
  });
});
