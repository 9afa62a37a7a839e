/**
 * Records the replay test's histories (docs/testing.md "Replay fixtures") from the workflow tests'
 * `RECORDED_SCENARIOS`; `--out DIR` writes elsewhere, to compare with the committed fixtures.
 * Re-recording to make a failing replay test pass hides exactly the break it exists to catch.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { bundleWorkflows } from '../../src/worker/bundle';
import { createEngineWorker } from '../../src/worker/engine-worker';
import { format, resolveConfig } from 'prettier';
import { RECORDED_SCENARIOS, registerSearchAttributes } from '../../test/workflow/scenarios';
import { findBinary } from '../harness/temporal';
import { historyToJSON } from '../../test/support/history-json';
import { resolutionSinks } from '../../src/temporal/resolutions';
import { paymentSinks } from '../../src/temporal/settlements';

const rootDir = path.resolve(__dirname, '..', '..');
const HISTORIES_DIR = path.join(rootDir, 'test', 'fixtures', 'histories');

/** `[--out DIR] [name ...]`: names record only those fixtures (one changed workflow type, say). */
function parseArgs(args: string[]): { out: string; only: string[] } {
  const at = args.indexOf('--out');
  if (at === -1) return { out: HISTORIES_DIR, only: args };
  const out = args[at + 1];
  if (!out) throw new Error('--out needs a folder');
  return { out: path.resolve(out), only: args.filter((_, i) => i !== at && i !== at + 1) };
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const code = await bundleWorkflows(require.resolve('../../src/workflows'));
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: findBinary('temporal-test-server') } },
  });
  try {
    await registerSearchAttributes(env);
    // Overwrites only the fixtures it records: a history kept by hand (the old path of a
    // `patched()` change, say) stays and keeps being replayed.
    const { out, only } = parseArgs(process.argv.slice(2));
    await mkdir(out, { recursive: true });
    const prettier = await resolveConfig(path.join(HISTORIES_DIR, 'x.json'));
    for (const scenario of RECORDED_SCENARIOS) {
      if (only.length && !only.includes(scenario.name)) continue;
      const taskQueue = `record-${scenario.name}`;
      const worker = await createEngineWorker({
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: { code },
        // Plain payloads: the fixtures are committed and replay on any machine, whatever its
        // keys; the engine's codec passes plain payloads through (test/workflow/replay.test.ts).
        dataConverter: {},
        activities: scenario.activities(env),
        sinks: { ...paymentSinks, ...resolutionSinks },
      });
      const { handle } = await worker.runUntil(scenario.play(env, taskQueue));
      const history = await handle.fetchHistory();
      const file = path.join(out, `${scenario.name}.json`);
      await writeFile(
        file,
        await format(historyToJSON(history), { ...prettier, filepath: file }),
        'utf8',
      );
      console.log(`${path.relative(rootDir, file)}: ${history.events?.length ?? 0} events`);
    }
  } finally {
    await env.teardown();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
