import { ApplicationFailure } from '@temporalio/workflow';
import { ActivityFailure, RetryState, TimeoutFailure } from '@temporalio/common';
import { isErrorCode } from '../domain/errors';
import type { Declined } from './shared';

/**
 * A non-retryable application failure typed with one of our error codes is a business decline
 * (wrapped in an ActivityFailure, or bare from a local activity). Anything else is not: the caller
 * rethrows it, so that it stays visible as a failure instead of a silent 4xx.
 */
export function asDeclined(error: unknown): Declined | null {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (!(cause instanceof ApplicationFailure) || !cause.nonRetryable) return null;
  if (!isErrorCode(cause.type)) return null;
  // A message that is only the code carries no specific detail (src/activities/declines.ts).
  const detail = cause.message && cause.message !== cause.type ? cause.message : null;
  return { status: 'declined', code: cause.type, detail };
}

/**
 * A provider call that used up its bounded retry (a fault, never a decline). A local activity's
 * failure comes bare, and only once its retry has ended: then a retryable one means exhausted.
 */
export function exhausted(error: unknown): boolean {
  if (error instanceof ActivityFailure) {
    return error.retryState === RetryState.MAXIMUM_ATTEMPTS_REACHED;
  }
  return (
    (error instanceof ApplicationFailure && !error.nonRetryable) || error instanceof TimeoutFailure
  );
}
