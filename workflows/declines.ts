import { ApplicationFailure } from '@temporalio/workflow';
import { ActivityFailure, RetryState } from '@temporalio/common';
import { isErrorCode } from '../domain/errors';
import type { Declined } from './shared';

/**
 * A non-retryable application failure whose type is one of our error codes is a business
 * decline. A remote activity's arrives wrapped in an ActivityFailure; a local activity's may
 * arrive bare. Anything else (an unknown type included) is not a decline: the caller rethrows
 * it, so that it stays visible as a failed workflow task or workflow instead of a silent 4xx.
 *
 * The failure's message is the decline's specific detail, or the code itself when there is
 * none (activities/declines.ts); the API edge then answers the code's standard message.
 */
export function asDeclined(error: unknown): Declined | null {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (!(cause instanceof ApplicationFailure) || !cause.nonRetryable) return null;
  if (!isErrorCode(cause.type)) return null;
  const detail = cause.message && cause.message !== cause.type ? cause.message : null;
  return { status: 'declined', code: cause.type, detail };
}

/** A provider call that used up its bounded retry (a fault, never a decline). */
export const exhausted = (error: unknown): boolean =>
  error instanceof ActivityFailure && error.retryState === RetryState.MAXIMUM_ATTEMPTS_REACHED;
