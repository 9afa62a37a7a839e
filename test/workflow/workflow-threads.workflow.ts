import { condition } from '@temporalio/workflow';

/** Never returns: the workflow thread is stuck in it. */
export async function spinForever(): Promise<void> {
  await Promise.resolve();
  for (;;) {
    // A loop with no await: only terminating the thread ends it.
  }
}

/** Waits for ever, parked in `condition`: what the "Stack Trace" query shows. */
export async function waitForever(): Promise<void> {
  await condition(() => false);
}
