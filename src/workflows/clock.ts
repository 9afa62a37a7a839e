import { condition, setHandler } from '@temporalio/workflow';
import {
  ADVANCE_SECONDS,
  clockUpdates,
  LIVE_MODE_CLOCK,
  NOT_WAITING_ON_A_TIMER,
} from './clock-shared';

/** The one way a payment workflow waits on time (see `paymentClock`). */
export type PaymentClock = {
  /**
   * Waits until `done` holds (true) or `ms` of the payment's clock have passed (false): then
   * `onDeadline` runs, the step the deadline calls for, before this answers. With no advance it
   * is exactly `condition(done, ms)`: the same timer, the same commands.
   */
  wait(done: () => boolean, ms: number, onDeadline?: () => Promise<unknown>): Promise<boolean>;
  /** The payment's time: workflow time plus its offset (ms since the epoch). */
  now(): number;
};

/**
 * A payment's clock (docs/architecture.md, Test clocks): workflow time plus an offset that only the
 * Test Mode `advanceTime` update moves, rebuilt from history on replay. Without an advance a wait
 * is the old `condition(done, ms)`, so old histories replay with no `patched` branch.
 */
export function paymentClock(
  mode: 'test' | 'live',
  options: {
    /**
     * Counts as waiting from its creation until its first wait begins: a workflow whose first
     * task also brings an advance (one woken to take it) accepts it; that first wait's `ms` is
     * then measured from the advanced clock. Without it, the clock is as it always was.
     */
    waitsFromStart?: boolean;
  } = {},
): PaymentClock {
  let offsetMs = 0;
  /** Advances accepted, and the last one every wait has acted on. */
  let advances = 0;
  let actedOn = 0;
  /** The first wait, counted in `waiting` before it begins (`waitsFromStart`). */
  let reserved = options.waitsFromStart === true;
  /** Waits on a timer now, and deadline steps running now. */
  let waiting = reserved ? 1 : 0;
  let acting = 0;

  setHandler(
    clockUpdates.advanceTime,
    async ({ seconds }) => {
      offsetMs += seconds * 1000;
      const advance = ++advances;
      await condition(() => actedOn >= advance || (waiting === 0 && acting === 0));
      return { offsetMs };
    },
    {
      validator: ({ seconds }: { seconds: number }) => {
        if (mode !== 'test') throw new Error(LIVE_MODE_CLOCK);
        if (
          !Number.isInteger(seconds) ||
          seconds < ADVANCE_SECONDS.min ||
          seconds > ADVANCE_SECONDS.max
        ) {
          throw new Error(`seconds: ${ADVANCE_SECONDS.min} to ${ADVANCE_SECONDS.max}`);
        }
        if (waiting === 0) throw new Error(NOT_WAITING_ON_A_TIMER);
      },
    },
  );

  const now = () => Date.now() + offsetMs;

  async function wait(
    done: () => boolean,
    ms: number,
    onDeadline?: () => Promise<unknown>,
  ): Promise<boolean> {
    const deadline = now() + ms;
    let seen = advances;
    let timeout = ms;
    let reached = false;
    if (reserved) {
      // Advances taken before it are in `now()` already, so in its deadline: acted on.
      reserved = false;
      actedOn = advances;
    } else {
      waiting++;
    }
    try {
      for (;;) {
        if (!(await condition(() => done() || advances !== seen, timeout))) break;
        if (done()) {
          reached = true;
          break;
        }
        seen = advances;
        timeout = deadline - now();
        if (timeout <= 0) break;
        actedOn = seen;
      }
    } finally {
      waiting--;
    }
    if (reached) {
      actedOn = advances;
      return true;
    }
    acting++;
    try {
      await onDeadline?.();
    } finally {
      acting--;
      actedOn = advances;
    }
    return false;
  }

  return { wait, now };
}
