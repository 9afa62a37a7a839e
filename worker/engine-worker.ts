import { Worker as NodeWorker } from 'node:worker_threads';
import {
  DefaultLogger,
  Runtime,
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
import type { SinkCall } from '@temporalio/workflow/lib/sinks';

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

  /** The sink calls that came with a run's activations (workflow-thread.cjs), not yet asked for. */
  private readonly sinkCalls = new Map<string, SinkCall[]>();
  /** Runs whose last activation failed: what it called is still in the workflow, asked of it. */
  private readonly callsInWorkflow = new Set<string>();

  override async send(input: WorkerThreadInput): Promise<WorkerThreadOutput> {
    // Loading the bundle and shutting down are the SDK's own, not workflow code.
    if (input.type === 'init' || input.type === 'destroy') return super.send(input);
    // The SDK's worker asks after every activation: answered with what came with the completion.
    if (input.type === 'extract-sink-calls' && !this.callsInWorkflow.has(input.runId)) {
      return { type: 'sink-calls', calls: this.takeSinkCalls(input.runId) };
    }
    const timer = setTimeout(() => this.stuck(input), this.limitMs);
    try {
      const output = await super.send(input);
      if (output?.type === 'activation-completion' && 'sinkCalls' in output) {
        const { sinkCalls, ...completion } = output as typeof output & { sinkCalls: SinkCall[] };
        if (input.type === 'activate-workflow') this.keepSinkCalls(input.runId, sinkCalls);
        return completion;
      }
      if (output?.type === 'sink-calls' && input.type === 'extract-sink-calls') {
        this.callsInWorkflow.delete(input.runId);
        return { type: 'sink-calls', calls: [...this.takeSinkCalls(input.runId), ...output.calls] };
      }
      return output;
    } catch (error) {
      if (input.type === 'activate-workflow') this.callsInWorkflow.add(input.runId);
      throw error;
    } finally {
      clearTimeout(timer);
      if (input.type === 'dispose-workflow') {
        this.sinkCalls.delete(input.runId);
        this.callsInWorkflow.delete(input.runId);
      }
    }
  }

  private keepSinkCalls(runId: string, calls: SinkCall[]): void {
    if (calls.length === 0) return;
    const kept = this.sinkCalls.get(runId);
    if (kept) kept.push(...calls);
    else this.sinkCalls.set(runId, calls);
  }

  private takeSinkCalls(runId: string): SinkCall[] {
    const calls = this.sinkCalls.get(runId) ?? [];
    this.sinkCalls.delete(runId);
    return calls;
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
  const worker = await EngineWorker.create(options);
  // Read on every call (`this.logger`), so that replacing it here reaches the activation path.
  const logged = worker as unknown as { logger: Logger };
  logged.logger = withoutDroppedLevels(logged.logger, Runtime.instance().logger);
  return worker;
}
