/**
 * The server's deterministic work in one payment's workflow history: its events, workflow and
 * activity tasks, markers, search-attribute upserts and payload bytes (docs/benchmarks.md "Cost
 * per payment"). Counts do not drift with the machine, as the CPU figures do.
 */
import { temporal } from '@temporalio/proto';

type Event = temporal.api.history.v1.IHistoryEvent;

export type HistoryCounts = {
  events: number;
  workflowTasks: number;
  activityTasks: number;
  localActivities: number;
  patches: number;
  upserts: number;
  /** The search attributes the upserts set, in order. */
  upserted: string[];
  updates: number;
  /** The data and metadata of every payload in the history. */
  payloadBytes: number;
  /** The history as the server stores it, protobuf-encoded. */
  historyBytes: number;
};

const { EventType } = temporal.api.enums.v1;

function payloadBytes(value: unknown, seen = new Set<unknown>()): number {
  if (!value || typeof value !== 'object' || seen.has(value)) return 0;
  seen.add(value);
  if (value instanceof Uint8Array) return 0;
  const record = value as Record<string, unknown>;
  if (record.data instanceof Uint8Array && record.metadata && typeof record.metadata === 'object') {
    const metadata = Object.values(record.metadata as Record<string, unknown>);
    return (
      record.data.length +
      metadata.reduce<number>((n, v) => n + (v instanceof Uint8Array ? v.length : 0), 0)
    );
  }
  return Object.values(record).reduce<number>((n, v) => n + payloadBytes(v, seen), 0);
}

export function historyCounts(events: readonly Event[]): HistoryCounts {
  const of = (type: temporal.api.enums.v1.EventType) => events.filter((e) => e.eventType === type);
  const markers = of(EventType.EVENT_TYPE_MARKER_RECORDED).map(
    (e) => e.markerRecordedEventAttributes?.markerName,
  );
  const upserts = of(EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES);
  return {
    events: events.length,
    workflowTasks: of(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED).length,
    activityTasks: of(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED).length,
    localActivities: markers.filter((m) => m === 'core_local_activity').length,
    patches: markers.filter((m) => m === 'core_patch').length,
    upserts: upserts.length,
    upserted: upserts.flatMap((e) =>
      Object.keys(
        e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {},
      ),
    ),
    updates: of(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED).length,
    payloadBytes: events.reduce((n, e) => n + payloadBytes(e), 0),
    historyBytes: temporal.api.history.v1.History.encode({ events: [...events] }).finish().length,
  };
}
