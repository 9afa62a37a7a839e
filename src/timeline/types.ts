/** The shape of a payment's timeline (the API's `TimelineStep`) and of what it is built from. */
import type { google, temporal } from '@temporalio/proto';
import { z } from 'zod';

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
export type PendingActivity = temporal.api.workflow.v1.IPendingActivityInfo;
export type Timestamp = google.protobuf.ITimestamp;
export type Duration = google.protobuf.IDuration;
export type Payloads = temporal.api.common.v1.IPayloads;
export type Failure = temporal.api.failure.v1.IFailure;
/** protobufjs gives 64-bit integers as `Long`; hand-built objects may use numbers or strings. */
export type Int64 = { toString(): string } | number | string | null | undefined;

export const STEP_KINDS = [
  'workflow',
  'activity',
  'update',
  'signal',
  'timer',
  'reconciliation',
] as const;
export const WORKFLOW_STATUSES = [
  'running',
  'completed',
  'failed',
  'timed_out',
  'canceled',
  'terminated',
  'continued_as_new',
] as const;
/** A workflow's statuses are its `end` step's; the order is the one the OpenAPI enum lists. */
export const STEP_STATUSES = [
  'scheduled',
  ...WORKFLOW_STATUSES,
  'fired',
  'accepted',
  'rejected',
] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];

export const TimelineStep = z
  .object({
    name: z.string().meta({
      description:
        'Activity type (`openDeposit`), update or signal name (`notify`), `timer` and its ' +
        'ISO 8601 duration, `start` and `end` for the workflow itself, or a reconciliation ' +
        'exception’s kind (`amount_mismatch`)',
    }),
    kind: z.enum(STEP_KINDS),
    status: z.enum(STEP_STATUSES).meta({
      description:
        'scheduled or running (not finished), completed, failed, timed_out, canceled; ' +
        'terminated and continued_as_new (the workflow’s end); fired (a timer); ' +
        'accepted (an update still running) or rejected (an update refused)',
    }),
    attempts: z.number().int().meta({
      description: 'Activities: the number of the last (or current) attempt; otherwise 1',
    }),
    started_at: z.string().meta({
      description:
        'When the step began (an activity: when the workflow scheduled it); ISO 8601 UTC to the nanosecond',
    }),
    ended_at: z.string().nullable().meta({ description: 'Null while the step has not ended' }),
    provider_reference: z.string().nullable().meta({
      description: 'The payment provider’s reference (payment code id) the step worked with',
    }),
    failure: z.string().nullable().meta({
      description:
        'The last failure, of a failed step or of the attempt before a retry: a decline’s detail as the API answers it, any other failure `Internal error`',
    }),
    operator: z.string().optional().meta({
      description:
        'An operator’s resolution (the update `resolve`) or a reconciliation exception’s: who resolved it; absent on other steps',
    }),
    reason: z.string().optional().meta({
      description:
        'An operator’s resolution: the reason the operator gave (a reconciliation exception’s: its note); absent on other steps',
    }),
    resolution: z.enum(['accept', 'adjust']).optional().meta({
      description:
        'A reconciliation exception’s resolution, once resolved (docs/api.md, Reconciliation); absent on other steps',
    }),
    force: z.boolean().optional().meta({
      description:
        'An operator’s resolution: whether the operator asked to settle without the provider’s answer (docs/api.md, Resolve a stuck payment); absent on other steps',
    }),
  })
  .meta({ id: 'TimelineStep' });
export type TimelineStep = z.infer<typeof TimelineStep>;
export type StepStatus = TimelineStep['status'];

export type WorkflowTimeline = {
  workflow_type: string | null;
  workflow_status: WorkflowStatus | null;
  started_at: string | null;
  ended_at: string | null;
  steps: TimelineStep[];
};

/** Activities that talk to a payment provider: they carry the transaction's provider reference. */
export const PROVIDER_ACTIVITIES: ReadonlySet<string> = new Set([
  'openDeposit',
  'checkPaymentCode',
  'openCardDeposit',
  'checkCardPayment',
  'sendMoneyOut',
  'checkMoneyOut',
]);

export type TimelineContext = {
  /** The transaction's provider reference, shown on provider activities that do not name one. */
  providerReference?: string | null;
  providerActivities?: ReadonlySet<string>;
  /** `describe().raw.pendingActivities` of a running workflow. */
  pendingActivities?: readonly PendingActivity[] | null;
};
