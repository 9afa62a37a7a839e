import { Context } from '@temporalio/activity';

/** How often a long activity tells the server it is alive: well inside its heartbeat timeout. */
export const HEARTBEAT_EVERY_MS = 5_000;

/**
 * Runs `work` while heartbeating at a steady pace, so that a worker lost mid-way (`kill -9`)
 * shows within the activity's heartbeat timeout and another attempt starts, not at its end.
 */
export async function whileBeating<T>(work: () => Promise<T>): Promise<T> {
  const context = Context.current();
  const beat = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}
