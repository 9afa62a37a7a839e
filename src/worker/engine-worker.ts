import type { DataConverter } from '@temporalio/common';
import { Worker, type WorkerOptions } from '@temporalio/worker';

/**
 * The one place the engine builds a Worker, workflows run the SDK's way (its workflow thread, one
 * reused V8 context, deadlock detection). The data converter is required: without the engine's
 * (src/temporal/data-converter.ts) a worker could not read encrypted payloads.
 */
export async function createEngineWorker(
  options: WorkerOptions & { dataConverter: DataConverter },
): Promise<Worker> {
  return Worker.create({
    // The SDK's defaults, said here because the engine relies on them: one shared context (its
    // modules evaluated once, bundle.ts) in one thread, since the workflows are light and the
    // main thread runs the activities (and, in one process, the API).
    reuseV8Context: true,
    workflowThreadPoolSize: 1,
    ...options,
  });
}
