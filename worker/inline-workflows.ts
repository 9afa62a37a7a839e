import vm from 'node:vm';
import { Worker as NodeWorker } from 'node:worker_threads';
import { native } from '@temporalio/core-bridge';
import type { CompiledWorkerOptions } from '@temporalio/worker';
import type {
  Workflow,
  WorkflowCreateOptions,
  WorkflowCreator,
} from '@temporalio/worker/lib/workflow/interface';
import {
  ReusableVMWorkflow,
  ReusableVMWorkflowCreator,
} from '@temporalio/worker/lib/workflow/reusable-vm';
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

/**
 * The globals that belong to one workflow in the shared sandbox: the SDK's runtime keeps the
 * running workflow's activator in `__TEMPORAL_ACTIVATOR__` (and the workflow modules' state
 * lives in that activator's module cache); everything else is the pristine, frozen sandbox.
 */
const WORKFLOW_GLOBALS = ['__TEMPORAL_ACTIVATOR__'] as const;

/**
 * Set up once in the sandbox: `__ENGINE_CALL_INTO_SCOPE` makes the workflow the call is for the
 * current one, then calls the SDK's workflow API. The SDK's own call (`__TEMPORAL_CALL_INTO_SCOPE`)
 * copies the descriptors of every global of the sandbox away and back whenever the call is for
 * another workflow than the last one (about 80 globals, each through Node's `vm` interceptors:
 * about 0.2 ms a switch, measured alone, at most calls when many payments run at once); here only
 * the workflow's own globals are swapped. The arguments travel through a closure (`post`), not
 * through a global.
 */
const CALL_INTO_SCOPE_SETUP = `(() => {
  const names = ${JSON.stringify(WORKFLOW_GLOBALS)};
  const api = globalThis.__TEMPORAL__.api;
  let current;
  let posted;
  Object.defineProperty(globalThis, '__ENGINE_CALL_INTO_SCOPE', {
    value: () => {
      const [holder, fn, args] = posted;
      posted = undefined;
      if (current !== holder) {
        for (const name of names) {
          if (current !== undefined) current[name] = globalThis[name];
          globalThis[name] = holder[name];
        }
        current = holder;
      }
      return api[fn](...args);
    },
    writable: false,
    enumerable: false,
    configurable: false,
  });
  return (holder, fn, args) => {
    posted = [holder, fn, args];
  };
})()`;
const callIntoScope = new vm.Script('__ENGINE_CALL_INTO_SCOPE()');

/**
 * The globals that differ from the pristine sandbox, but for the workflow's own: none, unless
 * workflow code (or the SDK's runtime) keeps state in a global, which the swap above would then
 * share between workflows. Checked after every call with `checkGlobals` (the workflow tests):
 * such a global is put back as it was and the call fails (the workflow task with it).
 */
const STRAY_GLOBALS = `(() => {
  const pristine = globalThis.__ENGINE_PRISTINE;
  const own = new Set([
    ...${JSON.stringify(WORKFLOW_GLOBALS)},
    '__ENGINE_CALL_INTO_SCOPE',
    '__ENGINE_PRISTINE',
  ]);
  const stray = [];
  for (const key of new Set([...Reflect.ownKeys(globalThis), ...Reflect.ownKeys(pristine)])) {
    if (own.has(key)) continue;
    const now = Reflect.getOwnPropertyDescriptor(globalThis, key);
    const was = pristine[key];
    if (!Object.is(now?.value, was?.value) || now?.get !== was?.get || now?.set !== was?.set) {
      stray.push(String(key));
      // Put back as it was, so that the next workflow finds the sandbox pristine.
      if (was) Object.defineProperty(globalThis, key, was);
      else delete globalThis[key];
    }
  }
  return stray;
})()`;

/**
 * The SDK's reusable sandbox (one V8 context for every workflow, its modules evaluated once),
 * with a cheaper switch between workflows (CALL_INTO_SCOPE_SETUP above).
 */
class EngineVMWorkflowCreator extends ReusableVMWorkflowCreator {
  private post?: (holder: object, fn: string | symbol, args: unknown[]) => void;
  private watch?: StuckWatch;
  private strayGlobals?: vm.Script;

  static async build(
    bundle: WorkflowBundleWithSourceMapAndFilename,
    activityNames: Set<string>,
    watch: StuckWatch,
    checkGlobals: boolean,
  ): Promise<EngineVMWorkflowCreator> {
    // No timeout: the watch does the watching.
    const creator = await this.create(bundle, undefined as unknown as number, activityNames);
    const context = creator.context;
    creator.post = vm.runInContext(CALL_INTO_SCOPE_SETUP, context) as typeof creator.post;
    creator.watch = watch;
    if (checkGlobals) {
      Object.defineProperty(context, '__ENGINE_PRISTINE', {
        value: (creator as unknown as { pristineObj: object }).pristineObj,
      });
      creator.strayGlobals = new vm.Script(STRAY_GLOBALS);
    }
    return creator;
  }

  /** Calls `fn` of the SDK's workflow API in the sandbox, for the workflow of `holder`. */
  private call(holder: object, who: string, fn: string | symbol, args: unknown[]): unknown {
    const context = this.context;
    this.post!(holder, fn, args);
    const result = this.watch!.around(who, () => callIntoScope.runInContext(context) as unknown);
    const found = this.strayGlobals?.runInContext(context) as string[] | undefined;
    if (found?.length) {
      throw new Error(
        `A workflow left globals of its own in the shared sandbox: ${found.join(', ')}`,
      );
    }
    return result;
  }

  override createWorkflow(options: WorkflowCreateOptions): Promise<Workflow> {
    const { workflowType, workflowId, runId } = options.info;
    const who = JSON.stringify({ workflowType, workflowId, runId });
    const holder = {};
    const calls: SandboxCalls = new Proxy(
      {},
      {
        get:
          (_, fn) =>
          (...args: unknown[]) =>
            this.call(holder, who, fn, args),
      },
    );
    calls.initRuntime!({
      ...options,
      sourceMap: this.workflowBundle.sourceMap,
      getTimeOfDay: native.getTimeOfDay,
      registeredActivityNames: this.registeredActivityNames,
      stackTracesEnabled: false,
      patchActivationCallback: undefined,
    });
    type Parameters = ConstructorParameters<typeof ReusableVMWorkflow>;
    const workflow = new ReusableVMWorkflow(
      runId,
      this.context,
      this.context.__TEMPORAL_ACTIVATOR__ as Parameters[2],
      calls as unknown as Parameters[3],
    );
    ReusableVMWorkflowCreator.workflowByRunId.set(runId, workflow);
    return Promise.resolve(workflow);
  }

  override async destroy(): Promise<void> {
    await this.watch?.stop();
    await super.destroy();
  }
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
  checkGlobals = false,
): Promise<WorkflowCreator> {
  globalHandlers.installed = true;
  const activityNames = new Set(compiled.activities.keys());
  return EngineVMWorkflowCreator.build(
    bundle,
    activityNames,
    new StuckWatch(limitMs),
    checkGlobals,
  );
}
