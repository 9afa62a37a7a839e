'use strict';
/**
 * The workflow thread of the engine's worker (worker/engine-worker.ts): the SDK's own thread
 * script, run after two choices of ours.
 *
 * - Unless `workerData.stackTraces`, the SDK's global handlers are marked installed before its
 *   first workflow creator installs them, so the thread has no promise hook: no stack trace
 *   captured and source-mapped at every promise a workflow creates (the Temporal UI's "Stack
 *   Trace" query then answers that stack traces are not enabled on this worker).
 * - The sink calls an activation made travel with its completion (`sinkCalls` beside the
 *   `completion`), taken from the workflow as the SDK's `extract-sink-calls` request would take
 *   them; the SDK's worker asks for them right after every activation, and the engine's side
 *   answers that from what came with the completion instead of a second request to this thread.
 *   A failed activation carries none: they stay in the workflow for the SDK's own request.
 */
const { parentPort, workerData } = require('node:worker_threads');
const { globalHandlers } = require('@temporalio/worker/lib/workflow/vm-shared');
const { ReusableVMWorkflowCreator } = require('@temporalio/worker/lib/workflow/reusable-vm');
const { VMWorkflowCreator } = require('@temporalio/worker/lib/workflow/vm');

if (!workerData?.stackTraces) globalHandlers.installed = true;

/** The run of each activation request not yet answered, by request id. */
const activations = new Map();
// Registered before the SDK's own listener (required below), so it sees each request first.
parentPort.on('message', (request) => {
  if (request?.input?.type === 'activate-workflow') {
    activations.set(request.requestId, request.input.runId);
  }
});

/** The sink calls of a run, as the SDK's thread hands them over (workflow-worker-thread.js). */
function takeSinkCalls(runId) {
  const workflow =
    ReusableVMWorkflowCreator.workflowByRunId.get(runId) ??
    VMWorkflowCreator.workflowByRunId.get(runId);
  if (workflow === undefined) return undefined;
  return workflow.activator.getAndResetSinkCalls().map((call) => {
    // A copy without the functions, which cannot cross to the other thread (the main thread's
    // side puts its own back, as it does for the SDK's request).
    const workflowInfo = { ...call.workflowInfo, unsafe: { ...call.workflowInfo.unsafe } };
    delete workflowInfo.unsafe.now;
    delete workflowInfo.unsafe.random;
    return { ...call, workflowInfo: structuredClone(workflowInfo) };
  });
}

const post = parentPort.postMessage.bind(parentPort);
parentPort.postMessage = (message, transfer) => {
  const runId = activations.get(message?.requestId);
  if (runId !== undefined) {
    activations.delete(message.requestId);
    const output = message.result?.type === 'ok' ? message.result.output : undefined;
    if (output?.type === 'activation-completion') {
      const sinkCalls = takeSinkCalls(runId);
      if (sinkCalls !== undefined) output.sinkCalls = sinkCalls;
    }
  }
  return post(message, transfer);
};

require('@temporalio/worker/lib/workflow/workflow-worker-thread');
