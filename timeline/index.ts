/**
 * A payment's timeline, read from its workflow's history: a pure function over the history
 * events (and, while the workflow runs, the pending activities of its description), so that it
 * can be tested on a recorded or hand-built history without a server.
 *
 * What each history event becomes (handlers.ts, one handler per event kind):
 * - WorkflowExecutionStarted: the step `start` (kind `workflow`); the close event (completed,
 *   failed, timed out, canceled, terminated, continued as new): the step `end`.
 * - An activity (scheduled, started, then completed, failed, timed out or canceled): one step
 *   named by its activity type. Temporal writes one started event per activity, for its last
 *   attempt, so `attempts` is that attempt's number and `failure` the last failure seen (of the
 *   final attempt when it failed, of the attempt before when a retry succeeded). While the
 *   workflow runs, Temporal reports the current attempt of an activity only in the workflow's
 *   description; pass its `pendingActivities` to see it. A local activity: one step, from its
 *   marker.
 * - An update (admitted or accepted, then completed or rejected): one step named by the update;
 *   an operator's resolution (`resolve`) also shows the operator and the reason it carries.
 * - A signal: one step named by the signal, completed when it was recorded.
 * - A timer: one step named `timer` and its duration as ISO 8601 (`timer PT30M5S`).
 * Workflow tasks, other markers and search attribute upserts are the engine's bookkeeping, not
 * steps.
 */
export { buildTimeline } from './build';
export { durationToIso, timestampToIso } from './convert';
export {
  PROVIDER_ACTIVITIES,
  STEP_KINDS,
  STEP_STATUSES,
  TimelineStep,
  WORKFLOW_STATUSES,
  type TimelineContext,
  type WorkflowTimeline,
} from './types';
