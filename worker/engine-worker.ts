import { Worker as NodeWorker } from 'node:worker_threads';
import {
  Worker,
  type CompiledWorkerOptions,
  type Logger,
  type WorkerOptions,
} from '@temporalio/worker';
import type { WorkflowCreator } from '@temporalio/worker/lib/workflow/interface';
import {
  ThreadedVMWorkflowCreator,
  WorkerThreadClient,
} from '@temporalio/worker/lib/workflow/threaded-vm';
import type {
  WorkerThreadInput,
  WorkflowBundleWithSourceMapAndFilename,
} from '@temporalio/worker/lib/workflow/workflow-worker-thread/input';
import type { WorkerThreadOutput } from '@temporalio/worker/lib/workflow/workflow-worker-thread/output';

const THREAD_SCRIPT = require.resolve('./workflow-thread.cjs');

export type WorkflowThreadOptions = {
  /**
   * The SDK's promise hook, which captures a stack trace at every promise a workflow creates,
   * for the Temporal UI's "Stack Trace" query (TEMPORAL_WORKFLOW_STACK_TRACES). Off, the query
   * answers that stack traces are not enabled on this worker.
   */
  stackTraces: boolean;
  /**
   * How long a request to the workflow thread may take before the thread is deemed stuck;
   * defaults to the SDK's deadlock limit (`isolateExecutionTimeout`, 5 s).
   */
  stuckAfterMs?: number;
};

/**
 * A workflow thread whose calls into the sandbox run without Node's `vm` timeout, watched from
 * here instead. The SDK runs each call with `isolateExecutionTimeout` (its deadlock detector),
 * and Node starts and joins a watchdog thread for every such call, several a workflow task.
 * Here one timer a request to the thread does the watching: a request that has not come back
 * within the limit (a workflow stuck in a loop) gets the thread terminated, which fails the
 * worker (the SDK shuts a worker down when its workflow thread exits) so that it is rebuilt
 * (worker/resilient.ts), and is logged with the workflow's run.
 */
class WatchedWorkflowThread extends WorkerThreadClient {
  constructor(
    logger: Logger,
    options: WorkflowThreadOptions,
    private readonly limitMs: number,
  ) {
    super(
      new NodeWorker(THREAD_SCRIPT, { workerData: { stackTraces: options.stackTraces } }),
      logger,
    );
  }

  override async send(input: WorkerThreadInput): Promise<WorkerThreadOutput> {
    // Loading the bundle and shutting down are the SDK's own, not workflow code.
    if (input.type === 'init' || input.type === 'destroy') return super.send(input);
    const timer = setTimeout(() => this.stuck(input), this.limitMs);
    try {
      return await super.send(input);
    } finally {
      clearTimeout(timer);
    }
  }

  private stuck(input: WorkerThreadInput): void {
    this.logger.error(
      `A workflow thread did not answer within ${this.limitMs} ms (a workflow stuck in a loop?): terminating it; the worker fails and is rebuilt`,
      {
        request: input.type,
        ...('runId' in input ? { runId: input.runId } : {}),
        ...(input.type === 'create-workflow'
          ? {
              workflowId: input.options.info.workflowId,
              workflowType: input.options.info.workflowType,
            }
          : {}),
      },
    );
    void this.workerThread.terminate();
  }
}

async function watchedWorkflowCreator(
  bundle: WorkflowBundleWithSourceMapAndFilename,
  compiled: CompiledWorkerOptions,
  logger: Logger,
  options: WorkflowThreadOptions,
): Promise<WorkflowCreator> {
  const threads = Array.from(
    { length: compiled.workflowThreadPoolSize },
    () =>
      new WatchedWorkflowThread(
        logger,
        options,
        options.stuckAfterMs ?? compiled.isolateExecutionTimeoutMs,
      ),
  );
  await Promise.all(
    threads.map((thread) =>
      thread.send({
        type: 'init',
        workflowBundle: bundle,
        // No timeout: Node's vm then starts no watchdog thread a call (the thread is watched
        // from this side instead, above).
        isolateExecutionTimeoutMs: undefined as unknown as number,
        reuseV8Context: compiled.reuseV8Context ?? true,
        registeredActivityNames: new Set(compiled.activities.keys()),
        hasPatchActivationCallback: false,
      }),
    ),
  );
  return new ThreadedVMWorkflowCreator(threads);
}

/**
 * `Worker.create` with the engine's workflow threads (WatchedWorkflowThread above; the thread
 * script worker/workflow-thread.cjs). The SDK's own threads serve `debugMode` (workflows in the
 * main thread) and a `patchActivationCallback`, neither of which the engine uses.
 */
export async function createEngineWorker(
  options: WorkerOptions,
  threads: WorkflowThreadOptions = { stackTraces: false },
): Promise<Worker> {
  class EngineWorker extends Worker {
    protected static override async createWorkflowCreator(
      bundle: WorkflowBundleWithSourceMapAndFilename,
      compiled: CompiledWorkerOptions,
      logger: Logger,
    ): Promise<WorkflowCreator> {
      if (compiled.debugMode || compiled.patchActivationCallback) {
        return super.createWorkflowCreator(bundle, compiled, logger);
      }
      return watchedWorkflowCreator(bundle, compiled, logger, threads);
    }
  }
  return EngineWorker.create(options);
}
