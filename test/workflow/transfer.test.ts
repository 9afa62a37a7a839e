import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { TransferInput } from '../../workflows/shared';
import { transferWorkflow } from '../../workflows/transfer';
import { createTimeSkippingEnv, withWorker } from '../support/time-skipping';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

const input: TransferInput = {
  transactionId: '7f1c7d5e-4d0c-4d89-9a55-1c8f1d1f0001',
  applicationId: 'app-1',
  mode: 'test',
  fromWalletId: 'w-from',
  toWalletId: 'w-to',
  amount: '1250',
  description: 'rent',
};

describe('transferWorkflow', () => {
  it('completes after one ledger step and returns the transaction id', async () => {
    const transferFunds = jest.fn((_: TransferInput) =>
      Promise.resolve({ transactionId: input.transactionId }),
    );
    const result = await withWorker(env, { transferFunds }, (taskQueue) =>
      env.client.workflow.execute(transferWorkflow, {
        workflowId: `transfer-${input.transactionId}`,
        taskQueue,
        args: [input],
      }),
    );
    expect(result).toEqual({ status: 'completed', transactionId: input.transactionId });
    expect(transferFunds).toHaveBeenCalledTimes(1);
    expect(transferFunds).toHaveBeenCalledWith(input);
  });

  it('returns a business decline as data, without retrying it', async () => {
    const transferFunds = jest.fn((_: TransferInput): Promise<{ transactionId: string }> =>
      Promise.reject(ApplicationFailure.nonRetryable('Insufficient funds', 'insufficient_funds')),
    );
    const result = await withWorker(env, { transferFunds }, (taskQueue) =>
      env.client.workflow.execute(transferWorkflow, {
        workflowId: 'transfer-decline',
        taskQueue,
        args: [input],
      }),
    );
    expect(result).toEqual({
      status: 'declined',
      code: 'insufficient_funds',
      detail: 'Insufficient funds',
    });
    expect(transferFunds).toHaveBeenCalledTimes(1);
  });

  it('retries a transient activity failure and then completes once', async () => {
    let calls = 0;
    const transferFunds = jest.fn((_: TransferInput) => {
      calls += 1;
      if (calls < 3) return Promise.reject(new Error('connection reset by peer'));
      return Promise.resolve({ transactionId: input.transactionId });
    });
    const result = await withWorker(env, { transferFunds }, (taskQueue) =>
      env.client.workflow.execute(transferWorkflow, {
        workflowId: 'transfer-retry',
        taskQueue,
        args: [input],
      }),
    );
    expect(result).toEqual({ status: 'completed', transactionId: input.transactionId });
    expect(transferFunds).toHaveBeenCalledTimes(3);
  });
});
