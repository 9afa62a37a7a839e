import { ApplicationFailure } from '@temporalio/activity';
import { isPermanentDatabaseError } from '../db/errors';
import type { ErrorCode } from '../domain/errors';

/**
 * A business decline: not retried, and carried to the API as its code. `detail` only when it
 * says more than the code's standard message (which lives at the edge, src/api/errors.ts); the
 * failure's message is then the code itself, so that the workflow's history still reads.
 */
export function decline(
  code: ErrorCode,
  detail?: string,
  options: { cause?: Error } = {},
): ApplicationFailure {
  return ApplicationFailure.create({
    type: code,
    message: detail ?? code,
    nonRetryable: true,
    cause: options.cause,
  });
}

/** What the caller reads when the database refused a value of the request. */
const UNSTORABLE =
  'The request holds a value that cannot be stored (for example a NUL character in a text field)';

/**
 * Money-step activities, with a database error that no retry can cure turned into a decline:
 * otherwise Temporal would retry it for as long as the workflow lives. Transient errors pass
 * through and are retried.
 */
export function declinePermanentDatabaseErrors<
  T extends Record<string, (...args: never[]) => Promise<unknown>>,
>(activities: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, run] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      try {
        return await run(...args);
      } catch (error) {
        if (isPermanentDatabaseError(error)) {
          // The cause (the database's own message) stays in the workflow's history for
          // operators; the caller reads only UNSTORABLE.
          throw decline('validation_failed', UNSTORABLE, {
            cause: error instanceof Error ? error : undefined,
          });
        }
        throw error;
      }
    };
  }
  return wrapped as T;
}
