import { temporal } from '@temporalio/proto';
import { failureMessage, int64, referenceIn, timestampToIso } from './convert';
import { TimelineDraft, type EventPosition, type OpenActivity } from './draft';
import { EVENT_HANDLERS, type EventKind } from './handlers';
import {
  PROVIDER_ACTIVITIES,
  type HistoryEvent,
  type PendingActivity,
  type TimelineContext,
  type WorkflowTimeline,
} from './types';

const { PendingActivityState } = temporal.api.enums.v1;

type AnyHandler = (draft: TimelineDraft, attributes: never, event: EventPosition) => void;
const HANDLERS = Object.entries(EVENT_HANDLERS) as [EventKind, AnyHandler][];

/** Builds the timeline of one workflow run from its history events. */
export function buildTimeline(
  events: readonly HistoryEvent[],
  context: TimelineContext = {},
): WorkflowTimeline {
  const draft = new TimelineDraft();
  for (const event of events) {
    const position = {
      order: Number(int64(event.eventId)),
      at: timestampToIso(event.eventTime) ?? '',
    };
    // An event carries one attributes field, its kind's.
    for (const [kind, handle] of HANDLERS) {
      const attributes = event[kind];
      if (attributes) {
        handle(draft, attributes as never, position);
        break;
      }
    }
  }
  const pendingById = new Map((context.pendingActivities ?? []).map((p) => [p.activityId, p]));
  const providerActivities = context.providerActivities ?? PROVIDER_ACTIVITIES;
  const transactionReference = (name: string) =>
    providerActivities.has(name) ? (context.providerReference ?? null) : null;
  for (const activity of draft.activities.values()) {
    const pending =
      activity.step.ended_at === null ? pendingById.get(activity.activityId) : undefined;
    if (pending) applyPending(activity, pending);
    activity.step.provider_reference ??=
      referenceIn(activity.input) ?? transactionReference(activity.step.name);
  }
  // A local activity's marker keeps its result but not its input.
  for (const { step } of draft.localActivities) {
    step.provider_reference ??= transactionReference(step.name);
  }
  return draft.result();
}

/**
 * A running activity's attempt, state and last failure are in the workflow's description, not
 * the history.
 */
function applyPending({ step }: OpenActivity, pending: PendingActivity): void {
  // Scheduled also while it waits to retry; paused counts as scheduled.
  step.status =
    pending.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED ||
    pending.state === PendingActivityState.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED
      ? 'running'
      : 'scheduled';
  step.attempts = pending.attempt || step.attempts;
  step.failure = failureMessage(pending.lastFailure) ?? step.failure;
}
