import {
  allHandlersFinished,
  condition,
  defineUpdate,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type {
  OnboardingInput,
  OnboardingResult,
  OnboardingSubmission,
} from '../domain/payout-accounts';
import type { Activities } from './activities-types';
import { asDeclined, exhausted } from './declines';
import { activityPresets } from './retry';
import type { Declined } from './shared';

export type OnboardingAnswer = OnboardingResult | Declined;

export const onboardingUpdates = {
  /** Creates or reuses the account and submits the details (and the card). */
  submit: defineUpdate<OnboardingAnswer, [OnboardingSubmission]>('submit'),
  /** The identity re-sync: asks the provider where verification stands. */
  sync: defineUpdate<OnboardingAnswer>('sync'),
  /** A stored identity document, sent to the provider. */
  document: defineUpdate<OnboardingAnswer, [{ documentId: string }]>('document'),
};

/** An onboarding unfinished after this ends; a later request starts it again, on the same account. */
const IDLE_LIMIT = '30 days';

const provider = proxyActivities<Activities>(activityPresets.provider);

/**
 * One wallet owner's onboarding (`onboarding-<wallet id>`), alive until payouts are enabled. Its
 * updates run one at a time in arrival order so two submissions never create two accounts; a later
 * request starts it again and reuses the account (the activities find it).
 */
export async function onboardingWorkflow(input: OnboardingInput): Promise<OnboardingResult | null> {
  let last: OnboardingResult | null = null;
  let issued = 0;
  let served = 0;

  async function exclusive(step: () => Promise<OnboardingResult>): Promise<OnboardingAnswer> {
    const ticket = issued++;
    await condition(() => served === ticket);
    try {
      last = await step();
      return last;
    } catch (error) {
      const declined =
        asDeclined(error) ??
        (exhausted(error)
          ? ({ status: 'declined', code: 'provider_unavailable', detail: null } as const)
          : null);
      if (!declined) throw error;
      return declined;
    } finally {
      served++;
    }
  }

  setHandler(onboardingUpdates.submit, (submission) =>
    exclusive(() => provider.submitOnboarding({ ...input, ...submission })),
  );
  setHandler(onboardingUpdates.sync, () => exclusive(() => provider.syncOnboarding(input)));
  setHandler(onboardingUpdates.document, ({ documentId }) =>
    exclusive(() => provider.sendVerificationDocument({ ...input, documentId })),
  );

  await condition(() => last?.payoutsEnabled === true && served === issued, IDLE_LIMIT);
  await condition(allHandlersFinished);
  return last;
}
