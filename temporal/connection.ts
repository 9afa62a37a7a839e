import {
  Connection,
  defaultGrpcRetryOptions,
  type GrpcRetryOptions,
  isGrpcServiceError,
  makeGrpcRetryInterceptor,
  WorkflowNotFoundError,
} from '@temporalio/client';

/** gRPC UNAVAILABLE: the server could not be reached. */
export const GRPC_UNAVAILABLE = 14;

/** How gRPC details an UNAVAILABLE call that never left this process (no connection). */
export const NEVER_SENT = /^No connection established/;

/** An UNAVAILABLE call that did leave: lost on the way, it may have taken effect. */
const lostAfterSending = (status: { code: number; details?: string }) =>
  status.code === GRPC_UNAVAILABLE && !NEVER_SENT.test(status.details ?? '');

/**
 * A Temporal connection that fails fast while the server is down and recovers by itself: lazy,
 * UNAVAILABLE retried briefly (while nothing was sent) instead of the SDK's long retries, quick
 * reconnection. Other retryable failures (RESOURCE_EXHAUSTED) keep the SDK's retries.
 */
export function openTemporalConnection(address: string): Connection {
  const quick = defaultGrpcRetryOptions({
    maxAttempts: 3,
    factor: 2,
    initialIntervalMs: () => 100,
  });
  const usual = defaultGrpcRetryOptions();
  const pick = (code: number): GrpcRetryOptions => (code === GRPC_UNAVAILABLE ? quick : usual);
  return Connection.lazy({
    address,
    connectTimeout: 1_000,
    interceptors: [
      makeGrpcRetryInterceptor({
        delayFunction: (attempt, status) => pick(status.code).delayFunction(attempt, status),
        // Not one lost after it was sent: a retry's failure would read as never sent, and the
        // API would answer "nothing started" (503) for a start that may have happened (504).
        retryableDecider: (attempt, status) =>
          !lostAfterSending(status) && pick(status.code).retryableDecider(attempt, status),
      }),
    ],
    channelArgs: {
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1_000,
    },
  });
}

/** gRPC NOT_FOUND: some calls (a history fetch, an update) are not wrapped by the SDK. */
const GRPC_NOT_FOUND = 5;

/** Whether Temporal answered that the workflow (or the running workflow) does not exist. */
export function isNotFound(error: unknown): boolean {
  if (error instanceof WorkflowNotFoundError) return true;
  if (isGrpcServiceError(error)) return Number(error.code) === GRPC_NOT_FOUND;
  const cause = (error as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== error && isNotFound(cause);
}
