/**
 * Slonik's logger (roarr) adds an `error` listener to `process.stdout` when it loads, and jest
 * loads it again in every test file's module registry while the worker process, and its stdout,
 * lives on: after ten files, node warns of a listener leak. Each file removes its own when done.
 */
afterAll(() => {
  (globalThis as { ROARR?: { teardown?: () => void } }).ROARR?.teardown?.();
});
