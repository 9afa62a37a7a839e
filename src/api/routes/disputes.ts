import { z } from 'zod';
import { depositFacts, readCardCase } from '../../db/card-cases';
import { disputeAnswer, disputeFromRecord, findDispute, listDisputes } from '../../db/disputes';
import { disputeOpenRules } from '../../domain/money-rules';
import type { Caller } from '../../domain/types';
import {
  closeDispute,
  openDispute,
  submitDisputeEvidence,
  type DisputeDeps,
} from '../../intake/disputes';
import { MAX_EVIDENCE_CHARS } from '../../workflows/dispute-shared';
import { assertOwned } from '../access';
import { auditEntry } from '../audit';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse, unlessDeclined } from '../errors';
import { idFromKey } from '../pipeline';
import { defineRoute, type Route } from '../route';
import {
  BodyId,
  Metadata,
  PageQuery,
  PositiveAmount,
  pageEnvelope,
  pageWindow,
  toPage,
  uuidPattern,
} from '../schemas';
import { DisputeBody } from '../serializers';
import { withDeadline } from '../workflow-starts';

const STATUSES = ['needs_response', 'under_review', 'won', 'lost'] as const;

const ListQuery = PageQuery.extend({
  status: z.enum(STATUSES, { error: `must be one of ${STATUSES.join(', ')}` }).optional(),
  transaction_id: z
    .string({ error: 'must be a transaction id' })
    .regex(uuidPattern, 'must be a transaction id (a UUID)')
    .transform((v) => v.toLowerCase())
    .optional()
    .meta({ description: 'Disputes of this card deposit' }),
});

const DisputeParams = z.object({ dispute_id: z.string() });

const EvidenceRequest = z.object({
  text: z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .max(MAX_EVIDENCE_CHARS, `must be at most ${MAX_EVIDENCE_CHARS} characters`)
    .meta({ description: 'The evidence, sent to the card provider as the dispute’s evidence' }),
});

const SimulateDisputeRequest = z.object({
  transaction_id: BodyId.meta({ description: 'A completed card deposit' }),
  amount: PositiveAmount.optional().meta({
    description: 'The disputed amount; default all of the deposit not refunded or disputed',
  }),
  reason: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .meta({ description: 'The payer’s reason, as a card network names it; default `general`' }),
  metadata: Metadata.optional(),
});

const SimulateOutcomeRequest = z.object({
  dispute_id: BodyId,
  status: z.enum(['won', 'lost'], { error: 'must be won or lost' }),
});

export function disputeRoutes(deps: ApiDeps): Route[] {
  const { pool } = deps;
  const intake: DisputeDeps = {
    pool,
    temporal: deps.temporal,
    taskQueue: deps.config.temporal.taskQueue,
    timeoutMs: deps.config.api.requestTimeoutMs,
    timeoutError: () => new AppError('timeout'),
  };
  /** 404 for an id that names nothing (a UUID or not), 403 for another application's. */
  const owned = async (caller: Caller, id: string) => {
    const lowered = id.toLowerCase();
    const row = uuidPattern.test(lowered) ? await findDispute(pool, lowered) : null;
    return assertOwned(caller, row, 'Dispute');
  };
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/disputes',
      summary:
        'List disputes of the application and mode, newest first (page envelope); filter by ' +
        'status and transaction_id (the disputed card deposit)',
      tag: 'Disputes',
      auth: 'default',
      query: ListQuery,
      responses: {
        200: { description: 'A page of disputes', schema: pageEnvelope(DisputeBody) },
        401: errorResponse('Missing or invalid credentials'),
        422: errorResponse('Invalid paging or filter'),
      },
      handler: async ({ caller, query }) => {
        const { rows, total } = await listDisputes(
          pool,
          caller,
          { status: query.status, transaction_id: query.transaction_id },
          pageWindow(query),
        );
        return { body: toPage(rows.map(disputeAnswer), total, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/disputes/:dispute_id',
      summary: 'Get a dispute',
      tag: 'Disputes',
      auth: 'default',
      params: DisputeParams,
      responses: {
        200: { description: 'The dispute', schema: DisputeBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The dispute belongs to another application or mode'),
        404: errorResponse('Dispute not found'),
      },
      handler: async ({ caller, params }) => ({
        body: disputeAnswer(await owned(caller, params.dispute_id)),
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/disputes/:dispute_id/evidence',
      summary:
        'Send the dispute’s evidence text to the card provider (Stripe: the dispute’s evidence, ' +
        'submitted); the dispute is then `under_review`',
      tag: 'Disputes',
      auth: 'default',
      params: DisputeParams,
      body: EvidenceRequest,
      responses: {
        200: { description: 'The dispute, now under review', schema: DisputeBody },
        400: errorResponse(
          'The dispute is closed, its evidence is past due, or the provider refused it',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The dispute belongs to another application or mode'),
        404: errorResponse('Dispute not found'),
        422: errorResponse('Validation failure: text must be 1 to 20,000 characters'),
      },
      handler: async ({ ctx, caller, params, body }) => {
        const dispute = await owned(caller, params.dispute_id);
        const audit = await auditEntry(pool, ctx, caller, {
          action: 'dispute.evidence_submitted',
          target: { type: 'dispute', id: dispute.id },
          details: { transaction_id: dispute.transaction_id, characters: body.text.length },
        });
        const evidence = { text: body.text, audit };
        unlessDeclined(wrapStatus(await submitDisputeEvidence(intake, dispute, evidence)));
        return { body: disputeAnswer((await findDispute(pool, dispute.id))!) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/testing/simulate-dispute',
      summary:
        'Test Mode only: the payer disputes a completed card deposit. The disputed amount ' +
        'moves from the wallet to the dispute reserve (what the wallet lacks is recorded as ' +
        '`uncovered_amount`); evidence is due in 7 days, else the dispute is lost',
      tag: 'Testing',
      auth: 'default',
      testModeOnly: true,
      idempotent: true,
      body: SimulateDisputeRequest,
      responses: {
        200: { description: 'The dispute, opened', schema: DisputeBody },
        400: errorResponse(
          'Not a completed card deposit, or more than is left of it to dispute (refunded or disputed)',
        ),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('Live Mode credentials used, or another application’s transaction'),
        404: errorResponse('Transaction not found'),
        422: errorResponse('Validation failure'),
      },
      handler: async ({ caller, body, idempotency, answerEarly }) => {
        const disputeId = idFromKey(caller, idempotency, 'dispute');
        const id = body.transaction_id.toLowerCase();
        const facts = uuidPattern.test(id) ? await readCardCase(pool, id) : null;
        const amount = body.amount ?? null;
        // What the deposit shows now; the workflow decides again under the deposit's lock.
        await answerEarly(disputeId, disputeOpenRules, {
          wallets: {},
          subjects: { deposit: facts && depositFacts(facts) },
          params: { amount, byProvider: false },
        });
        // As every payment start: Temporal lost once the start went out is a 504, not a 503.
        const opening = openDispute(intake, {
          applicationId: caller.applicationId,
          mode: caller.mode,
          transactionId: id,
          amount,
          reason: body.reason ?? 'general',
          providerDisputeId: null,
          evidenceDueBy: null,
          ...(body.metadata && { metadata: body.metadata }),
          ...(idempotency && { disputeId }),
        });
        const opened = unlessDeclined(await withDeadline(opening, intake.timeoutMs));
        return { body: disputeAnswer(disputeFromRecord(opened.dispute)) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/testing/simulate-dispute-outcome',
      summary:
        'Test Mode only: the provider decides a dispute. Won: the reserve goes back to the ' +
        'wallet (a `dispute_release` record); lost: it goes to the provider. A closed dispute ' +
        'stays as it is',
      tag: 'Testing',
      auth: 'default',
      testModeOnly: true,
      body: SimulateOutcomeRequest,
      responses: {
        200: { description: 'The dispute, closed', schema: DisputeBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('Live Mode credentials used, or another application’s dispute'),
        404: errorResponse('Dispute not found'),
        422: errorResponse('Validation failure: status must be won or lost'),
      },
      handler: async ({ caller, body }) => {
        const dispute = await owned(caller, body.dispute_id);
        const closed = await closeDispute(intake, { disputeId: dispute.id, status: body.status });
        return { body: disputeAnswer(closed ?? dispute) };
      },
    }),
  ];
}

/** A workflow's status answer, or its decline, as `unlessDeclined` reads them. */
function wrapStatus<T extends string>(
  answer: T | { status: 'declined' },
): { status: string } | { status: 'declined' } {
  return typeof answer === 'string' ? { status: answer } : answer;
}
