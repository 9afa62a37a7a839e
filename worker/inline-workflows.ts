import { Worker as NodeWorker } from 'node:worker_threads';
import type { CompiledWorkerOptions } from '@temporalio/worker';
import type {
  Workflow,
  WorkflowCreateOptions,
  WorkflowCreator,
} from '@temporalio/worker/lib/workflow/interface';
import { ReusableVMWorkflowCreator } from '@temporalio/worker/lib/workflow/reusable-vm';
import { VMWorkflowCreator } from '@temporalio/worker/lib/workflow/vm';
import { globalHandlers } from '@temporalio/worker/lib/workflow/vm-shared';
import type { WorkflowBundleWithSourceMapAndFilename } from '@temporalio/worker/lib/workflow/workflow-worker-thread/input';

const WATCH_SCRIPT = require.resolve('./stuck-watch.cjs');
/** Room for who runs (type, id and run of a workflow, as JSON) in the watch's shared memory. */
const WHO_BYTES = 1024;

/**
 * The main thread's side of the watch (worker/stuck-watch.cjs): every call into a workflow's
 * sandbox is counted and marked running in shared memory, two atomic writes a call, and who
 * runs is written when it changes. The watch's thread does the rest; it does not keep the
 * process alive.
 */
class StuckWatch {
  private readonly words: Int32Array;
  private readonly who: Uint8Array;
  private written = '';
  private readonly thread: NodeWorker;
  private readonly encoder = new TextEncoder();

  constructor(limitMs: number) {
    const shared = new SharedArrayBuffer(8 + WHO_BYTES);
    this.words = new Int32Array(shared, 0, 2);
    this.who = new Uint8Array(shared, 8, WHO_BYTES);
    this.thread = new NodeWorker(WATCH_SCRIPT, { workerData: { shared, limitMs } });
    this.thread.unref();
  }

  around<T>(who: string, call: () => T): T {
    if (who !== this.written) {
      this.who.fill(0);
      this.encoder.encodeInto(who, this.who.subarray(0, WHO_BYTES - 1));
      this.written = who;
    }
    Atomics.add(this.words, 0, 1);
    Atomics.store(this.words, 1, 1);
    try {
      return call();
    } finally {
      Atomics.store(this.words, 1, 0);
    }
  }

  async stop(): Promise<void> {
    await this.thread.terminate();
  }
}

type SandboxCalls = Record<string | symbol, (...args: unknown[]) => unknown>;

/** Every call the SDK makes into the workflow's sandbox (its `workflowModule`), watched. */
function watched(workflow: Workflow, watch: StuckWatch, options: WorkflowCreateOptions): Workflow {
  const { workflowType, workflowId, runId } = options.info;
  const who = JSON.stringify({ workflowType, workflowId, runId });
  const vmWorkflow = workflow as unknown as { workflowModule: SandboxCalls };
  const calls = vmWorkflow.workflowModule;
  vmWorkflow.workflowModule = new Proxy(calls, {
    get: (target, name) => {
      const call = target[name]!;
      return (...args: unknown[]) => watch.around(who, () => call(...args));
    },
  });
  return workflow;
}

/**
 * Workflows run in the process's main thread, as the SDK's `debugMode` runs them, but without
 * Node's `vm` timeout (Node starts and joins a watchdog thread for each call into a sandbox
 * that has one) and without the SDK's global handlers (a promise hook that captures a stack
 * trace at every promise the process creates, and a source-mapping `Error.prepareStackTrace`).
 * An activation then costs no trip to a workflow thread and back: no copy of the activation and
 * of its completion between threads, no waking of the other thread. A call that runs for
 * `limitMs` (a workflow stuck in a loop) holds the main thread, so no timer there can see it:
 * the watch's thread (worker/stuck-watch.cjs) logs it and kills the process.
 */
export async function inlineWorkflowCreator(
  bundle: WorkflowBundleWithSourceMapAndFilename,
  compiled: CompiledWorkerOptions,
  limitMs: number,
): Promise<WorkflowCreator> {
  globalHandlers.installed = true;
  const activityNames = new Set(compiled.activities.keys());
  // No timeout: the watch below does the watching.
  const noTimeout = undefined as unknown as number;
  const creator =
    (compiled.reuseV8Context ?? true)
      ? await ReusableVMWorkflowCreator.create(bundle, noTimeout, activityNames, undefined)
      : await VMWorkflowCreator.create(bundle, noTimeout, activityNames, undefined);
  const watch = new StuckWatch(limitMs);
  return {
    createWorkflow: async (options) =>
      watched(await creator.createWorkflow(options), watch, options),
    destroy: async () => {
      await watch.stop();
      await creator.destroy();
    },
  };
}
