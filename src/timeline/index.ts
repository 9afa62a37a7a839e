/**
 * A payment's timeline as a pure function of its workflow's history (plus, while it runs, the
 * description's pending activities: only there does Temporal report a current attempt), so it is
 * tested on recorded histories without a server. See docs/api.md, The payment timeline.
 */
export { buildTimeline } from './build';
export { durationToIso, timestampToIso } from './convert';
export { reconciliationSteps, type ReconExceptionStep } from './reconciliation';
export {
  PROVIDER_ACTIVITIES,
  STEP_KINDS,
  STEP_STATUSES,
  TimelineStep,
  WORKFLOW_STATUSES,
  type TimelineContext,
  type WorkflowTimeline,
} from './types';
