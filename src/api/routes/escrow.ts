import { z } from 'zod';
import { remember } from '../../cache/bounded';
import { findTransaction, type TransactionRow } from '../../db/transactions';
import type { Caller } from '../../domain/types';
import { escrowWorkflow } from '../../workflows/escrow';
import { workflowIds } from '../../workflows/ids';
import {
  escrowUpdates,
  type EscrowStepResult,
  type TransactionRecord,
} from '../../workflows/shared';
import { assertOwned, refuseIfDeclined } from '../access';
import { heldRules, holdRules, refundRules, releaseRules } from '../../domain/money-rules';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse, notFound, unlessDeclined } from '../errors';
import { answerUnderKey, idFromKey } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { BodyId, Metadata, PositiveAmount } from '../schemas';
import { TransactionBody, madeStepAnswer, transactionBody } from '../serializers';
import { startPaymentWithUpdate, withDeadline } from '../workflow-starts';

const HoldRequest = z.object({
  wallet_id: BodyId,
  amount: PositiveAmount,
  description: z.string().max(500).default(''),
  recipient_wallet_id: BodyId.nullish(),
  expires_at: z.iso
    .datetime({ offset: true, error: 'expires_at must be an ISO 8601 time' })
    .refine((v) => Date.parse(v) > Date.now(), 'expires_at must be in the future')
    .nullish(),
  metadata: Metadata.optional(),
});

const ReleaseRequest = z
  .object({
    recipient_wallet_id: BodyId.optional(),
    amount: PositiveAmount.optional(),
    metadata: Metadata.optional(),
  })
  .optional()
  .transform((v) => v ?? {});

/** The body is optional: a refund without metadata needs none. */
const EscrowRefundRequest = z
  .object({ metadata: Metadata.optional() })
  .optional()
  .transform((v) => v ?? {});

/**
 * What never changes of a hold: whose it is and whom it names. A hold remembered so (`status`
 * and `escrow_amount` absent) is not read before a release or refund: what it still holds is
 * for the workflow's step to check, which declines as the API would have.
 */
type HoldIdentity = Pick<TransactionRow, 'id' | 'application_id' | 'mode' | 'recipient_wallet_id'>;
type HoldFacts = HoldIdentity & Partial<Pick<TransactionRow, 'status' | 'escrow_amount'>>;

/** A step made, as the workflow answered it (or as found already made: its id alone). */
type StepDone = { transactionId: string; transaction?: TransactionRecord; answered?: true };

export function escrowRoutes(deps: ApiDeps): Route[] {
  const { pool, temporal, config } = deps;

  /** The holds this process has made or read (`HoldFacts`), by id. */
  const seen = new Map<string, HoldFacts>();
  const rememberHold = (row: HoldIdentity) => {
    const { id, application_id, mode, recipient_wallet_id } = row;
    remember(seen, id, { id, application_id, mode, recipient_wallet_id });
  };

  async function ownedHold(caller: Caller, id: string): Promise<TransactionRow> {
    const row = await findTransaction(pool, id);
    if (row && row.transaction_type !== 'escrow_hold') throw notFound('Escrow transaction');
    const owned = assertOwned(caller, row, 'Escrow transaction');
    rememberHold(owned);
    return owned;
  }

  /**
   * The hold a release or refund is for: as remembered when this process has seen it (one
   * round trip less), else read; either way the caller's, or 404 or 403 at once.
   */
  async function heldFacts(caller: Caller, id: string): Promise<HoldFacts> {
    const known = seen.get(id);
    return known ? assertOwned(caller, known, 'Escrow transaction') : ownedHold(caller, id);
  }

  /** Runs a release or refund update; the update id (from the Idempotency-Key) dedupes retries. */
  async function step(
    hold: HoldFacts,
    run: (handle: ReturnType<typeof temporal.workflow.getHandle>) => Promise<EscrowStepResult>,
  ) {
    const handle = temporal.workflow.getHandle(workflowIds.escrow(hold.id));
    try {
      return unlessDeclined(await withDeadline(run(handle), config.api.requestTimeoutMs));
    } catch (error) {
      if (error instanceof AppError) throw error;
      // The hold's workflow ended between our read and the update: nothing is held any more.
      const current = await findTransaction(pool, hold.id);
      if (current) refuseIfDeclined(heldRules, { subjects: { hold: current }, params: {} });
      throw error;
    }
  }

  /**
   * A retried release or refund (same Idempotency-Key, so same step id) arriving after the first
   * moved the money answers with that step, not the 400 the hold's new state gives a fresh request.
   * A key claimed fresh here (or none: a random id) names a step that cannot exist yet: no read.
   */
  async function unlessDone(
    stepId: string,
    idempotency: { fresh: boolean } | null,
    run: () => Promise<StepDone>,
  ): Promise<StepDone> {
    const done = { transactionId: stepId };
    if (idempotency && !idempotency.fresh && (await findTransaction(pool, stepId))) return done;
    try {
      return await run();
    } catch (error) {
      // Made all the same (by a racing retry, or before the update's answer was lost): answered.
      if (await findTransaction(pool, stepId)) return done;
      throw error;
    }
  }

  const idParams = z.object({ transaction_id: z.string() });

  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/escrow/hold',
      summary:
        'Hold funds in escrow: moves the amount from the sender’s wallet to the escrow account',
      tag: 'Escrow',
      auth: 'default',
      idempotent: true,
      body: HoldRequest,
      responses: {
        200: {
          description: 'The hold (transaction_type escrow_hold, status held)',
          schema: TransactionBody,
        },
        400: errorResponse('Insufficient funds, or wallets of different currencies'),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('A wallet is disabled or belongs to another application or mode'),
        404: errorResponse('Wallet not found'),
        422: errorResponse('Validation failure'),
      },
      handler: async ({ caller, body, idempotency, answerEarly }) => {
        const senderId = body.wallet_id;
        const recipientId = body.recipient_wallet_id ?? null;
        const holdId = idFromKey(caller, idempotency, 'escrow_hold');
        await answerEarly(
          holdId,
          holdRules,
          {
            wallets: { sender: senderId, recipient: recipientId },
            params: { walletId: senderId, recipientWalletId: recipientId, amount: body.amount },
          },
          deps.wallets,
        );
        const result = await startPaymentWithUpdate(deps, escrowWorkflow, {
          workflowId: workflowIds.escrow(holdId),
          args: [
            {
              holdId,
              applicationId: caller.applicationId,
              mode: caller.mode,
              walletId: senderId,
              amount: body.amount.toString(),
              description: body.description,
              recipientWalletId: recipientId,
              expiresAt: body.expires_at ? new Date(body.expires_at).toISOString() : null,
              ...(body.metadata && { metadata: body.metadata }),
              ...answerUnderKey(idempotency),
              localSteps: true,
            },
          ],
          caller,
          type: 'escrow_hold',
          walletIds: recipientId ? [senderId, recipientId] : [senderId],
          update: escrowUpdates.hold,
          // Money held is held: a rerun of the task finds the step made. A decline wrote
          // nothing and a rerun might hold: the `hold` update answers it, as the workflow records.
          answerLocally: (result) => result.status === 'done',
        });
        const made = unlessDeclined(result);
        if (made.transaction) rememberHold(made.transaction);
        return madeStepAnswer(pool, made);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/escrow/:transaction_id',
      summary: 'The escrow hold as it stands now',
      tag: 'Escrow',
      auth: 'default',
      params: idParams,
      responses: {
        200: { description: 'The hold', schema: TransactionBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('Another application’s or mode’s hold'),
        404: errorResponse('Escrow transaction not found'),
      },
      handler: async ({ caller, params }) => ({
        body: transactionBody(await ownedHold(caller, params.transaction_id)),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/escrow/:transaction_id/release',
      summary: 'Release held funds to a recipient, minus the escrow fee; may be partial',
      tag: 'Escrow',
      auth: 'default',
      idempotent: true,
      params: idParams,
      body: ReleaseRequest,
      responses: {
        200: {
          description: 'The release (escrow_release; amount is the net credited)',
          schema: TransactionBody,
        },
        400: errorResponse(
          'Not in held status, the amount exceeds what is held, or the recipient holds another currency',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The recipient wallet is disabled or another application’s'),
        404: errorResponse('Escrow transaction or recipient wallet not found'),
        422: errorResponse('Validation failure, for example an amount not greater than 0'),
      },
      handler: async ({ caller, params, body, idempotency, answerEarly }) => {
        const hold = await heldFacts(caller, params.transaction_id);
        const releaseId = idFromKey(caller, idempotency, `escrow_release:${hold.id}`);
        const done = await unlessDone(releaseId, idempotency, async () => {
          const recipientId = body.recipient_wallet_id ?? hold.recipient_wallet_id;
          // Without a recipient no update may start: a hold known only by its facts is read.
          const facts = recipientId ? hold : await ownedHold(caller, hold.id);
          await answerEarly(
            releaseId,
            releaseRules,
            {
              wallets: { recipient: recipientId },
              subjects: { hold: facts },
              params: { recipientWalletId: recipientId, amount: body.amount ?? null },
            },
            deps.wallets,
          );
          return step(hold, (handle) =>
            handle.executeUpdate(escrowUpdates.release, {
              updateId: releaseId,
              args: [
                {
                  releaseId,
                  recipientWalletId: recipientId!,
                  amount: body.amount?.toString() ?? null,
                  ...(body.metadata && { metadata: body.metadata }),
                  ...answerUnderKey(idempotency),
                },
              ],
            }),
          );
        });
        return madeStepAnswer(pool, done);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/escrow/:transaction_id/refund',
      summary: 'Refund all that is still held to the sender; no fee',
      tag: 'Escrow',
      auth: 'default',
      idempotent: true,
      params: idParams,
      body: EscrowRefundRequest,
      responses: {
        200: {
          description: 'The refund (escrow_refund; wallet_id is the sender)',
          schema: TransactionBody,
        },
        400: errorResponse('The hold no longer holds funds'),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('Another application’s or mode’s hold'),
        404: errorResponse('Escrow transaction not found'),
        422: errorResponse('Metadata breaking a limit'),
      },
      handler: async ({ caller, params, body, idempotency, answerEarly }) => {
        const hold = await heldFacts(caller, params.transaction_id);
        const refundId = idFromKey(caller, idempotency, `escrow_refund:${hold.id}`);
        const done = await unlessDone(refundId, idempotency, async () => {
          await answerEarly(refundId, refundRules, { wallets: {}, subjects: { hold } });
          return step(hold, (handle) =>
            handle.executeUpdate(escrowUpdates.refund, {
              updateId: refundId,
              args: [
                {
                  refundId,
                  reason: 'requested',
                  ...(body.metadata && { metadata: body.metadata }),
                  ...answerUnderKey(idempotency),
                },
              ],
            }),
          );
        });
        return madeStepAnswer(pool, done);
      },
    }),
  ];
}
