import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import {
  buildTimeline,
  durationToIso,
  timestampToIso,
  TimelineStep,
  type TimelineContext,
} from '../../src/timeline';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import recorded from './fixtures/deposit-history.json';
import { historyFromJSON } from '../support/history-json';

type EventObject = Record<string, unknown>;

/** Events as the client gives them: decoded protobuf messages with `Long` ids and times. */
function history(...events: EventObject[]): temporal.api.history.v1.IHistoryEvent[] {
  return events.map((e, i) =>
    temporal.api.history.v1.HistoryEvent.fromObject({ eventId: String(i + 1), ...e }),
  );
}

const T0 = 1_800_000_000; // 2027-01-15T08:00:00Z
const at = (seconds: number, nanos = 0) => ({
  eventTime: { seconds: String(T0 + seconds), nanos },
});
const iso = (seconds: number, nanos = 0) =>
  `${new Date((T0 + seconds) * 1000).toISOString().slice(0, -5)}.${String(nanos).padStart(9, '0')}Z`;
const payloads = (...values: unknown[]) => ({
  payloads: values.map((v) => defaultPayloadConverter.toPayload(v)),
});

const started = (seconds: number, type = 'mobileMoneyDepositWorkflow') => ({
  ...at(seconds),
  workflowExecutionStartedEventAttributes: { workflowType: { name: type }, attempt: 1 },
});
const workflowTask = (seconds: number) => ({
  ...at(seconds),
  workflowTaskCompletedEventAttributes: { scheduledEventId: '1' },
});

function timeline(events: EventObject[], context?: TimelineContext) {
  const result = buildTimeline(history(...events), context);
  for (const step of result.steps) TimelineStep.parse(step);
  return result;
}

describe('timestampToIso', () => {
  it('converts a protobuf Timestamp exactly, to the nanosecond, in UTC with Z', () => {
    const [event] = history({ eventTime: { seconds: '1795271324', nanos: 540003274 } });
    expect(timestampToIso(event!.eventTime)).toBe('2026-11-21T14:28:44.540003274Z');
    expect(timestampToIso({ seconds: 0, nanos: 1 } as never)).toBe(
      '1970-01-01T00:00:00.000000001Z',
    );
    expect(timestampToIso({ seconds: '253402300799', nanos: 999999999 } as never)).toBe(
      '9999-12-31T23:59:59.999999999Z',
    );
    expect(timestampToIso({ seconds: '1700000000' } as never)).toBe(
      '2023-11-14T22:13:20.000000000Z',
    );
    expect(timestampToIso(null)).toBeNull();
    // The text sorts as the times do, and parses as the same millisecond.
    expect(Date.parse('2026-11-21T14:28:44.540003274Z')).toBe(
      Date.UTC(2026, 10, 21, 14, 28, 44, 540),
    );
  });
});

describe('durationToIso', () => {
  it('writes protobuf Durations as ISO 8601 durations in hours, minutes and seconds', () => {
    expect(durationToIso({ seconds: '1804', nanos: 991000000 } as never)).toBe('PT30M4.991S');
    expect(durationToIso({ seconds: '30' } as never)).toBe('PT30S');
    expect(durationToIso({ nanos: 200000000 })).toBe('PT0.2S');
    expect(durationToIso({ seconds: '90061' } as never)).toBe('PT25H1M1S');
    expect(durationToIso({ seconds: '7200' } as never)).toBe('PT2H');
    expect(durationToIso(null)).toBe('PT0S');
  });
});

describe('buildTimeline on a recorded mobile-money deposit history', () => {
  const events = temporal.api.history.v1.History.fromObject(recorded).events;

  it('shows start, the open update, openDeposit with the payment code, the expiry timer, notify, completeDeposit and the end', () => {
    const result = buildTimeline(events, { providerReference: 'pmc_from_the_row' });
    expect(result).toMatchObject({
      workflow_type: 'mobileMoneyDepositWorkflow',
      workflow_status: 'completed',
      started_at: '2026-11-21T14:28:44.540003274Z',
    });
    expect(result.ended_at).toBe(result.steps.at(-1)!.ended_at);
    expect(result.steps.map((s) => [s.name, s.kind, s.status, s.attempts])).toEqual([
      ['start', 'workflow', 'completed', 1],
      ['open', 'update', 'completed', 1],
      ['openDeposit', 'activity', 'completed', 1],
      ['timer PT30M4.991S', 'timer', 'canceled', 1],
      ['notify', 'update', 'completed', 1],
      ['completeDeposit', 'activity', 'completed', 1],
      ['end', 'workflow', 'completed', 1],
    ]);
    const byName = Object.fromEntries(result.steps.map((s) => [s.name, s]));
    // From the activity's result (and the update's), not the row: the code the provider made.
    expect(byName.openDeposit!.provider_reference).toBe('pmc_3072e3a514d0043ab095e1a5');
    expect(byName.open!.provider_reference).toBe('pmc_3072e3a514d0043ab095e1a5');
    expect(byName.completeDeposit!.provider_reference).toBeNull();
    expect(result.steps.every((s) => s.failure === null)).toBe(true);
    for (const step of result.steps) {
      TimelineStep.parse(step);
      expect(step.started_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
      if (step.ended_at) expect(step.ended_at >= step.started_at).toBe(true);
    }
    // Steps are in the order they began.
    const starts = result.steps.map((s) => s.started_at);
    expect([...starts].sort()).toEqual(starts);
  });

  it('shows a running workflow while its history is still open', () => {
    const open = events.slice(0, 13); // up to the open update's completion
    const result = buildTimeline(open);
    expect(result.workflow_status).toBe('running');
    expect(result.ended_at).toBeNull();
    expect(result.steps.map((s) => [s.name, s.status, s.ended_at === null])).toEqual([
      ['start', 'completed', false],
      ['open', 'completed', false],
      ['openDeposit', 'completed', false],
      ['timer PT30M4.991S', 'running', true],
    ]);
  });
});

describe('buildTimeline on hand-built histories', () => {
  it('shows an activity retried 3 times: attempts 3 and the failure before the last try, not its internal message', () => {
    const result = timeline([
      started(0, 'transferWorkflow'),
      workflowTask(1),
      {
        ...at(2),
        activityTaskScheduledEventAttributes: {
          activityId: '1',
          activityType: { name: 'transferFunds' },
          input: payloads({ transactionId: 't1' }),
        },
      },
      {
        ...at(5, 250_000_000),
        activityTaskStartedEventAttributes: {
          scheduledEventId: '3',
          attempt: 3,
          lastFailure: { message: 'connection terminated unexpectedly' },
        },
      },
      {
        ...at(5, 300_000_001),
        activityTaskCompletedEventAttributes: { scheduledEventId: '3', startedEventId: '4' },
      },
      { ...at(6), workflowExecutionCompletedEventAttributes: {} },
    ]);
    expect(result.steps).toEqual([
      {
        name: 'start',
        kind: 'workflow',
        status: 'completed',
        attempts: 1,
        started_at: iso(0),
        ended_at: iso(0),
        provider_reference: null,
        failure: null,
      },
      {
        name: 'transferFunds',
        kind: 'activity',
        status: 'completed',
        attempts: 3,
        started_at: iso(2),
        ended_at: iso(5, 300_000_001),
        provider_reference: null,
        failure: 'Internal error',
      },
      {
        name: 'end',
        kind: 'workflow',
        status: 'completed',
        attempts: 1,
        started_at: iso(6),
        ended_at: iso(6),
        provider_reference: null,
        failure: null,
      },
    ]);
    expect(result).toMatchObject({
      workflow_type: 'transferWorkflow',
      workflow_status: 'completed',
      started_at: iso(0),
      ended_at: iso(6),
    });
  });

  it('shows an activity that failed on its last attempt with that failure, and the failed workflow', () => {
    const result = timeline([
      started(0),
      {
        ...at(1),
        activityTaskScheduledEventAttributes: {
          activityId: '1',
          activityType: { name: 'openDeposit' },
        },
      },
      {
        ...at(9),
        activityTaskStartedEventAttributes: {
          scheduledEventId: '2',
          attempt: 3,
          lastFailure: { message: 'attempt 2: timeout' },
        },
      },
      {
        ...at(10),
        activityTaskFailedEventAttributes: {
          scheduledEventId: '2',
          startedEventId: '3',
          failure: { message: '', cause: { message: 'attempt 3: provider answered 502' } },
        },
      },
      {
        ...at(11),
        workflowExecutionFailedEventAttributes: {
          failure: { message: 'Activity task failed', cause: { message: 'attempt 3' } },
        },
      },
    ]);
    expect(result.workflow_status).toBe('failed');
    expect(result.steps.map((s) => [s.name, s.status, s.attempts, s.failure])).toEqual([
      ['start', 'completed', 1, null],
      ['openDeposit', 'failed', 3, 'Internal error'],
      ['end', 'failed', 1, 'Internal error'],
    ]);
  });

  it('shows updates accepted, completed, failed and rejected, by update name', () => {
    const update = (id: string, name: string) => ({ meta: { updateId: id }, input: { name } });
    const result = timeline([
      started(0),
      {
        ...at(1),
        workflowExecutionUpdateAcceptedEventAttributes: {
          protocolInstanceId: 'u1',
          acceptedRequest: update('u1', 'open'),
        },
      },
      {
        ...at(2),
        workflowExecutionUpdateCompletedEventAttributes: {
          meta: { updateId: 'u1' },
          outcome: { success: payloads({ status: 'opened', paymentCode: { id: 'pmc_1' } }) },
        },
      },
      {
        ...at(3),
        workflowExecutionUpdateAcceptedEventAttributes: {
          protocolInstanceId: 'u2',
          acceptedRequest: update('u2', 'notify'),
        },
      },
      {
        ...at(4),
        workflowExecutionUpdateAdmittedEventAttributes: { request: update('u3', 'sync') },
      },
      {
        ...at(5),
        workflowExecutionUpdateAcceptedEventAttributes: {
          protocolInstanceId: 'u3',
          acceptedRequest: update('u3', 'sync'),
        },
      },
      {
        ...at(6),
        workflowExecutionUpdateCompletedEventAttributes: {
          meta: { updateId: 'u3' },
          outcome: { failure: { message: 'provider unreachable' } },
        },
      },
      {
        ...at(7),
        workflowExecutionUpdateRejectedEventAttributes: {
          protocolInstanceId: 'u4',
          rejectedRequest: update('u4', 'notify'),
          failure: { message: 'unknown status paid' },
        },
      },
    ]);
    expect(result.workflow_status).toBe('running');
    expect(
      result.steps.map((s) => [
        s.name,
        s.kind,
        s.status,
        s.started_at,
        s.ended_at,
        s.provider_reference,
        s.failure,
      ]),
    ).toEqual([
      ['start', 'workflow', 'completed', iso(0), iso(0), null, null],
      ['open', 'update', 'completed', iso(1), iso(2), 'pmc_1', null],
      ['notify', 'update', 'accepted', iso(3), null, null, null],
      ['sync', 'update', 'failed', iso(4), iso(6), null, 'Internal error'],
      ['notify', 'update', 'rejected', iso(7), iso(7), null, 'Internal error'],
    ]);
  });

  it('shows a timer with its duration: fired, canceled or still running', () => {
    const result = timeline([
      started(0, 'escrowWorkflow'),
      {
        ...at(1),
        timerStartedEventAttributes: { timerId: '1', startToFireTimeout: { seconds: '30' } },
      },
      { ...at(31, 5), timerFiredEventAttributes: { timerId: '1', startedEventId: '2' } },
      {
        ...at(32),
        timerStartedEventAttributes: { timerId: '2', startToFireTimeout: { seconds: '86400' } },
      },
      { ...at(40), timerCanceledEventAttributes: { timerId: '2', startedEventId: '4' } },
      {
        ...at(41),
        timerStartedEventAttributes: {
          timerId: '3',
          startToFireTimeout: { seconds: '1', nanos: 500000000 },
        },
      },
      { ...at(42), workflowExecutionSignaledEventAttributes: { signalName: 'release' } },
    ]);
    expect(
      result.steps.slice(1).map((s) => [s.name, s.kind, s.status, s.started_at, s.ended_at]),
    ).toEqual([
      ['timer PT30S', 'timer', 'fired', iso(1), iso(31, 5)],
      ['timer PT24H', 'timer', 'canceled', iso(32), iso(40)],
      ['timer PT1.5S', 'timer', 'running', iso(41), null],
      ['release', 'signal', 'completed', iso(42), iso(42)],
    ]);
  });

  it('takes the provider reference from the result, else the input, else the row for provider activities', () => {
    const result = timeline(
      [
        started(0),
        {
          ...at(1),
          activityTaskScheduledEventAttributes: {
            activityId: '1',
            activityType: { name: 'checkPaymentCode' },
            input: payloads({ mode: 'test', paymentCodeId: 'pmc_in_input' }),
          },
        },
        {
          ...at(2),
          activityTaskScheduledEventAttributes: {
            activityId: '2',
            activityType: { name: 'openDeposit' },
          },
        },
        {
          ...at(3),
          activityTaskScheduledEventAttributes: {
            activityId: '3',
            activityType: { name: 'closeDeposit' },
          },
        },
      ],
      { providerReference: 'pmc_row' },
    );
    expect(result.steps.slice(1).map((s) => [s.name, s.status, s.provider_reference])).toEqual([
      ['checkPaymentCode', 'scheduled', 'pmc_in_input'],
      ['openDeposit', 'scheduled', 'pmc_row'],
      ['closeDeposit', 'scheduled', null],
    ]);
  });

  it('shows a running activity’s current attempt and last failure from the pending activities', () => {
    const events = [
      started(0),
      {
        ...at(1),
        activityTaskScheduledEventAttributes: {
          activityId: '1',
          activityType: { name: 'openDeposit' },
        },
      },
      {
        ...at(2),
        activityTaskScheduledEventAttributes: {
          activityId: '2',
          activityType: { name: 'checkPaymentCode' },
        },
      },
    ];
    const result = timeline(events, {
      pendingActivities: [
        temporal.api.workflow.v1.PendingActivityInfo.fromObject({
          activityId: '1',
          state: 'PENDING_ACTIVITY_STATE_STARTED',
          attempt: 4,
          lastFailure: { message: 'ECONNRESET' },
        }),
        temporal.api.workflow.v1.PendingActivityInfo.fromObject({
          activityId: '2',
          state: 'PENDING_ACTIVITY_STATE_SCHEDULED',
          attempt: 2,
          lastFailure: { message: 'provider answered 503' },
        }),
      ],
    });
    expect(result.steps.slice(1).map((s) => [s.name, s.status, s.attempts, s.failure])).toEqual([
      ['openDeposit', 'running', 4, 'Internal error'],
      ['checkPaymentCode', 'scheduled', 2, 'Internal error'],
    ]);
  });

  it('ends a terminated or timed-out workflow with that status', () => {
    const terminated = timeline([
      started(0),
      { ...at(5), workflowExecutionTerminatedEventAttributes: { reason: 'stuck payment' } },
    ]);
    expect(terminated.workflow_status).toBe('terminated');
    expect(terminated.steps.at(-1)).toMatchObject({
      name: 'end',
      status: 'terminated',
      failure: 'stuck payment',
    });
    const timedOut = timeline([
      started(0),
      { ...at(5), workflowExecutionTimedOutEventAttributes: {} },
    ]);
    expect(timedOut.workflow_status).toBe('timed_out');
    expect(timedOut.steps.at(-1)).toMatchObject({ name: 'end', status: 'timed_out' });
  });

  it('gives an empty timeline for no events', () => {
    expect(buildTimeline([])).toEqual({
      workflow_type: null,
      workflow_status: null,
      started_at: null,
      ended_at: null,
      steps: [],
    });
  });
});

describe('buildTimeline on a local activity', () => {
  it('shows the ledger step recorded as a local-activity marker, with its attempts and result', () => {
    const result = timeline([
      started(0, 'transferWorkflow'),
      workflowTask(1),
      {
        ...at(1, 500),
        markerRecordedEventAttributes: {
          markerName: 'core_local_activity',
          details: {
            data: payloads({
              seq: 1,
              attempt: 3,
              activity_type: 'transferFunds',
              original_schedule_time: { seconds: T0 + 1, nanos: 100 },
              complete_time: { seconds: T0 - 5, nanos: 0 },
            }),
            result: payloads({ transactionId: 't-1' }),
          },
        },
      },
      { ...at(2), workflowExecutionCompletedEventAttributes: {} },
    ]);
    const step = result.steps.find((s) => s.name === 'transferFunds');
    expect(step).toMatchObject({
      kind: 'activity',
      status: 'completed',
      attempts: 3,
      started_at: iso(1, 100),
      ended_at: iso(1, 500),
      failure: null,
    });
  });

  it('shows the payment’s provider reference on a provider step run locally, as on a remote one', () => {
    const marker = (order: number, activityType: string, result: unknown) => ({
      ...at(order),
      markerRecordedEventAttributes: {
        markerName: 'core_local_activity',
        details: {
          data: payloads({ attempt: 1, activity_type: activityType }),
          result: payloads(result),
        },
      },
    });
    const steps = timeline(
      [
        started(0, 'cardRefundWorkflow'),
        workflowTask(1),
        marker(2, 'reserveMoneyOut', { transactionId: 't-1' }),
        marker(3, 'sendMoneyOut', { id: 're_from_the_provider', status: 'completed' }),
        marker(4, 'settleMoneyOut', null),
        marker(5, 'openCardDeposit', { paymentId: 'pi_in_the_result' }),
      ],
      { providerReference: 're_row' },
    ).steps.filter((s) => s.kind === 'activity');
    expect(steps.map((s) => [s.name, s.provider_reference])).toEqual([
      ['reserveMoneyOut', null],
      ['sendMoneyOut', 're_row'],
      ['settleMoneyOut', null],
      ['openCardDeposit', 'pi_in_the_result'],
    ]);
  });

  it('shows a failed local activity with its failure', () => {
    const result = timeline([
      started(0, 'transferWorkflow'),
      {
        ...at(1),
        markerRecordedEventAttributes: {
          markerName: 'core_local_activity',
          details: { data: payloads({ attempt: 1, activity_type: 'transferFunds' }) },
          failure: {
            message: 'insufficient_funds',
            applicationFailureInfo: { type: 'insufficient_funds', nonRetryable: true },
          },
        },
      },
    ]);
    expect(result.steps.find((s) => s.name === 'transferFunds')).toMatchObject({
      status: 'failed',
      failure: 'Insufficient funds',
    });
  });

  it('shows a decline as the API answers it and any other failure as an internal error', () => {
    const failed = (failure: Record<string, unknown>) =>
      timeline([
        started(0, 'transferWorkflow'),
        {
          ...at(1),
          markerRecordedEventAttributes: {
            markerName: 'core_local_activity',
            details: { data: payloads({ attempt: 1, activity_type: 'transferFunds' }) },
            failure,
          },
        },
      ]).steps.find((s) => s.name === 'transferFunds')?.failure;
    const declined = (type: string, message: string, nonRetryable = true) => ({
      message,
      applicationFailureInfo: { type, nonRetryable },
    });
    // The decline's own detail, also when it is the cause of the activity's failure.
    expect(failed(declined('card_declined', 'Card declined: insufficient funds'))).toBe(
      'Card declined: insufficient funds',
    );
    expect(
      failed({ message: 'Activity task failed', cause: declined('same_wallet', 'same_wallet') }),
    ).toBe('Cannot transfer to the same wallet');
    // A database's, a provider's or a retried failure's message stays in the history only.
    const internal = 'duplicate key value violates unique constraint "ledger_pkey" at 10.0.3.7';
    expect(failed({ message: internal })).toBe('Internal error');
    expect(failed(declined('insufficient_funds', internal, false))).toBe('Internal error');
    expect(failed(declined('NotAnErrorCode', internal))).toBe('Internal error');
    expect(failed({ message: '', cause: { message: internal } })).toBe('Internal error');
  });
});

describe('an operator’s resolution on the timeline', () => {
  it('shows the resolve update with the operator and the reason its history keeps', () => {
    const file = path.join(__dirname, '..', 'fixtures', 'histories', 'deposit-resolved.json');
    const recordedHistory = historyFromJSON(JSON.parse(readFileSync(file, 'utf8')));
    const result = timeline(recordedHistory.events as EventObject[]);
    const resolve = result.steps.filter((s) => s.name === 'resolve');
    expect(resolve).toEqual([
      expect.objectContaining({
        kind: 'update',
        status: 'completed',
        operator: 'Ada Operator',
        reason: 'Provider support confirmed the outcome by phone (ticket 4711)',
      }),
    ]);
    // The settlement the resolution made is the provider's path: the deposit completed.
    expect(result.steps.map((s) => s.name)).toEqual(
      expect.arrayContaining(['openDeposit', 'resolve', 'completeDeposit', 'end']),
    );
    for (const step of result.steps.filter((s) => s.name !== 'resolve')) {
      expect(step).not.toHaveProperty('operator');
      expect(step).not.toHaveProperty('reason');
    }
  });
});
