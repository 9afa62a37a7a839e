/**
 * Replays recorded workflow histories against the current workflow code, so that a change which
 * would break workflows already running in production fails CI instead of failing those
 * workflows (a nondeterminism error leaves a running transfer, deposit or escrow hold stuck).
 *
 * The fixtures in test/fixtures/histories/ are real executions of each workflow type: the
 * workflow tests' scenarios (test/workflow/scenarios.ts), recorded on the time-skipping test
 * server with their mocked activities by:
 *
 *   node_modules/.bin/node --import tsx tools/scripts/record-histories.ts
 *
 * To see what a workflow change does to a history without touching the fixtures, record into
 * another folder (`tools/scripts/record-histories.ts --out /tmp/histories`) and diff.
 *
 * When this test fails, the change is not replay-compatible: an activity, timer, update or
 * search-attribute upsert added, removed or reordered on a path an old history took. Make it
 * compatible instead (keep the old order, or branch with `patched('some-change-id')` from
 * @temporalio/workflow so that old executions keep the old path), and keep these fixtures.
 *
 * Re-record only when the break is deliberate and running executions are taken care of: the
 * new behaviour sits behind a `patched()` version check, or it is a new workflow type (a new
 * name) while the old one drains. Keep the old histories then: copy a fixture aside under a new
 * name (say escrow-expired.before-<change>.json) before re-recording, so that the old path stays
 * covered too; the script overwrites only the files it records. Re-recording only to make this
 * test pass hides the very break it exists to catch. When a workflow gains a path or a workflow
 * type is added, add its scenario to `RECORDED_SCENARIOS` (the first test fails until every
 * workflow type the worker registers has a history).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker, type ReplayResult } from '@temporalio/worker';
import * as workflows from '../../workflows';
import { quietTemporalRuntime } from '../support/engine';
import { historyFromJSON, historyToJSON, type History } from '../support/history-json';
import { testDataConverter, workflowBundle } from '../support/time-skipping';
import { resolutionSinks } from '../../temporal/resolutions';
import { paymentSinks } from '../../temporal/settlements';

const HISTORIES_DIR = path.join(__dirname, '..', 'fixtures', 'histories');

type Fixture = { workflowId: string; json: unknown; history: History };
let fixtures: Fixture[];
beforeAll(() => {
  const files = readdirSync(HISTORIES_DIR)
    .filter((file) => file.endsWith('.json'))
    .sort();
  fixtures = files.map((file) => {
    const json: unknown = JSON.parse(readFileSync(path.join(HISTORIES_DIR, file), 'utf8'));
    return { workflowId: path.basename(file, '.json'), json, history: historyFromJSON(json) };
  });
});

/** The workflow type a history started. */
const workflowType = (history: History) =>
  history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;

describe('workflow replay', () => {
  it('has recorded histories of every workflow type the worker registers', () => {
    const recorded = new Set(fixtures.map((f) => workflowType(f.history)));
    expect(recorded).toEqual(new Set(Object.keys(workflows)));
  });

  it('reads every fixture and writes it back as recorded (what scripts/record-histories.ts writes)', () => {
    for (const { json, history } of fixtures) {
      expect(JSON.parse(historyToJSON(history))).toEqual(json);
    }
  });

  it('replays every recorded history without a nondeterminism error', async () => {
    quietTemporalRuntime();
    const results: ReplayResult[] = [];
    for await (const result of Worker.runReplayHistories(
      // A replay worker never calls the sink, but a workflow calling one it lacks is logged.
      // With the engine's codec: histories recorded before encryption pass through it.
      {
        workflowBundle: await workflowBundle(),
        sinks: { ...paymentSinks, ...resolutionSinks },
        dataConverter: testDataConverter(),
      },
      fixtures.map(({ workflowId, history }) => ({ workflowId, history })),
    )) {
      results.push(result);
    }
    expect(results.map((r) => r.workflowId)).toEqual(fixtures.map((f) => f.workflowId));
    const failures = results
      .filter((r) => r.error !== undefined)
      .map((r) => `${r.workflowId}: ${r.error?.message}`);
    expect(failures).toEqual([]);
  });
});
