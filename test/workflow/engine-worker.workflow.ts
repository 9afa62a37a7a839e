import { condition, defineSignal, proxySinks, setHandler, type Sinks } from '@temporalio/workflow';

/** Never returns: the thread that runs it is stuck in it until the SDK's deadlock limit. */
export async function spinForever(): Promise<void> {
  await Promise.resolve();
  for (;;) {
    // A loop with no await: only the SDK's limit on one activation's run ends it.
  }
}

/** Answers at once: what a healthy workflow on the same worker does. */
export async function answers(): Promise<string> {
  await Promise.resolve();
  return 'answered';
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
