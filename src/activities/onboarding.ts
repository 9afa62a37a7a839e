import {
  findPayoutAccount,
  findPayoutDocument,
  insertPayoutAccount,
  onboardingResultOf,
  setPayoutDocumentFile,
  updatePayoutAccount,
  type PayoutAccountRow,
  type PayoutAccountState,
} from '../db/payout-accounts';
import type { DatabasePool } from '../db/pool';
import type { Providers } from '../providers';
import {
  DebitCardRequiredError,
  UnknownCardTokenError,
  type PayoutAccount,
  type PayoutAccountProvider,
} from '../providers/card';
import { ProviderNotConfiguredError, ProviderRefusedError } from '../providers/mobile-money';
import { workflowIds } from '../workflows/ids';
import type {
  OnboardingInput,
  OnboardingResult,
  OnboardingSubmission,
} from '../domain/payout-accounts';
import { decline } from './declines';

/**
 * A payout-account provider call, with what no retry can cure turned into declines: a credit
 * card, an unknown token, a refusal, missing credentials. Anything else (a timeout, a 5xx) is
 * left to the activity's bounded retry, which sends the same idempotency keys again.
 */
async function callProvider<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof DebitCardRequiredError) throw decline('debit_card_required');
    if (error instanceof UnknownCardTokenError) throw decline('invalid_request', error.message);
    if (error instanceof ProviderNotConfiguredError) {
      throw decline('provider_unavailable', error.message);
    }
    if (error instanceof ProviderRefusedError) throw decline('provider_refused', error.message);
    throw error;
  }
}

const stateOf = (account: PayoutAccount): PayoutAccountState => ({
  payoutsEnabled: account.payoutsEnabled,
  externalAccountId: account.externalAccount?.id ?? null,
  externalAccountLast4: account.externalAccount?.last4 ?? null,
  requirements: {
    currently_due: account.requirements.currentlyDue,
    pending_verification: account.requirements.pendingVerification,
    disabled_reason: account.requirements.disabledReason,
  },
});

export function createOnboardingActivities(deps: { pool: DatabasePool; providers: Providers }) {
  const { pool, providers } = deps;

  async function existing(input: OnboardingInput): Promise<PayoutAccountRow> {
    const row = await findPayoutAccount(pool, input, input.walletId);
    if (!row) throw decline('not_found', 'Onboarding not found');
    return row;
  }

  /**
   * Creates the owner's connected account or resubmits the details to it, with the workflow id as
   * the provider's idempotency key: a retry after a lost answer gets the same account. A payout
   * card the provider refuses is a decline after the account is recorded: the details stand.
   */
  async function submitOnboarding(
    input: OnboardingInput & OnboardingSubmission,
  ): Promise<OnboardingResult> {
    const connect: PayoutAccountProvider = await callProvider(() =>
      Promise.resolve(providers.connect(input.mode)),
    );
    const details = {
      individual: input.individual,
      businessProfile: input.businessProfile,
      tosAcceptance: input.tosAcceptance,
    };
    const tos = {
      ip: input.tosAcceptance.ip,
      acceptedAt: new Date(input.tosAcceptance.date * 1000).toISOString(),
    };
    const known = await findPayoutAccount(pool, input, input.walletId);
    let row: PayoutAccountRow;
    if (known) {
      const account = await callProvider(() => connect.updateAccount(known.account_id, details));
      row = await updatePayoutAccount(pool, input.walletId, stateOf(account), tos);
    } else {
      const account = await callProvider(() =>
        connect.createAccount({
          idempotencyKey: workflowIds.onboarding(input.walletId),
          reference: input.walletId,
          details,
        }),
      );
      row = await insertPayoutAccount(pool, {
        applicationId: input.applicationId,
        mode: input.mode,
        walletId: input.walletId,
        provider: connect.name,
        accountId: account.id,
        state: stateOf(account),
        tos,
      });
    }
    if (input.cardToken) {
      const cardToken = input.cardToken;
      const account = await callProvider(() =>
        connect.addPayoutCard({
          accountId: row.account_id,
          cardToken,
          idempotencyKey: `${workflowIds.onboarding(input.walletId)}-card-${cardToken}`,
        }),
      );
      row = await updatePayoutAccount(pool, input.walletId, stateOf(account));
    }
    return onboardingResultOf(row);
  }

  /** The identity re-sync: the provider's view of the account now, recorded. */
  async function syncOnboarding(input: OnboardingInput): Promise<OnboardingResult> {
    const row = await existing(input);
    const account = await callProvider(() =>
      providers.connect(input.mode).getAccount(row.account_id),
    );
    return onboardingResultOf(await updatePayoutAccount(pool, input.walletId, stateOf(account)));
  }

  /**
   * Sends a stored identity document to the provider (once: the file id is recorded, and the
   * document's id is the upload's idempotency key) and names it the owner's document.
   */
  async function sendVerificationDocument(
    input: OnboardingInput & { documentId: string },
  ): Promise<OnboardingResult> {
    const row = await existing(input);
    const document = await findPayoutDocument(pool, input.documentId);
    if (!document || document.wallet_id !== input.walletId) {
      throw decline('not_found', 'Verification document not found');
    }
    const connect = await callProvider(() => Promise.resolve(providers.connect(input.mode)));
    let fileId = document.provider_file_id;
    if (!fileId) {
      const extension = document.content_type.split('/')[1]!.replace('jpeg', 'jpg');
      fileId = await callProvider(() =>
        connect.uploadIdentityDocument({
          accountId: row.account_id,
          document: {
            content: document.content,
            contentType: document.content_type,
            filename: `identity-document-${document.id}.${extension}`,
          },
          idempotencyKey: `document-${document.id}`,
        }),
      );
      await setPayoutDocumentFile(pool, document.id, fileId);
    }
    const providerFileId = fileId;
    const account = await callProvider(() =>
      connect.attachIdentityDocument(row.account_id, providerFileId),
    );
    return onboardingResultOf(await updatePayoutAccount(pool, input.walletId, stateOf(account)));
  }

  return { submitOnboarding, syncOnboarding, sendVerificationDocument };
}
