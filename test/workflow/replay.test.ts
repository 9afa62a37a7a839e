/**
 * Replays the recorded histories against the current workflow code, so that a change that would
 * break running workflows fails CI. Make such a change compatible (`patched()`) rather than
 * re-record: docs/testing.md "Replay fixtures" says when re-recording is right, and how.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker, type ReplayResult } from '@temporalio/worker';
import * as workflows from '../../src/workflows';
import { quietTemporalRuntime } from '../support/engine';
import { historyFromJSON, historyToJSON, type History } from '../support/history-json';
import { workflowBundle } from '../support/time-skipping';
import { loadConfig } from '../../src/config';
import { temporalDataConverter } from '../../src/temporal/data-converter';
import { resolutionSinks } from '../../src/temporal/resolutions';
import { paymentSinks } from '../../src/temporal/settlements';

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
    // A new workflow type or path: add its scenario to `RECORDED_SCENARIOS` (scenarios.ts).
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
      // With the engine's codec as a move to encryption sets it: the fixtures were recorded
      // before encryption, so their payloads are plain (docs/temporal-codec.md).
      {
        workflowBundle: await workflowBundle(),
        sinks: { ...paymentSinks, ...resolutionSinks },
        dataConverter: temporalDataConverter(
          loadConfig({ ...process.env, TEMPORAL_PAYLOAD_ALLOW_PLAINTEXT: 'true' }),
        ),
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
