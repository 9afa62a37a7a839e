import { isIP } from 'node:net';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import ipaddr from 'ipaddr.js';
import type Koa from 'koa';
import { z } from 'zod';
import { BodyId } from '../schemas';
import {
  findPayoutAccount,
  insertPayoutDocument,
  onboardingResultOf,
  type PayoutAccountRow,
} from '../../db/payout-accounts';
import {
  PayoutBusinessProfile,
  PayoutIndividual,
  type OnboardingResult,
} from '../../domain/payout-accounts';
import type { Caller } from '../../domain/types';
import { workflowIds } from '../../workflows/ids';
import {
  onboardingUpdates,
  onboardingWorkflow,
  type OnboardingAnswer,
} from '../../workflows/onboarding';
import { SearchAttributes } from '../../workflows/shared';
import { activeWallet, ownedWallet } from '../access';
import type { ApiDeps } from '../deps';
import { readDocument } from '../document-upload';
import { AppError, assertLiveProvider, errorResponse, unlessDeclined } from '../errors';
import { defineRoute, type Route } from '../route';
import { withDeadline } from '../workflow-starts';

export const DOCUMENT_PATH = '/api/v1/transactions/wallet/:wallet_id/verification-document';

/** The upload route streams its multipart body itself (src/api/middleware/body.ts skips it). */
export const streamsOwnBody = (path: string): boolean =>
  /^\/api\/v1\/transactions\/wallet\/[^/]+\/verification-document\/?$/.test(path);

const CompleteOnboardingRequest = z.object({
  wallet_id: BodyId,
  individual: PayoutIndividual,
  business_profile: PayoutBusinessProfile,
  card_token: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .meta({
      description:
        'A card token to pay out to; a debit card only (Test Mode: tok_visa_debit, ' +
        'tok_mastercard_debit; tok_visa, a credit card, is refused)',
      example: 'tok_visa_debit',
    }),
});

/** The specification's onboarding result, field for field. */
const OnboardingBody = z
  .object({
    message: z.string(),
    account_id: z.string().meta({ description: 'The connected payout account at the provider' }),
    payouts_enabled: z.boolean(),
    external_account_added: z
      .boolean()
      .meta({ description: 'Whether a payout (debit) card is attached' }),
    currently_due: z.array(z.string()).meta({ description: 'What the provider still needs' }),
    pending_verification: z
      .array(z.string())
      .meta({ description: 'What the provider received and is verifying' }),
    disabled_reason: z.string().nullable(),
  })
  .meta({ id: 'OnboardingResult' });

const WalletParams = z.object({ wallet_id: z.string() });

function onboardingBody(result: OnboardingResult): z.output<typeof OnboardingBody> {
  return {
    message: result.payoutsEnabled ? 'Account verified' : 'Further verification needed',
    account_id: result.accountId,
    payouts_enabled: result.payoutsEnabled,
    external_account_added: result.externalAccountAdded,
    currently_due: result.currentlyDue,
    pending_verification: result.pendingVerification,
    disabled_reason: result.disabledReason,
  };
}

/** 200 once payouts are enabled, 202 while the provider wants more (the specification). */
const answer = (result: OnboardingResult) => ({
  status: result.payoutsEnabled ? 200 : 202,
  body: onboardingBody(result),
});

const normalizedAddress = (address: string): string => ipaddr.process(address).toString();

/**
 * The end customer's address, the evidence of terms acceptance: the first address of
 * X-Forwarded-For. 400 when it is missing or not an address, or when it is the address of the
 * server calling us (the merchant's back end forwarded its own address, not its customer's).
 */
export function customerAddress(ctx: Koa.Context): string {
  const header = ctx.get('x-forwarded-for');
  const first = header.split(',')[0]!.trim();
  if (first === '') {
    throw new AppError(
      'invalid_request',
      'X-Forwarded-For is missing: send the end customer’s IP address, recorded as evidence of ' +
        'terms acceptance',
    );
  }
  // A zone index (`fe80::1%eth0`) names an interface of the client's machine, not an address.
  if (isIP(first) === 0 || first.includes('%')) {
    throw new AppError('invalid_request', 'X-Forwarded-For must be the end customer’s IP address');
  }
  const caller = ctx.req.socket.remoteAddress;
  if (caller && isIP(caller) !== 0 && normalizedAddress(caller) === normalizedAddress(first)) {
    throw new AppError(
      'invalid_request',
      'X-Forwarded-For is the calling server’s own address: send the end customer’s IP address',
    );
  }
  return normalizedAddress(first);
}

export function onboardingRoutes(deps: ApiDeps): Route[] {
  const { pool, providers, temporal, config } = deps;

  /** Runs one step of the wallet's onboarding workflow (started if it is not running). */
  async function step<Args extends unknown[]>(
    caller: Caller,
    walletId: string,
    update: UpdateDefinition<OnboardingAnswer, Args, string>,
    args: Args,
  ): Promise<OnboardingResult> {
    const start = new WithStartWorkflowOperation(onboardingWorkflow, {
      workflowId: workflowIds.onboarding(walletId),
      taskQueue: config.temporal.taskQueue,
      workflowIdConflictPolicy: 'USE_EXISTING',
      args: [{ applicationId: caller.applicationId, mode: caller.mode, walletId }],
      typedSearchAttributes: [
        { key: SearchAttributes.ApplicationId, value: caller.applicationId },
        { key: SearchAttributes.PaymentMode, value: caller.mode },
        { key: SearchAttributes.WalletId, value: [walletId] },
      ],
    });
    const answered = await withDeadline(
      temporal.workflow.executeUpdateWithStart(update, { startWorkflowOperation: start, args }),
      config.api.requestTimeoutMs,
    );
    return unlessDeclined(answered);
  }

  /** Live Mode without the Stripe keys: 503, before anything starts. */
  function assertProviderConfigured(caller: Caller): void {
    assertLiveProvider(caller, providers.liveConnect, 'payout accounts', 'the Stripe keys');
  }

  /** The wallet's onboarding, after its first submission; 404 before. */
  async function submitted(caller: Caller, walletId: string): Promise<PayoutAccountRow> {
    const wallet = await ownedWallet(pool, caller, walletId);
    const row = await findPayoutAccount(pool, caller, wallet.id);
    if (!row) throw new AppError('not_found', 'Onboarding not found for this wallet');
    return row;
  }

  const resultResponses = {
    200: { description: 'Account verified: payouts are enabled', schema: OnboardingBody },
    202: {
      description: 'Further verification needed: `currently_due` lists what',
      schema: OnboardingBody,
    },
  };

  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/transactions/wallet/complete-onboarding/',
      summary:
        'Payout-account onboarding: creates or reuses the wallet owner’s connected payout ' +
        'account at the card provider, submits identity and business details with the terms ' +
        'acceptance (the end customer’s X-Forwarded-For address and the time), and attaches ' +
        'the payout card (a Temporal workflow, onboarding-<wallet id>)',
      tag: 'Payouts',
      auth: 'default',
      body: CompleteOnboardingRequest,
      responses: {
        ...resultResponses,
        400: errorResponse(
          'X-Forwarded-For missing, not an address, or the calling server’s own; payouts need ' +
            'a debit card; no such card token',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The wallet is disabled or belongs to another application or mode'),
        404: errorResponse('Wallet not found'),
        422: errorResponse('Validation failure'),
        503: errorResponse('Live Mode card provider keys are not configured, or it is unreachable'),
        504: errorResponse('The provider did not answer in time; calling again is safe'),
      },
      handler: async ({ ctx, caller, body }) => {
        const ip = customerAddress(ctx);
        const wallet = await activeWallet(pool, caller, body.wallet_id);
        assertProviderConfigured(caller);
        const result = await step(caller, wallet.id, onboardingUpdates.submit, [
          {
            individual: body.individual,
            businessProfile: body.business_profile,
            cardToken: body.card_token ?? null,
            tosAcceptance: { ip, date: Math.floor(Date.now() / 1000) },
          },
        ]);
        return answer(result);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/transactions/wallet/:wallet_id/onboarding',
      summary: 'The wallet’s payout-account onboarding result as it stands (nothing is asked)',
      tag: 'Payouts',
      auth: 'default',
      params: WalletParams,
      responses: {
        200: { description: 'The onboarding result', schema: OnboardingBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The wallet belongs to another application or mode'),
        404: errorResponse('Wallet not found, or no onboarding submitted for it yet'),
      },
      handler: async ({ caller, params }) => {
        const row = await submitted(caller, params.wallet_id);
        return { body: onboardingBody(onboardingResultOf(row)) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/transactions/wallet/:wallet_id/onboarding/sync',
      summary:
        'Identity verification re-sync: asks the card provider where the account’s ' +
        'verification stands and records it',
      tag: 'Payouts',
      auth: 'default',
      params: WalletParams,
      responses: {
        ...resultResponses,
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The wallet belongs to another application or mode'),
        404: errorResponse('Wallet not found, or no onboarding submitted for it yet'),
        503: errorResponse('Live Mode card provider keys are not configured, or it is unreachable'),
        504: errorResponse('The provider did not answer in time; calling again is safe'),
      },
      handler: async ({ caller, params }) => {
        const row = await submitted(caller, params.wallet_id);
        assertProviderConfigured(caller);
        return answer(await step(caller, row.wallet_id, onboardingUpdates.sync, []));
      },
    }),
    defineRoute({
      method: 'post',
      path: DOCUMENT_PATH,
      summary:
        'Upload an identity document for verification (multipart/form-data: `file`, a JPEG, ' +
        'PNG or PDF of at most 10 MiB, and `purpose` `identity_document`); checked before it ' +
        'is stored, kept in the database, then sent to the card provider',
      tag: 'Payouts',
      auth: 'default',
      params: WalletParams,
      responses: {
        ...resultResponses,
        400: errorResponse(
          'Not a JPEG, PNG or PDF; not multipart/form-data; or the wallet has uploaded as many ' +
            'documents (or bytes) as it may keep',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The wallet belongs to another application or mode'),
        404: errorResponse('Wallet not found, or no onboarding submitted for it yet'),
        413: errorResponse('The document is larger than 10 MiB'),
        422: errorResponse('purpose or file missing, or purpose not identity_document'),
        503: errorResponse('Live Mode card provider keys are not configured, or it is unreachable'),
        504: errorResponse('The provider did not answer in time; calling again is safe'),
      },
      handler: async ({ ctx, caller, params }) => {
        const row = await submitted(caller, params.wallet_id);
        assertProviderConfigured(caller);
        const document = await readDocument(ctx);
        const { documentsPerWallet, documentBytesPerWallet } = config.onboarding;
        const stored = await insertPayoutDocument(
          pool,
          { walletId: row.wallet_id, ...document },
          { documents: documentsPerWallet, bytes: documentBytesPerWallet },
        );
        if (!stored) {
          throw new AppError(
            'invalid_request',
            `This wallet keeps at most ${documentsPerWallet} verification documents of ` +
              `${documentBytesPerWallet} bytes in all; no more can be uploaded`,
          );
        }
        return answer(
          await step(caller, row.wallet_id, onboardingUpdates.document, [
            { documentId: stored.id },
          ]),
        );
      },
    }),
  ];
}
