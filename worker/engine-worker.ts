import type { DataConverter } from '@temporalio/common';
import { Worker, type WorkerOptions } from '@temporalio/worker';

/**
 * The one place the engine builds a Worker: the SDK's `Worker.create`, with workflows run the
 * way the SDK runs them (its workflow thread, one V8 context reused for every workflow, its
 * deadlock detection failing the task of a workflow stuck in a loop). The data converter is
 * required: a worker without the engine's (temporal/data-converter.ts) could not read
 * encrypted payloads.
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
