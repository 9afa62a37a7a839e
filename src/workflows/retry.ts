import type { ActivityOptions, RetryPolicy } from '@temporalio/common';

/**
 * The activity retry presets of every workflow. Changing a preset changes no command a workflow
 * issues (only how the server retries an attempt), so recorded histories still replay.
 */
export const retryPresets = {
  /** A database step: quick first retries, never give up on a transient fault. */
  ledger: {
    initialInterval: '100 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '5 seconds',
  },
  /**
   * A provider call: slower retries, and a bound, so that a provider that keeps failing ends
   * the call (the workflow then decides) instead of retrying for ever.
   */
  provider: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 8,
  },
  /** A long step (a reconciliation's chunk or matching): slow retries, never giving up. */
  longStep: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
} as const satisfies Record<string, RetryPolicy>;

export const activityPresets = {
  /** Money steps: one database transaction each. */
  ledger: { startToCloseTimeout: '15 seconds', retry: retryPresets.ledger },
  /** The transfer's ledger step, run as a local activity in the workflow task. */
  transfer: { startToCloseTimeout: '10 seconds', retry: retryPresets.ledger },
  /** Provider calls get a longer timeout; they are safe to retry (idempotency key per deposit). */
  provider: { startToCloseTimeout: '30 seconds', retry: retryPresets.provider },
  /**
   * An operator's resolution asks the provider while the operator waits: few attempts, and a
   * provider still unreachable then is answered as such (the operator may force).
   */
  resolution: {
    startToCloseTimeout: '10 seconds',
    retry: { ...retryPresets.provider, maximumAttempts: 3 },
  },
  /** Housekeeping queries, with the server's default retry. */
  maintenance: { startToCloseTimeout: '1 minute' },
  /**
   * Reconciliation steps: a payment's sync waits for its workflow's provider call; a few
   * attempts, then the run records the error and the next run tries again.
   */
  reconciliation: {
    startToCloseTimeout: '2 minutes',
    retry: { ...retryPresets.ledger, maximumAttempts: 3 },
  },
  /**
   * One webhook POST (at most 10 s) and its record, an activity task on the webhook queue. It
   * retries only a fault of ours (the database, a lost worker) and an endpoint at its bound
   * (which says when); the merchant's failures are answers, retried by the workflow's timers.
   */
  webhookAttempt: { startToCloseTimeout: '20 seconds', retry: retryPresets.ledger },
  /**
   * The same, run as a local activity in the workflow task: a delivery's first attempt, and
   * every attempt of a delivery recorded before attempts were activity tasks.
   */
  webhookAttemptLocal: { startToCloseTimeout: '30 seconds', retry: retryPresets.ledger },
  /**
   * A page of a batch's transfers, started and waited for (src/activities/batches.ts): as long as
   * its payments take, heartbeating; a lost worker is noticed in 20 s and the retry attaches.
   */
  batchPage: {
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '20 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' },
  },
  /**
   * A reconciliation run's chunk of the provider's books (a provider call): heartbeating, so a
   * worker lost mid-chunk is noticed in 20 s rather than at the timeout.
   */
  reconBooks: {
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '20 seconds',
    retry: retryPresets.longStep,
  },
  /** A run's matching (one long transaction over its records) and its timers' starts: the same. */
  reconSteps: {
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: '20 seconds',
    retry: retryPresets.longStep,
  },
  /** The outbox relay's round: about a minute, heartbeating; a lost worker is noticed in 20 s. */
  webhookRelay: {
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: '20 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' },
  },
} as const satisfies Record<string, ActivityOptions>;
