import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { workflowIds } from '../../src/workflows/ids';
import type { OnboardingResult } from '../../src/domain/payout-accounts';
import { onboardingUpdates, onboardingWorkflow } from '../../src/workflows/onboarding';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import {
  onboardingActivities,
  onboardingCardRefused,
  onboardingDocument,
  onboardingInput,
  onboardingSubmission,
  onboardingVerified,
  submitOnboarding,
} from './scenarios';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

const verified = (externalAccountAdded: boolean): OnboardingResult => ({
  status: 'done',
  accountId: 'acct_sandbox_fixture',
  payoutsEnabled: true,
  externalAccountAdded,
  currentlyDue: [],
  pendingVerification: [],
  disabledReason: null,
});

describe('onboardingWorkflow', () => {
  it('answers verified at once and ends: one submission, nothing left to wait for', async () => {
    const activities = mocked(onboardingVerified.activities(env));
    const { input, submitted, result } = await withWorker(env, activities, (taskQueue) =>
      onboardingVerified.play(env, taskQueue),
    );
    expect(submitted).toEqual(verified(true));
    expect(result).toEqual(verified(true));
    expect(activities.submitOnboarding).toHaveBeenCalledTimes(1);
    expect(activities.submitOnboarding).toHaveBeenCalledWith({
      ...input,
      ...onboardingSubmission(),
    });
    expect(activities.syncOnboarding).not.toHaveBeenCalled();
  });

  it('asks for a document, takes it (pending verification), and ends once the re-sync verifies', async () => {
    const activities = mocked(onboardingDocument.activities(env));
    const { input, submitted, answered, result } = await withWorker(env, activities, (taskQueue) =>
      onboardingDocument.play(env, taskQueue),
    );
    expect(submitted).toMatchObject({
      payoutsEnabled: false,
      currentlyDue: ['individual.verification.document'],
      pendingVerification: [],
      disabledReason: 'requirements.past_due',
    });
    expect(answered).toEqual([
      expect.objectContaining({
        payoutsEnabled: false,
        currentlyDue: [],
        pendingVerification: ['individual.verification.document'],
        disabledReason: 'requirements.pending_verification',
      }),
      verified(false),
    ]);
    expect(result).toEqual(verified(false));
    expect(activities.sendVerificationDocument).toHaveBeenCalledWith({
      ...input,
      documentId: expect.any(String),
    });
    expect(activities.syncOnboarding).toHaveBeenCalledTimes(1);
  });

  it('answers a credit card as a decline and keeps running; the resubmission reuses the run', async () => {
    const activities = mocked(onboardingCardRefused.activities(env));
    const { submitted, answered, result } = await withWorker(env, activities, (taskQueue) =>
      onboardingCardRefused.play(env, taskQueue),
    );
    expect(submitted).toEqual({ status: 'declined', code: 'debit_card_required', detail: null });
    expect(answered).toEqual(verified(true));
    expect(result).toEqual(verified(true));
    expect(activities.submitOnboarding).toHaveBeenCalledTimes(2);
  });

  it('ends after 30 days when the owner never finishes, with the last answer', async () => {
    const activities = mocked(onboardingActivities());
    const input = onboardingInput(randomUUID());
    const started = await env.currentTimeMs();
    const result = await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await submitOnboarding(
        env,
        taskQueue,
        input,
        onboardingSubmission('123456789', null),
      );
      return handle.result();
    });
    expect(result).toMatchObject({ payoutsEnabled: false, currentlyDue: [expect.any(String)] });
    expect((await env.currentTimeMs()) - started).toBeGreaterThanOrEqual(30 * 24 * 3600 * 1000);
  });

  it('runs racing requests one at a time, in arrival order', async () => {
    let running = 0;
    let most = 0;
    const order: string[] = [];
    const base = onboardingActivities();
    const slow =
      <A extends unknown[]>(name: string, run: (...args: A) => Promise<OnboardingResult>) =>
      async (...args: A) => {
        running += 1;
        most = Math.max(most, running);
        order.push(name);
        await new Promise((resolve) => setTimeout(resolve, 50));
        running -= 1;
        return run(...args);
      };
    const activities = {
      submitOnboarding: slow('submit', base.submitOnboarding),
      syncOnboarding: slow('sync', base.syncOnboarding),
      sendVerificationDocument: slow('document', base.sendVerificationDocument),
    };
    const input = onboardingInput(randomUUID());
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await submitOnboarding(
        env,
        taskQueue,
        input,
        onboardingSubmission('123456789', null),
      );
      const answers = await Promise.all([
        handle.executeUpdate(onboardingUpdates.document, { args: [{ documentId: 'd1' }] }),
        handle.executeUpdate(onboardingUpdates.sync),
      ]);
      expect(answers.map((a) => a.status)).toEqual(['done', 'done']);
      await handle.result();
    });
    expect(most).toBe(1);
    expect(order[0]).toBe('submit');
    expect(order).toHaveLength(3);
  });

  it('answers a provider that stays unreachable as provider_unavailable, after the bounded retry', async () => {
    const activities = {
      ...onboardingActivities(),
      submitOnboarding: jest.fn(() =>
        Promise.reject(ApplicationFailure.retryable('connection reset', 'ProviderUnreachable')),
      ),
    };
    const input = onboardingInput(randomUUID());
    const [submitted, result] = await withWorker(env, activities, async (taskQueue) => {
      const handle = await env.client.workflow.start(onboardingWorkflow, {
        workflowId: workflowIds.onboarding(input.walletId),
        taskQueue,
        args: [input],
      });
      const answer = handle.executeUpdate(onboardingUpdates.submit, {
        args: [onboardingSubmission()],
      });
      // Waiting for the result lets the test server skip the retries' backoff.
      return Promise.all([answer, handle.result()]);
    });
    expect(result).toBeNull();
    expect(submitted).toEqual({ status: 'declined', code: 'provider_unavailable', detail: null });
    expect(activities.submitOnboarding).toHaveBeenCalledTimes(8);
  });
});
