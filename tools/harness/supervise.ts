import type { Logger } from '../../src/observability/logger';

/** A running child a supervisor watches: it settles `exited` when it dies, `stop` ends it. */
export type Supervised = { exited: Promise<unknown>; stop: () => Promise<void> };

export type SupervisorPolicy = {
  /** The first restart waits this long; each failure in the window doubles it, up to maxMs. */
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** More failures (deaths or failed restarts) than this within windowMs: give up. */
  maxFailures: number;
  windowMs: number;
};

export const DEFAULT_POLICY: SupervisorPolicy = {
  initialBackoffMs: 500,
  maxBackoffMs: 10_000,
  maxFailures: 5,
  windowMs: 120_000,
};

export type Supervisor = {
  /** How many times the child was restarted. */
  restarts: () => number;
  /** Stops watching: a death from now on is not restarted (the first step of a shutdown). */
  halt: () => void;
  /** Stops watching, then stops the child (waiting for a restart under way first). */
  stop: () => Promise<void>;
};

/**
 * Starts a child and keeps it running: when it dies it is started again after a backoff that
 * doubles with each failure in the window; after too many, `onGiveUp` hears why and the
 * supervisor stops trying. The first start is not retried: its failure is the caller's.
 */
export async function supervise(options: {
  name: string;
  start: () => Promise<Supervised>;
  logger: Logger;
  policy?: SupervisorPolicy;
  onGiveUp: (error: Error) => void;
}): Promise<Supervisor> {
  const policy = options.policy ?? DEFAULT_POLICY;
  const { name, logger } = options;
  let current = await options.start();
  let stopping = false;
  let restarts = 0;
  let wake: (() => void) | undefined;
  let restarting: Promise<void> = Promise.resolve();
  const failures: number[] = [];

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  /** Restarts until one start succeeds; false when it gave up (or is stopping). */
  const restart = async (): Promise<boolean> => {
    for (;;) {
      const now = Date.now();
      while (failures.length && now - failures[0]! > policy.windowMs) failures.shift();
      failures.push(now);
      if (failures.length > policy.maxFailures) {
        options.onGiveUp(
          new Error(
            `${name} failed ${failures.length} times within ${policy.windowMs / 1000} s: giving up`,
          ),
        );
        return false;
      }
      const delay = Math.min(
        policy.maxBackoffMs,
        policy.initialBackoffMs * 2 ** (failures.length - 1),
      );
      logger.warn({ delayMs: delay }, `restarting ${name}`);
      await pause(delay);
      if (stopping) return false;
      try {
        current = await options.start();
        restarts += 1;
        logger.info({ restarts }, `${name} restarted`);
        return true;
      } catch (error) {
        logger.error({ err: error }, `${name} did not restart`);
        if (stopping) return false;
      }
    }
  };

  void (async () => {
    for (;;) {
      await current.exited;
      if (stopping) return;
      logger.error(`${name} exited unexpectedly`);
      restarting = restart().then((ok) => {
        if (!ok) stopping = true;
      });
      await restarting;
      if (stopping) return;
    }
  })();

  const halt = () => {
    stopping = true;
    wake?.();
  };
  return {
    restarts: () => restarts,
    halt,
    stop: async () => {
      halt();
      await restarting;
      await current.stop();
    },
  };
}
