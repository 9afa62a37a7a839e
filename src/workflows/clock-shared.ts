/**
 * A Test Mode payment's own clock (docs/api.md, Test clocks): what the API and
 * the payment workflows share. No I/O here: workflow code imports it.
 */
import { defineUpdate } from '@temporalio/workflow';

/** How far one `advance-time` may move a payment's clock, in seconds (a year at most). */
export const ADVANCE_SECONDS = { min: 1, max: 31_536_000 } as const;

/** The refusal of a payment that waits on no timer (the API answers it as 400). */
export const NOT_WAITING_ON_A_TIMER = 'The payment is not waiting on a timer';

/** The refusal of a Live Mode payment: its timers are real time only. */
export const LIVE_MODE_CLOCK = 'Only a Test Mode payment has a test clock';

export type AdvanceTimeRequest = { seconds: number };

/** The payment clock's total offset from workflow time after the advance, in milliseconds. */
export type AdvanceTimeResult = { offsetMs: number };

export const clockUpdates = {
  /**
   * Moves the payment's clock forward; answers once the payment has acted on it (see
   * src/workflows/clock.ts). Refused by its validator, with nothing in the history, when the payment
   * is a Live Mode one or waits on no timer.
   */
  advanceTime: defineUpdate<AdvanceTimeResult, [AdvanceTimeRequest]>('advanceTime'),
};
