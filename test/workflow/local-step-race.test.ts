/**
 * The escrow workflow's race, reduced: an update's local activity ends the workflow as a second
 * update arrives. The time-skipping server fails that task (UNHANDLED_COMMAND), so the local
 * activity runs again and must be idempotent by its id; the dev server aborts the second update.
 */
import { Client, Connection, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, NativeConnection } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { createEngineWorker } from '../../src/worker/engine-worker';
import { createTimeSkippingEnv, testDataConverter } from '../support/time-skipping';
import { within } from '../support/wait';
import { takeOnce, takeUpdate, type TakeActivities } from './local-step-race.workflow';

const UNHANDLED_COMMAND =
  temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND;

type Server = { client: Client; connection: NativeConnection; close: () => Promise<void> };

let code: string;
beforeAll(async () => {
  ({ code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./local-step-race.workflow'),
    logger: new DefaultLogger('ERROR'),
  }));
});

/**
 * Update A's `take` waits until update B has been sent and has had time to reach the server;
 * `idempotent` answers `taken` again to the id that took the unit.
 */
async function race(server: Server, idempotent: boolean) {
  let takenBy: string | null = null;
  const calls: string[] = [];
  let firstStarted!: () => void;
  const started = new Promise<void>((resolve) => (firstStarted = resolve));
  let secondSent!: () => void;
  const sent = new Promise<void>((resolve) => (secondSent = resolve));
  const activities: TakeActivities = {
    async take(id) {
      calls.push(id);
      firstStarted();
      await sent;
      if (idempotent && takenBy === id) return 'taken';
      if (takenBy !== null) return 'gone';
      takenBy = id;
      return 'taken';
    },
  };
  const taskQueue = `local-step-race-${randomUUID()}`;
  const worker = await createEngineWorker({
    connection: server.connection,
    taskQueue,
    workflowBundle: { code },
    dataConverter: testDataConverter(),
    activities,
  });
  return worker.runUntil(async () => {
    const handle = await server.client.workflow.start(takeOnce, {
      taskQueue,
      workflowId: taskQueue,
    });
    const first = handle.executeUpdate(takeUpdate, { args: ['A'] });
    await started;
    const second = handle.executeUpdate(takeUpdate, { args: ['B'] });
    await delay(300);
    secondSent();
    const answers = await Promise.allSettled([first, second]);
    // The time-skipping server skips to the run timeout (10 years) of a workflow left waiting.
    const result = await within(
      handle.result().catch((error: unknown) => {
        if (error instanceof WorkflowFailedError) return error.message;
        throw error;
      }),
      3000,
      'running',
    );
    if (result === 'running') await handle.terminate();
    const { events } = await handle.fetchHistory();
    const failedTasks = events!.flatMap((e) =>
      e.workflowTaskFailedEventAttributes ? [e.workflowTaskFailedEventAttributes.cause] : [],
    );
    return {
      answers: answers.map((a) => (a.status === 'fulfilled' ? a.value : a.reason)),
      result,
      calls,
      failedTasks,
    };
  });
}

describe('time-skipping test server', () => {
  let server: Server;
  beforeAll(async () => {
    const env = await createTimeSkippingEnv();
    server = { client: env.client, connection: env.nativeConnection, close: () => env.teardown() };
  });
  afterAll(async () => server?.close());

  it('fails the task that would end the workflow, and runs its local activity again', async () => {
    const { answers, result, calls, failedTasks } = await race(server, false);
    expect(failedTasks).toEqual([UNHANDLED_COMMAND]);
    expect(calls).toEqual(['A', 'A', 'B']);
    // A's second run found the unit gone: the workflow never saw it taken, and waited.
    expect(answers).toEqual(['gone', 'gone']);
    expect(result).toBe('Workflow execution timed out');
  });

  it('ends the workflow when the local activity answers its own step again', async () => {
    const { answers, result, calls, failedTasks } = await race(server, true);
    expect(failedTasks).toEqual([UNHANDLED_COMMAND]);
    expect(calls).toEqual(['A', 'A', 'B']);
    expect(answers).toEqual(['taken', 'gone']);
    expect(result).toBe('done');
  });
});

describe('dev server', () => {
  let server: Server;
  beforeAll(async () => {
    const address = process.env.TEST_TEMPORAL_ADDRESS!;
    const connection = await NativeConnection.connect({ address });
    const clientConnection = await Connection.connect({ address });
    server = {
      client: new Client({ connection: clientConnection, dataConverter: testDataConverter() }),
      connection,
      close: async () => {
        await connection.close();
        await clientConnection.close();
      },
    };
  });
  afterAll(async () => server?.close());

  it('ends the workflow and aborts the update it had not seen', async () => {
    const { answers, result, calls, failedTasks } = await race(server, false);
    expect(failedTasks).toEqual([]);
    expect(calls).toEqual(['A']);
    expect(answers[0]).toBe('taken');
    expect(answers[1]).toBeInstanceOf(WorkflowNotFoundError);
    expect(result).toBe('done');
  });
});
