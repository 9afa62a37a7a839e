'use strict';
/**
 * The workflow thread of the engine's worker (worker/engine-worker.ts): the SDK's own thread
 * script, run after one choice of ours. Unless `workerData.stackTraces`, the SDK's global
 * handlers are marked installed before its first workflow creator installs them, so the thread
 * has no promise hook: no stack trace captured and source-mapped at every promise a workflow
 * creates (the Temporal UI's "Stack Trace" query then answers that stack traces are not
 * enabled on this worker).
 */
const { workerData } = require('node:worker_threads');
const { globalHandlers } = require('@temporalio/worker/lib/workflow/vm-shared');

if (!workerData?.stackTraces) globalHandlers.installed = true;

require('@temporalio/worker/lib/workflow/workflow-worker-thread');
