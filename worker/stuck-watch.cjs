'use strict';
/**
 * The watch over the workflows the engine's worker runs in its process's main thread
 * (worker/inline-workflows.ts), in a thread of its own: the main thread cannot watch itself
 * while a workflow's call holds it. `workerData.shared` holds the calls entered so far, whether
 * one is running, and who runs (the workflow's type, id and run as JSON); a call that runs for
 * `workerData.limitMs` is stuck (a workflow in a loop): the process is killed, after one line
 * on standard error that names the workflow, written from here because the main thread, which
 * owns the logger, is the one stuck.
 */
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');

const { shared, limitMs } = workerData;
const words = new Int32Array(shared, 0, 2);
const names = new Uint8Array(shared, 8);
const every = Math.max(10, Math.min(1_000, Math.floor(limitMs / 10)));

let seen = -1;
let since = Date.now();

function who() {
  const end = names.indexOf(0);
  const text = new TextDecoder().decode(names.slice(0, end < 0 ? names.length : end));
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

setInterval(() => {
  const call = Atomics.load(words, 0);
  if (Atomics.load(words, 1) === 0 || call !== seen) {
    seen = call;
    since = Date.now();
    return;
  }
  const ranMs = Date.now() - since;
  if (ranMs < limitMs) return;
  const entry = {
    time: new Date().toISOString(),
    level: 'ERROR',
    message: `A workflow has held the worker's thread for ${ranMs} ms (stuck in a loop?): killing the process, which its supervisor restarts`,
    ...who(),
  };
  writeSync(2, `${JSON.stringify(entry)}\n`);
  process.kill(process.pid, 'SIGKILL');
}, every);
