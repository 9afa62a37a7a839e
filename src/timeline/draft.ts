/** The timeline while its history is read: the steps so far, and the ones later events end. */
import { int64 } from './convert';
import type { Int64, StepStatus, TimelineStep, WorkflowStatus, WorkflowTimeline } from './types';

/** Where an event stands in the history: its id (steps sort by it) and its time. */
export type EventPosition = { order: number; at: string };

export type OpenStep = { step: TimelineStep; order: number };
export type OpenActivity = OpenStep & { activityId: string; input: unknown };
type NewStep = Omit<TimelineStep, 'provider_reference' | 'failure'>;

export class TimelineDraft {
  workflowType: string | null = null;
  workflowStatus: WorkflowStatus | null = null;
  startedAt: string | null = null;
  endedAt: string | null = null;
  readonly steps: OpenStep[] = [];
  /** By the id of their scheduled event, which their later events name. */
  readonly activities = new Map<string, OpenActivity>();
  /** Local activities, each one marker: ended when recorded. */
  readonly localActivities: OpenStep[] = [];
  /** By update id. */
  readonly updates = new Map<string, OpenStep>();
  /** By timer id. */
  readonly timers = new Map<string, OpenStep>();

  add(order: number, step: NewStep): OpenStep {
    const open: OpenStep = { order, step: { ...step, provider_reference: null, failure: null } };
    this.steps.push(open);
    return open;
  }

  /** A step that began with this event and has not ended. */
  begin(event: EventPosition, name: string, kind: TimelineStep['kind'], status: StepStatus) {
    return this.add(event.order, {
      name,
      kind,
      status,
      attempts: 1,
      started_at: event.at,
      ended_at: null,
    });
  }

  /** The workflow's close event: its status, and the step `end`. */
  end(status: WorkflowStatus, event: EventPosition, failure: string | null = null): void {
    this.workflowStatus = status;
    this.endedAt = event.at;
    this.add(event.order, {
      name: 'end',
      kind: 'workflow',
      status,
      attempts: 1,
      started_at: event.at,
      ended_at: event.at,
    }).step.failure = failure;
  }

  activity(scheduledEventId: Int64): OpenActivity | undefined {
    return this.activities.get(String(int64(scheduledEventId)));
  }

  /** An activity's last event: its status, end time, and failure (the last one seen if none). */
  endActivity(
    scheduledEventId: Int64,
    status: StepStatus,
    at: string,
    failure: string | null = null,
  ): OpenActivity | undefined {
    const open = this.activity(scheduledEventId);
    if (!open) return undefined;
    open.step.status = status;
    open.step.ended_at = at;
    open.step.failure = failure ?? open.step.failure;
    return open;
  }

  endTimer(timerId: string | null | undefined, status: StepStatus, at: string): void {
    const open = this.timers.get(timerId ?? '');
    if (!open) return;
    open.step.status = status;
    open.step.ended_at = at;
  }

  /** The steps in the order they began. */
  result(): WorkflowTimeline {
    const steps = [...this.steps].sort((a, b) => a.order - b.order);
    return {
      workflow_type: this.workflowType,
      workflow_status: this.workflowStatus,
      started_at: this.startedAt,
      ended_at: this.endedAt,
      steps: steps.map((s) => s.step),
    };
  }
}
