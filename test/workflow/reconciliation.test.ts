import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import { fixtureId, reconciliation } from './scenarios';

// Real servers on a shared machine: jest's 5-second default is too tight under load.
jest.setTimeout(60_000);

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

describe('reconciliationWorkflow', () => {
  it('syncs every stale payment at most `concurrency` at once, records changes and errors, retries notifications', async () => {
    const activities = mocked(reconciliation.activities(env));
    let inFlight = 0;
    let most = 0;
    const sync = activities.reconcilePayment.getMockImplementation()!;
    activities.reconcilePayment.mockImplementation(async (input) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      try {
        return await sync(input);
      } finally {
        inFlight -= 1;
      }
    });
    const { result } = await withWorker(env, activities, (taskQueue) =>
      reconciliation.play(env, taskQueue),
    );
    expect(activities.reconcilePayment).toHaveBeenCalledTimes(3);
    expect(most).toBe(2);
    const expected = {
      graceSeconds: 300,
      paymentsChecked: 3,
      changes: [
        {
          transaction_id: fixtureId(71),
          transaction_type: 'mobile_money_deposit',
          from: 'pending',
          to: 'completed',
        },
      ],
      errors: [{ transaction_id: fixtureId(73), error: 'the provider cannot be reached' }],
      notificationsRetried: 2,
      notificationsMatched: 1,
    };
    expect(result).toEqual(expected);
    expect(activities.retryUnmatchedNotifications).toHaveBeenCalledTimes(1);
    expect(activities.syncOpenDisputes).toHaveBeenCalledTimes(1);
    expect(activities.recordReconciliationRun).toHaveBeenCalledWith({
      startedAt: expect.any(String),
      ...expected,
    });
  });

  it('passes a run’s own grace period to the search; with nothing stale it only retries notifications', async () => {
    const activities = mocked({
      ...reconciliation.activities(env),
      findStalePayments: ({ graceSeconds }: { graceSeconds: number | null }) =>
        Promise.resolve({ payments: [], graceSeconds: graceSeconds ?? 300, concurrency: 4 }),
    });
    const result = await withWorker(env, activities, (taskQueue) =>
      env.client.workflow.execute('reconciliationWorkflow', {
        workflowId: `reconciliation-${fixtureId(80)}`,
        taskQueue,
        args: [{ graceSeconds: 60 }],
      }),
    );
    expect(activities.findStalePayments).toHaveBeenCalledWith({ graceSeconds: 60 });
    expect(activities.reconcilePayment).not.toHaveBeenCalled();
    expect(result).toMatchObject({ graceSeconds: 60, paymentsChecked: 0, changes: [] });
    expect(activities.retryUnmatchedNotifications).toHaveBeenCalledTimes(1);
  });
});
