import { ApplicationFailure } from '@temporalio/activity';
import type { ErrorCode } from '../domain/errors';

/** A business decline: not retried, and carried to the API as its error code and detail. */
export function decline(code: ErrorCode, detail: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(detail, code);
}
