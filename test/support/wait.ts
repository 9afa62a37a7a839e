import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';

/**
 * Asks `check` every `intervalMs` until it holds or `timeoutMs` has passed, and answers whether
 * it held, so that the test asserts with its own message.
 */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  intervalMs = 200,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(intervalMs);
  }
}

/**
 * Reads `read` every `intervalMs` until `done` holds for what it read or `timeoutMs` has passed,
 * and answers the last value read: the test asserts on it, so a timeout fails with the value.
 */
export async function pollUntil<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() >= deadline) return value;
    await sleep(options.intervalMs ?? 200);
  }
}

/**
 * The ids of the workflows a List Filter finds, sorted, asked again while Temporal's visibility
 * (eventually consistent) catches up, until `done` holds for them or `timeoutMs` has passed.
 */
export function listWorkflowIds(
  client: Client,
  query: string,
  done: (ids: string[]) => boolean = (ids) => ids.length > 0,
  timeoutMs = 12_000,
): Promise<string[]> {
  return pollUntil(
    async () => {
      const ids: string[] = [];
      for await (const workflow of client.workflow.list({ query })) ids.push(workflow.workflowId);
      return ids.sort();
    },
    done,
    { timeoutMs },
  );
}

/**
 * What `promise` settles to, or `otherwise` when it has not settled within `ms`. The timer is
 * cleared either way: a timer left running keeps the jest worker from exiting.
 */
export async function within<T, U>(promise: Promise<T>, ms: number, otherwise: U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<U>((resolve) => {
        timer = setTimeout(resolve, ms, otherwise);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
