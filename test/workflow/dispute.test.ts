import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { disputeStateQuery } from '../../src/workflows/dispute-shared';
import { SearchAttributes } from '../../src/workflows/shared';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import {
  closeDisputeWorkflow,
  disputeActivities,
  disputeDeclined,
  disputeEvidence,
  disputeEvidenceWon,
  disputeExpired,
  disputeInput,
  openDisputeWorkflow,
  SEVEN_DAYS,
} from './scenarios';

// Real servers on a shared machine: jest's 5-second default is too tight under load.
jest.setTimeout(60_000);

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

const ONE_DAY = 24 * 60 * 60 * 1000;

describe('disputeWorkflow', () => {
  it('opens, takes evidence (under review), then closes as the provider decided', async () => {
    const activities = mocked(disputeEvidenceWon.activities(env));
    const { input, opened, answered, result, handle } = await withWorker(
      env,
      activities,
      (taskQueue) => disputeEvidenceWon.play(env, taskQueue),
    );
    expect(opened).toMatchObject({
      status: 'opened',
      dispute: { id: input.disputeId, status: 'needs_response', amount: '2500' },
    });
    expect(answered).toEqual({ evidence: 'under_review', closed: 'won' });
    expect(result).toBe('won');
    expect(activities.openDispute).toHaveBeenCalledTimes(1);
    expect(activities.submitDisputeEvidence).toHaveBeenCalledWith({
      disputeId: input.disputeId,
      text: 'Signed delivery receipt',
    });
    expect(activities.closeDispute).toHaveBeenCalledTimes(1);
    expect(activities.closeDispute).toHaveBeenCalledWith({
      disputeId: input.disputeId,
      status: 'won',
    });
    const described = await handle.describe();
    expect(described.typedSearchAttributes.get(SearchAttributes.PaymentStatus)).toBe('completed');
  });

  it('loses a Test Mode dispute with no evidence when its evidence falls due', async () => {
    const activities = mocked(disputeExpired.activities(env));
    const started = await env.currentTimeMs();
    const { input, result, handle } = await withWorker(env, activities, (taskQueue) =>
      disputeExpired.play(env, taskQueue),
    );
    expect(result).toBe('lost');
    expect((await env.currentTimeMs()) - started).toBeGreaterThanOrEqual(SEVEN_DAYS);
    expect(activities.closeDispute).toHaveBeenCalledWith({
      disputeId: input.disputeId,
      status: 'lost',
    });
    expect(activities.submitDisputeEvidence).not.toHaveBeenCalled();
    const described = await handle.describe();
    expect(described.typedSearchAttributes.get(SearchAttributes.PaymentStatus)).toBe('failed');
  });

  it('answers a decline as data and moves nothing', async () => {
    const activities = mocked(disputeDeclined.activities(env));
    const { opened, result } = await withWorker(env, activities, (taskQueue) =>
      disputeDeclined.play(env, taskQueue),
    );
    expect(opened).toEqual({ status: 'declined', code: 'dispute_not_allowed', detail: null });
    expect(result).toBe('declined');
    expect(activities.closeDispute).not.toHaveBeenCalled();
  });

  it('keeps a Test Mode dispute with evidence open past the due date, for the decision', async () => {
    const activities = mocked(disputeActivities());
    const input = disputeInput(randomUUID(), await env.currentTimeMs());
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await openDisputeWorkflow(env, taskQueue, input);
      expect(await disputeEvidence(handle, 'Tracking number 1Z999')).toBe('under_review');
      await env.sleep(SEVEN_DAYS + ONE_DAY);
      expect(await handle.query(disputeStateQuery)).toBe('under_review');
      expect(activities.closeDispute).not.toHaveBeenCalled();
      expect(await closeDisputeWorkflow(handle, 'lost')).toBe('lost');
      expect(await handle.result()).toBe('lost');
    });
    expect(activities.closeDispute).toHaveBeenCalledTimes(1);
  });

  it('waits for a live provider past the due date, refusing evidence then', async () => {
    const activities = mocked(disputeActivities());
    const input = disputeInput(randomUUID(), await env.currentTimeMs(), 'live');
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await openDisputeWorkflow(env, taskQueue, input);
      await env.sleep(SEVEN_DAYS + ONE_DAY);
      expect(await handle.query(disputeStateQuery)).toBe('needs_response');
      expect(await disputeEvidence(handle, 'Too late')).toEqual({
        status: 'declined',
        code: 'invalid_request',
        detail: 'The evidence is past its due date',
      });
      const [first, second] = await Promise.all([
        closeDisputeWorkflow(handle, 'won'),
        closeDisputeWorkflow(handle, 'lost'),
      ]);
      // The first decision to arrive is the one; the other answers it.
      expect(second).toBe(first);
      expect(await handle.result()).toBe(first);
    });
    expect(activities.submitDisputeEvidence).not.toHaveBeenCalled();
    expect(activities.closeDispute).toHaveBeenCalledTimes(1);
  });

  it('refuses evidence outside 1 to 20,000 characters before it reaches the history', async () => {
    const activities = mocked(disputeActivities());
    const input = disputeInput(randomUUID(), await env.currentTimeMs(), 'live');
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await openDisputeWorkflow(env, taskQueue, input);
      await expect(disputeEvidence(handle, '')).rejects.toThrow();
      await expect(disputeEvidence(handle, 'x'.repeat(20_001))).rejects.toThrow();
      expect(await closeDisputeWorkflow(handle, 'lost')).toBe('lost');
      expect(await handle.result()).toBe('lost');
    });
    expect(activities.submitDisputeEvidence).not.toHaveBeenCalled();
  });
});
