import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { TransferInput } from '../../src/workflows/shared';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import {
  runTransfer,
  transferCompleted,
  transferDeclined,
  transferInput,
  transferSucceeds,
} from './scenarios';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

describe('transferWorkflow', () => {
  it('completes after one ledger step and returns the transaction id', async () => {
    const activities = mocked(transferCompleted.activities(env));
    const { input, result } = await withWorker(env, activities, (taskQueue) =>
      transferCompleted.play(env, taskQueue),
    );
    expect(result).toEqual({ status: 'completed', transactionId: input.transactionId });
    expect(activities.transferFunds).toHaveBeenCalledTimes(1);
    expect(activities.transferFunds).toHaveBeenCalledWith(input);
  });

  it('returns a business decline as data, without retrying it', async () => {
    const activities = mocked(transferDeclined.activities(env));
    const { result } = await withWorker(env, activities, (taskQueue) =>
      transferDeclined.play(env, taskQueue),
    );
    expect(result).toEqual({
      status: 'declined',
      code: 'insufficient_funds',
      detail: 'Insufficient funds',
    });
    expect(activities.transferFunds).toHaveBeenCalledTimes(1);
  });

  it('retries a transient activity failure and then completes once', async () => {
    const input = transferInput(randomUUID());
    let calls = 0;
    const transferFunds = jest.fn((request: TransferInput) => {
      calls += 1;
      if (calls < 3) return Promise.reject(new Error('connection reset by peer'));
      return transferSucceeds(request);
    });
    const { result } = await withWorker(env, { transferFunds }, (taskQueue) =>
      runTransfer(env, taskQueue, input),
    );
    expect(result).toEqual({ status: 'completed', transactionId: input.transactionId });
    expect(transferFunds).toHaveBeenCalledTimes(3);
  });

  it('runs the step as a local activity without a patch marker when the start says so', async () => {
    // Started as the API starts it since (`localSteps`): no `patched` marker and no
    // TemporalChangeVersion upsert, two events (and a visibility write) fewer a transfer. Started
    // without it (a start from before), the workflow asks `patched`, as it did.
    const eventsOf = async (input: TransferInput) => {
      const transferFunds = jest.fn(transferSucceeds);
      const { handle } = await withWorker(env, { transferFunds }, (taskQueue) =>
        runTransfer(env, taskQueue, input),
      );
      expect(transferFunds).toHaveBeenCalledTimes(1);
      const { events } = await handle.fetchHistory();
      return (events ?? []).map((e) => ({
        type: e.eventType,
        marker: e.markerRecordedEventAttributes?.markerName ?? undefined,
        attributes: Object.keys(
          e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {},
        ),
      }));
    };
    const withFlag = await eventsOf(transferInput(randomUUID()));
    const { localSteps: _, ...before } = transferInput(randomUUID());
    const withoutFlag = await eventsOf(before);

    const markers = (events: typeof withFlag) => events.flatMap((e) => e.marker ?? []);
    const upserted = (events: typeof withFlag) => events.flatMap((e) => e.attributes);
    expect(markers(withFlag)).toEqual(['core_local_activity']);
    expect(upserted(withFlag)).toEqual(['PaymentStatus']);
    expect(markers(withoutFlag)).toEqual(['core_patch', 'core_local_activity']);
    expect(upserted(withoutFlag)).toEqual(['TemporalChangeVersion', 'PaymentStatus']);
    expect(withoutFlag.length - withFlag.length).toBe(2);
  });
});
