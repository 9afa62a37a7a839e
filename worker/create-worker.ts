import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { DatabasePool } from 'slonik';
import { temporalAddress, type Config } from '../config';
import { createActivities } from '../activities';

/**
 * The worker: one task queue for every payment workflow and activity. A prebuilt workflow
 * bundle (TEMPORAL_WORKFLOW_BUNDLE) skips bundling at start-up; otherwise it bundles
 * `workflows/` itself.
 */
export async function createWorker(options: {
  config: Config;
  pool: DatabasePool;
  connection?: NativeConnection;
  tuning?: Partial<WorkerOptions>;
}): Promise<{ worker: Worker; connection: NativeConnection; ownsConnection: boolean }> {
  const { config } = options;
  const connection =
    options.connection ?? (await NativeConnection.connect({ address: temporalAddress(config) }));
  const workflowSource = config.temporal.workflowBundlePath
    ? { workflowBundle: { codePath: config.temporal.workflowBundlePath } }
    : { workflowsPath: require.resolve('../workflows') };
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    activities: createActivities({ pool: options.pool }),
    ...workflowSource,
    ...options.tuning,
  });
  return { worker, connection, ownsConnection: !options.connection };
}
