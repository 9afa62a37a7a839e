import { condition, defineSignal, proxySinks, setHandler, type Sinks } from '@temporalio/workflow';

/** Never returns: the thread that runs it is stuck in it. */
export async function spinForever(): Promise<void> {
  await Promise.resolve();
  for (;;) {
    // A loop with no await: only ending the thread (or the process) that runs it ends it.
  }
}

/** Waits for ever, parked in `condition`: what the "Stack Trace" query shows. */
export async function waitForever(): Promise<void> {
  await condition(() => false);
}

export interface SaidSinks extends Sinks {
  said: { it(n: number): void };
}
const { said } = proxySinks<SaidSinks>();
export const go = defineSignal('go');

/** Says 1 in its first activation, then 2 and 3 in the one that the signal `go` wakes. */
export async function saysThrice(): Promise<void> {
  said.it(1);
  let going = false;
  setHandler(go, () => {
    going = true;
  });
  await condition(() => going);
  said.it(2);
  said.it(3);
}

/** Keeps state in a global of the sandbox the workflows share (which the engine forbids). */
export async function leavesAGlobal(): Promise<void> {
  (globalThis as Record<string, unknown>).leftBehind = 'by a workflow';
  await Promise.resolve();
}
