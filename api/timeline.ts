/**
 * A payment's timeline, read from its workflow's history: a pure function over the history
 * events (and, while the workflow runs, the pending activities of its description), so that it
 * can be tested on a recorded or hand-built history without a server.
 *
 * What each history event becomes:
 * - WorkflowExecutionStarted: the step `start` (kind `workflow`); the close event (completed,
 *   failed, timed out, canceled, terminated, continued as new): the step `end`.
 * - An activity (scheduled, started, then completed, failed, timed out or canceled): one step
 *   named by its activity type. Temporal writes one started event per activity, for its last
 *   attempt, so `attempts` is that attempt's number and `failure` the last failure seen (of the
 *   final attempt when it failed, of the attempt before when a retry succeeded). While the
 *   workflow runs, Temporal reports the current attempt of an activity only in the workflow's
 *   description; pass its `pendingActivities` to see it.
 * - An update (admitted or accepted, then completed or rejected): one step named by the update.
 * - A signal: one step named by the signal, completed when it was recorded.
 * - A timer: one step named `timer` and its duration as ISO 8601 (`timer PT30M5S`).
 * Workflow tasks, markers and search attribute upserts are the engine's bookkeeping, not steps.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal, type google } from '@temporalio/proto';
import { z } from 'zod';

const { PendingActivityState } = temporal.api.enums.v1;

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type PendingActivity = temporal.api.workflow.v1.IPendingActivityInfo;
type Timestamp = google.protobuf.ITimestamp;
type Duration = google.protobuf.IDuration;
type Payloads = temporal.api.common.v1.IPayloads;
type Failure = temporal.api.failure.v1.IFailure;
/** protobufjs gives 64-bit integers as `Long`; hand-built objects may use numbers or strings. */
type Int64 = { toString(): string } | number | string | null | undefined;

export const STEP_KINDS = ['workflow', 'activity', 'update', 'signal', 'timer'] as const;
export const STEP_STATUSES = [
  'scheduled',
  'running',
  'completed',
  'failed',
  'timed_out',
  'canceled',
  'terminated',
  'continued_as_new',
  'fired',
  'accepted',
  'rejected',
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

export const TimelineStep = z
  .object({
    name: z.string().meta({
      description:
        'Activity type (`openDeposit`), update or signal name (`notify`), `timer` and its ' +
        'ISO 8601 duration, or `start` and `end` for the workflow itself',
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
        'The message of the last failure: of a failed step, or of the attempt before a retry',
    }),
  })
  .meta({ id: 'TimelineStep' });
export type TimelineStep = z.infer<typeof TimelineStep>;

export type WorkflowTimeline = {
  workflow_type: string | null;
  workflow_status: (typeof WORKFLOW_STATUSES)[number] | null;
  started_at: string | null;
  ended_at: string | null;
  steps: TimelineStep[];
};

/** Activities that talk to a payment provider: they carry the transaction's provider reference. */
export const PROVIDER_ACTIVITIES: ReadonlySet<string> = new Set([
  'openDeposit',
  'checkPaymentCode',
]);

export type TimelineContext = {
  /** The transaction's provider reference, shown on provider activities that do not name one. */
  providerReference?: string | null;
  providerActivities?: ReadonlySet<string>;
  /** `describe().raw.pendingActivities` of a running workflow. */
  pendingActivities?: readonly PendingActivity[] | null;
};

const NANOS_PER_SECOND = 1_000_000_000n;

function int64(value: Int64): bigint {
  if (value === null || value === undefined) return 0n;
  return BigInt(typeof value === 'number' ? Math.trunc(value) : value.toString());
}

/**
 * A protobuf Timestamp as ISO 8601 UTC, exact: all nine digits of the nanoseconds, so the text
 * sorts as the times do. Seconds arrive as a 64-bit `Long`; they are converted through bigint.
 */
export function timestampToIso(ts: Timestamp | null | undefined): string | null {
  if (!ts) return null;
  const total = int64(ts.seconds) * NANOS_PER_SECOND + BigInt(ts.nanos ?? 0);
  let seconds = total / NANOS_PER_SECOND;
  let nanos = total % NANOS_PER_SECOND;
  if (nanos < 0n) {
    seconds -= 1n;
    nanos += NANOS_PER_SECOND;
  }
  const date = new Date(Number(seconds) * 1000);
  if (Number.isNaN(date.getTime())) return null;
  return `${date.toISOString().slice(0, -5)}.${nanos.toString().padStart(9, '0')}Z`;
}

/** A protobuf Duration as ISO 8601 (`PT30M5.25S`), in hours at most: days are not all 24 hours. */
export function durationToIso(d: Duration | null | undefined): string {
  const total = d ? int64(d.seconds) * NANOS_PER_SECOND + BigInt(d.nanos ?? 0) : 0n;
  if (total <= 0n) return 'PT0S';
  const wholeSeconds = total / NANOS_PER_SECOND;
  const nanos = total % NANOS_PER_SECOND;
  const hours = wholeSeconds / 3600n;
  const minutes = (wholeSeconds % 3600n) / 60n;
  const seconds = wholeSeconds % 60n;
  let text = 'PT';
  if (hours) text += `${hours}H`;
  if (minutes) text += `${minutes}M`;
  if (seconds || nanos) {
    const fraction = nanos ? `.${nanos.toString().padStart(9, '0').replace(/0+$/, '')}` : '';
    text += `${seconds}${fraction}S`;
  }
  return text;
}

/** The first payload (an activity's first argument, a result), decoded; null when it cannot be. */
function firstValue(payloads: Payloads | null | undefined): unknown {
  const payload = payloads?.payloads?.[0];
  if (!payload) return null;
  try {
    return defaultPayloadConverter.fromPayload(payload);
  } catch {
    return null;
  }
}

/** A payment code id in a value: `paymentCode.id` (a deposit opened) or `paymentCodeId`. */
function referenceIn(value: unknown): string | null {
  if (!value || typeof value !== 'object') return null;
  const record = value as { paymentCode?: { id?: unknown }; paymentCodeId?: unknown };
  if (typeof record.paymentCode?.id === 'string' && record.paymentCode.id) {
    return record.paymentCode.id;
  }
  if (typeof record.paymentCodeId === 'string' && record.paymentCodeId) {
    return record.paymentCodeId;
  }
  return null;
}

function failureMessage(failure: Failure | null | undefined): string | null {
  for (let f = failure; f; f = f.cause) {
    if (f.message) return f.message;
  }
  return null;
}

type Open = { step: TimelineStep; order: number };

/** The marker the SDK records for a local activity, and the parts of its data we show. */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';
type MarkerTime = { seconds?: number | string; nanos?: number } | string | null | undefined;
type LocalActivityMarker = {
  activity_type?: string;
  attempt?: number;
  original_schedule_time?: MarkerTime;
};

/** Marker times arrive as protobuf JSON: an RFC 3339 string, or seconds and nanos. */
function markerTime(value: MarkerTime): string | null {
  if (!value) return null;
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) return null;
    return timestampToIso({
      seconds: Math.floor(ms / 1000),
      nanos: (ms % 1000) * 1_000_000,
    } as unknown as Timestamp);
  }
  if (value.seconds === undefined) return null;
  return timestampToIso({
    seconds: String(value.seconds),
    nanos: value.nanos ?? 0,
  } as unknown as Timestamp);
}

/** Builds the timeline of one workflow run from its history events. */
export function buildTimeline(
  events: readonly HistoryEvent[],
  context: TimelineContext = {},
): WorkflowTimeline {
  const providerActivities = context.providerActivities ?? PROVIDER_ACTIVITIES;
  const steps: Open[] = [];
  const activities = new Map<string, Open & { activityId: string; input: unknown }>();
  const updates = new Map<string, Open>();
  const timers = new Map<string, Open>();
  let workflowType: string | null = null;
  let workflowStatus: WorkflowTimeline['workflow_status'] = null;
  let startedAt: string | null = null;
  let endedAt: string | null = null;

  const add = (order: number, step: Omit<TimelineStep, 'provider_reference' | 'failure'>) => {
    const open: Open = { order, step: { ...step, provider_reference: null, failure: null } };
    steps.push(open);
    return open;
  };
  const end = (
    status: (typeof WORKFLOW_STATUSES)[number],
    order: number,
    at: string,
    failure: string | null = null,
  ) => {
    workflowStatus = status;
    endedAt = at;
    add(order, {
      name: 'end',
      kind: 'workflow',
      status,
      attempts: 1,
      started_at: at,
      ended_at: at,
    }).step.failure = failure;
  };

  /** An activity's last event: its status, end time, and failure (the last one seen if none). */
  const endActivity = (
    scheduledEventId: Int64,
    status: TimelineStep['status'],
    at: string,
    failure: string | null = null,
  ) => {
    const open = activities.get(String(int64(scheduledEventId)));
    if (!open) return undefined;
    open.step.status = status;
    open.step.ended_at = at;
    open.step.failure = failure ?? open.step.failure;
    return open;
  };

  for (const event of events) {
    const order = Number(int64(event.eventId));
    const at = timestampToIso(event.eventTime) ?? '';

    if (event.workflowExecutionStartedEventAttributes) {
      const a = event.workflowExecutionStartedEventAttributes;
      workflowType = a.workflowType?.name ?? null;
      workflowStatus = 'running';
      startedAt = at;
      add(order, {
        name: 'start',
        kind: 'workflow',
        status: 'completed',
        attempts: a.attempt || 1,
        started_at: at,
        ended_at: at,
      });
    } else if (event.workflowExecutionCompletedEventAttributes) {
      end('completed', order, at);
    } else if (event.workflowExecutionFailedEventAttributes) {
      end(
        'failed',
        order,
        at,
        failureMessage(event.workflowExecutionFailedEventAttributes.failure),
      );
    } else if (event.workflowExecutionTimedOutEventAttributes) {
      end('timed_out', order, at);
    } else if (event.workflowExecutionCanceledEventAttributes) {
      end('canceled', order, at);
    } else if (event.workflowExecutionTerminatedEventAttributes) {
      end('terminated', order, at, event.workflowExecutionTerminatedEventAttributes.reason || null);
    } else if (event.workflowExecutionContinuedAsNewEventAttributes) {
      end('continued_as_new', order, at);
    } else if (event.activityTaskScheduledEventAttributes) {
      const a = event.activityTaskScheduledEventAttributes;
      const open = add(order, {
        name: a.activityType?.name ?? 'activity',
        kind: 'activity',
        status: 'scheduled',
        attempts: 1,
        started_at: at,
        ended_at: null,
      });
      activities.set(String(order), {
        ...open,
        activityId: a.activityId ?? '',
        input: firstValue(a.input),
      });
    } else if (event.activityTaskStartedEventAttributes) {
      const a = event.activityTaskStartedEventAttributes;
      const open = activities.get(String(int64(a.scheduledEventId)));
      if (open) {
        open.step.status = 'running';
        open.step.attempts = a.attempt || 1;
        open.step.failure = failureMessage(a.lastFailure);
      }
    } else if (event.activityTaskCompletedEventAttributes) {
      const a = event.activityTaskCompletedEventAttributes;
      const open = endActivity(a.scheduledEventId, 'completed', at);
      if (open) open.step.provider_reference = referenceIn(firstValue(a.result));
    } else if (event.activityTaskFailedEventAttributes) {
      const a = event.activityTaskFailedEventAttributes;
      endActivity(a.scheduledEventId, 'failed', at, failureMessage(a.failure));
    } else if (event.activityTaskTimedOutEventAttributes) {
      const a = event.activityTaskTimedOutEventAttributes;
      endActivity(a.scheduledEventId, 'timed_out', at, failureMessage(a.failure));
    } else if (event.activityTaskCanceledEventAttributes) {
      endActivity(event.activityTaskCanceledEventAttributes.scheduledEventId, 'canceled', at);
    } else if (event.markerRecordedEventAttributes?.markerName === LOCAL_ACTIVITY_MARKER) {
      // A local activity runs inside the workflow task; its marker records the whole step.
      const a = event.markerRecordedEventAttributes;
      const data = firstValue(a.details?.data) as LocalActivityMarker | null;
      const failed = Boolean(a.failure);
      const open = add(order, {
        name: data?.activity_type ?? 'local activity',
        kind: 'activity',
        status: failed ? 'failed' : 'completed',
        attempts: data?.attempt || 1,
        // Scheduled in workflow time; recorded when the workflow task completed (server time).
        // The marker's complete_time is the worker's clock, so it is not mixed in.
        started_at: markerTime(data?.original_schedule_time) ?? at,
        ended_at: at,
      });
      open.step.failure = failureMessage(a.failure);
      open.step.provider_reference = referenceIn(firstValue(a.details?.result));
    } else if (event.workflowExecutionUpdateAdmittedEventAttributes) {
      const request = event.workflowExecutionUpdateAdmittedEventAttributes.request;
      const id = request?.meta?.updateId ?? `admitted-${order}`;
      updates.set(
        id,
        add(order, {
          name: request?.input?.name ?? 'update',
          kind: 'update',
          status: 'scheduled',
          attempts: 1,
          started_at: at,
          ended_at: null,
        }),
      );
    } else if (event.workflowExecutionUpdateAcceptedEventAttributes) {
      const a = event.workflowExecutionUpdateAcceptedEventAttributes;
      const id = a.acceptedRequest?.meta?.updateId || a.protocolInstanceId || `accepted-${order}`;
      const admitted = updates.get(id);
      if (admitted) admitted.step.status = 'accepted';
      else {
        updates.set(
          id,
          add(order, {
            name: a.acceptedRequest?.input?.name ?? 'update',
            kind: 'update',
            status: 'accepted',
            attempts: 1,
            started_at: at,
            ended_at: null,
          }),
        );
      }
    } else if (event.workflowExecutionUpdateRejectedEventAttributes) {
      const a = event.workflowExecutionUpdateRejectedEventAttributes;
      const id = a.rejectedRequest?.meta?.updateId || a.protocolInstanceId || `rejected-${order}`;
      const open =
        updates.get(id) ??
        add(order, {
          name: a.rejectedRequest?.input?.name ?? 'update',
          kind: 'update',
          status: 'rejected',
          attempts: 1,
          started_at: at,
          ended_at: null,
        });
      open.step.status = 'rejected';
      open.step.ended_at = at;
      open.step.failure = failureMessage(a.failure);
    } else if (event.workflowExecutionUpdateCompletedEventAttributes) {
      const a = event.workflowExecutionUpdateCompletedEventAttributes;
      const open = updates.get(a.meta?.updateId ?? '');
      if (open) {
        open.step.ended_at = at;
        if (a.outcome?.failure) {
          open.step.status = 'failed';
          open.step.failure = failureMessage(a.outcome.failure);
        } else {
          open.step.status = 'completed';
          open.step.provider_reference = referenceIn(firstValue(a.outcome?.success));
        }
      }
    } else if (event.workflowExecutionSignaledEventAttributes) {
      add(order, {
        name: event.workflowExecutionSignaledEventAttributes.signalName || 'signal',
        kind: 'signal',
        status: 'completed',
        attempts: 1,
        started_at: at,
        ended_at: at,
      });
    } else if (event.timerStartedEventAttributes) {
      const a = event.timerStartedEventAttributes;
      timers.set(
        a.timerId ?? '',
        add(order, {
          name: `timer ${durationToIso(a.startToFireTimeout)}`,
          kind: 'timer',
          status: 'running',
          attempts: 1,
          started_at: at,
          ended_at: null,
        }),
      );
    } else if (event.timerFiredEventAttributes) {
      const open = timers.get(event.timerFiredEventAttributes.timerId ?? '');
      if (open) {
        open.step.status = 'fired';
        open.step.ended_at = at;
      }
    } else if (event.timerCanceledEventAttributes) {
      const open = timers.get(event.timerCanceledEventAttributes.timerId ?? '');
      if (open) {
        open.step.status = 'canceled';
        open.step.ended_at = at;
      }
    }
  }

  // A running activity's attempt, state and last failure are in the description, not the history.
  const pendingById = new Map((context.pendingActivities ?? []).map((p) => [p.activityId, p]));
  for (const activity of activities.values()) {
    const { step } = activity;
    const pending = step.ended_at === null ? pendingById.get(activity.activityId) : undefined;
    if (pending) {
      // Scheduled also while it waits to retry; paused counts as scheduled.
      step.status =
        pending.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED ||
        pending.state === PendingActivityState.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED
          ? 'running'
          : 'scheduled';
      step.attempts = pending.attempt || step.attempts;
      step.failure = failureMessage(pending.lastFailure) ?? step.failure;
    }
    step.provider_reference ??=
      referenceIn(activity.input) ??
      (providerActivities.has(step.name) ? (context.providerReference ?? null) : null);
  }

  steps.sort((a, b) => a.order - b.order);
  return {
    workflow_type: workflowType,
    workflow_status: workflowStatus,
    started_at: startedAt,
    ended_at: endedAt,
    steps: steps.map((s) => s.step),
  };
}
