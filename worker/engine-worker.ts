import type { DataConverter } from '@temporalio/common';
import {
  DefaultLogger,
  Runtime,
  Worker,
  type CompiledWorkerOptions,
  type Logger,
  type WorkerOptions,
} from '@temporalio/worker';
import type { WorkflowCreator } from '@temporalio/worker/lib/workflow/interface';
import type { WorkflowBundleWithSourceMapAndFilename } from '@temporalio/worker/lib/workflow/workflow-worker-thread/input';
import { inlineWorkflowCreator } from './inline-workflows';

export type EngineWorkflowOptions = {
  /**
   * The SDK's promise hook, which captures a stack trace at every promise a workflow creates,
   * for the Temporal UI's "Stack Trace" query (TEMPORAL_WORKFLOW_STACK_TRACES). On, workflows
   * run in the SDK's own workflow threads, with its hook and its deadlock detector; off (the
   * default), in the main thread (worker/inline-workflows.ts), and the query answers that stack
   * traces are not enabled on this worker.
   */
  stackTraces: boolean;
  /**
   * How long one call into a workflow may hold the main thread before the workflow is deemed
   * stuck and the process is killed; defaults to the SDK's deadlock limit
   * (`isolateExecutionTimeout`, 5 s).
   */
  stuckAfterMs?: number;
  /**
   * Check after every call into a workflow that it left no global of its own in the sandbox
   * the workflows share (worker/inline-workflows.ts), failing the activation if it did; for
   * the tests, which run every workflow with it.
   */
  checkGlobals?: boolean;
};

/**
 * The worker's logger, with what the runtime's logger drops dropped before it is built. The
 * SDK's worker logs every workflow activation and every activity at TRACE (the activation
 * itself as the entry's metadata), and its logger copies and walks that metadata for every call
 * before the runtime's logger (DefaultLogger at WARN in worker/main.ts) throws the entry away.
 * Only a DefaultLogger says its level; any other logger gets every call, as before.
 */
export function withoutDroppedLevels(logger: Logger, runtimeLogger: Logger): Logger {
  if (!(runtimeLogger instanceof DefaultLogger) || runtimeLogger.level === 'TRACE') return logger;
  const debugged = runtimeLogger.level === 'DEBUG';
  const dropped = () => undefined;
  return {
    log: (level, message, meta) => {
      if (level === 'TRACE' || (level === 'DEBUG' && !debugged)) return;
      logger.log(level, message, meta);
    },
    trace: dropped,
    debug: debugged ? logger.debug.bind(logger) : dropped,
    info: logger.info.bind(logger),
    warn: logger.warn.bind(logger),
    error: logger.error.bind(logger),
  };
}

/**
 * `Worker.create` with the engine's workflows in the main thread (worker/inline-workflows.ts).
 * The SDK's own creators serve stack traces (its workflow threads), `debugMode` and a
 * `patchActivationCallback`, which the engine does not use. The data converter is required:
 * a worker without the engine's (temporal/data-converter.ts) could not read encrypted payloads.
 */
export async function createEngineWorker(
  options: WorkerOptions & { dataConverter: DataConverter },
  workflows: EngineWorkflowOptions = { stackTraces: false },
): Promise<Worker> {
  class EngineWorker extends Worker {
    protected static override async createWorkflowCreator(
      bundle: WorkflowBundleWithSourceMapAndFilename,
      compiled: CompiledWorkerOptions,
      logger: Logger,
    ): Promise<WorkflowCreator> {
      if (compiled.debugMode || compiled.patchActivationCallback || workflows.stackTraces) {
        return super.createWorkflowCreator(bundle, compiled, logger);
      }
      return inlineWorkflowCreator(
        bundle,
        compiled,
        workflows.stuckAfterMs ?? compiled.isolateExecutionTimeoutMs,
        workflows.checkGlobals,
      );
    }
  }
  const worker = await EngineWorker.create(options);
  // Read on every call (`this.logger`), so that replacing it here reaches the activation path.
  const logged = worker as unknown as { logger: Logger };
  logged.logger = withoutDroppedLevels(logged.logger, Runtime.instance().logger);
  return worker;
}
