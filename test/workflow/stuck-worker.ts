/**
 * A worker of the engine's kind on its own, for the stuck-workflow test
 * (inline-workflows.test.ts): it polls `argv[3]` on the Temporal server at `argv[2]`, with a
 * stuck limit of 1 s, and says `polling` on standard output once it does.
 */
import { NativeConnection } from '@temporalio/worker';
import { bundleWorkflows } from '../../worker/bundle';
import { loadConfig } from '../../config';
import { temporalDataConverter } from '../../temporal/data-converter';
import { createEngineWorker } from '../../worker/engine-worker';

async function main(): Promise<void> {
  const [address, taskQueue = ''] = process.argv.slice(2);
  const connection = await NativeConnection.connect({ address });
  const code = await bundleWorkflows(require.resolve('./inline-workflows.workflow'));
  const worker = await createEngineWorker(
    {
      connection,
      taskQueue,
      workflowBundle: { code },
      dataConverter: temporalDataConverter(loadConfig()),
    },
    { stackTraces: false, stuckAfterMs: 1_000 },
  );
  const running = worker.run();
  process.stdout.write('polling\n');
  await running;
}

void main();
