/**
 * What each history event kind does to the timeline, keyed by its attributes field
 * (`activityTaskScheduledEventAttributes`, ...). Kinds not in the table (workflow tasks, search
 * attribute upserts, other markers) are the engine's bookkeeping, not steps.
 */
import {
  durationToIso,
  failureMessage,
  firstValue,
  markerTimeToIso,
  referenceIn,
  type MarkerTime,
} from './convert';
import type { EventPosition, TimelineDraft } from './draft';
import type { HistoryEvent, TimelineStep } from './types';

/** The history event's attribute fields, one per event kind (a protobuf oneof). */
export type EventKind = {
  [K in keyof HistoryEvent]-?: K extends `${string}EventAttributes` ? K : never;
}[keyof HistoryEvent];

type Handler<K extends EventKind> = (
  draft: TimelineDraft,
  attributes: NonNullable<HistoryEvent[K]>,
  event: EventPosition,
) => void;

export type EventHandlers = { [K in EventKind]?: Handler<K> };

/** The marker the SDK records for a local activity, and the parts of its data we show. */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';
type LocalActivityMarker = {
  activity_type?: string;
  attempt?: number;
  original_schedule_time?: MarkerTime;
};

/**
 * An update whose argument names an operator and a reason (an operator's resolution,
 * src/workflows/resolution.ts) shows both on its step: they are what the history keeps of who
 * ended the payment and why.
 */
function showResolution(step: TimelineStep, argument: unknown): void {
  const { operator, reason, force } = (argument ?? {}) as {
    operator?: unknown;
    reason?: unknown;
    force?: unknown;
  };
  if (typeof operator === 'string' && typeof reason === 'string') {
    step.operator = operator;
    step.reason = reason;
    step.force = force === true;
  }
}

export const EVENT_HANDLERS: EventHandlers = {
  workflowExecutionStartedEventAttributes: (draft, a, { order, at }) => {
    draft.workflowType = a.workflowType?.name ?? null;
    draft.workflowStatus = 'running';
    draft.startedAt = at;
    draft.add(order, {
      name: 'start',
      kind: 'workflow',
      status: 'completed',
      attempts: a.attempt || 1,
      started_at: at,
      ended_at: at,
    });
  },
  workflowExecutionCompletedEventAttributes: (draft, _a, event) => draft.end('completed', event),
  workflowExecutionFailedEventAttributes: (draft, a, event) =>
    draft.end('failed', event, failureMessage(a.failure)),
  workflowExecutionTimedOutEventAttributes: (draft, _a, event) => draft.end('timed_out', event),
  workflowExecutionCanceledEventAttributes: (draft, _a, event) => draft.end('canceled', event),
  workflowExecutionTerminatedEventAttributes: (draft, a, event) =>
    draft.end('terminated', event, a.reason || null),
  workflowExecutionContinuedAsNewEventAttributes: (draft, _a, event) =>
    draft.end('continued_as_new', event),

  activityTaskScheduledEventAttributes: (draft, a, event) => {
    const open = draft.begin(event, a.activityType?.name ?? 'activity', 'activity', 'scheduled');
    draft.activities.set(String(event.order), {
      ...open,
      activityId: a.activityId ?? '',
      input: firstValue(a.input),
    });
  },
  // Temporal writes one started event per activity, for its last attempt.
  activityTaskStartedEventAttributes: (draft, a) => {
    const open = draft.activity(a.scheduledEventId);
    if (!open) return;
    open.step.status = 'running';
    open.step.attempts = a.attempt || 1;
    open.step.failure = failureMessage(a.lastFailure);
  },
  activityTaskCompletedEventAttributes: (draft, a, { at }) => {
    const open = draft.endActivity(a.scheduledEventId, 'completed', at);
    if (open) open.step.provider_reference = referenceIn(firstValue(a.result));
  },
  activityTaskFailedEventAttributes: (draft, a, { at }) => {
    draft.endActivity(a.scheduledEventId, 'failed', at, failureMessage(a.failure));
  },
  activityTaskTimedOutEventAttributes: (draft, a, { at }) => {
    draft.endActivity(a.scheduledEventId, 'timed_out', at, failureMessage(a.failure));
  },
  activityTaskCanceledEventAttributes: (draft, a, { at }) => {
    draft.endActivity(a.scheduledEventId, 'canceled', at);
  },

  // A local activity runs inside the workflow task; its marker records the whole step.
  markerRecordedEventAttributes: (draft, a, { order, at }) => {
    if (a.markerName !== LOCAL_ACTIVITY_MARKER) return;
    const data = firstValue(a.details?.data) as LocalActivityMarker | null;
    const open = draft.add(order, {
      name: data?.activity_type ?? 'local activity',
      kind: 'activity',
      status: a.failure ? 'failed' : 'completed',
      attempts: data?.attempt || 1,
      // Scheduled in workflow time; recorded when the workflow task completed (server time).
      // The marker's complete_time is the worker's clock, so it is not mixed in.
      started_at: markerTimeToIso(data?.original_schedule_time) ?? at,
      ended_at: at,
    });
    open.step.failure = failureMessage(a.failure);
    open.step.provider_reference = referenceIn(firstValue(a.details?.result));
    draft.localActivities.push(open);
  },

  // An update is admitted (not always written) or accepted, then completed or rejected.
  workflowExecutionUpdateAdmittedEventAttributes: (draft, { request }, event) => {
    const id = request?.meta?.updateId ?? `admitted-${event.order}`;
    const name = request?.input?.name ?? 'update';
    const open = draft.begin(event, name, 'update', 'scheduled');
    showResolution(open.step, firstValue(request?.input?.args));
    draft.updates.set(id, open);
  },
  workflowExecutionUpdateAcceptedEventAttributes: (draft, a, event) => {
    const request = a.acceptedRequest;
    const id = request?.meta?.updateId || a.protocolInstanceId || `accepted-${event.order}`;
    const admitted = draft.updates.get(id);
    if (admitted) admitted.step.status = 'accepted';
    else {
      const name = request?.input?.name ?? 'update';
      const open = draft.begin(event, name, 'update', 'accepted');
      showResolution(open.step, firstValue(request?.input?.args));
      draft.updates.set(id, open);
    }
  },
  workflowExecutionUpdateRejectedEventAttributes: (draft, a, event) => {
    const request = a.rejectedRequest;
    const id = request?.meta?.updateId || a.protocolInstanceId || `rejected-${event.order}`;
    const open =
      draft.updates.get(id) ??
      draft.begin(event, request?.input?.name ?? 'update', 'update', 'rejected');
    open.step.status = 'rejected';
    open.step.ended_at = event.at;
    open.step.failure = failureMessage(a.failure);
  },
  workflowExecutionUpdateCompletedEventAttributes: (draft, a, { at }) => {
    const open = draft.updates.get(a.meta?.updateId ?? '');
    if (!open) return;
    open.step.ended_at = at;
    if (a.outcome?.failure) {
      open.step.status = 'failed';
      open.step.failure = failureMessage(a.outcome.failure);
    } else {
      open.step.status = 'completed';
      open.step.provider_reference = referenceIn(firstValue(a.outcome?.success));
    }
  },

  workflowExecutionSignaledEventAttributes: (draft, a, { order, at }) => {
    draft.add(order, {
      name: a.signalName || 'signal',
      kind: 'signal',
      status: 'completed',
      attempts: 1,
      started_at: at,
      ended_at: at,
    });
  },

  timerStartedEventAttributes: (draft, a, event) => {
    const name = `timer ${durationToIso(a.startToFireTimeout)}`;
    draft.timers.set(a.timerId ?? '', draft.begin(event, name, 'timer', 'running'));
  },
  timerFiredEventAttributes: (draft, a, { at }) => draft.endTimer(a.timerId, 'fired', at),
  timerCanceledEventAttributes: (draft, a, { at }) => draft.endTimer(a.timerId, 'canceled', at),
};
