import type { InjectedSinks } from '@temporalio/worker';
import type { PaymentSinks, TransferResult } from '../workflows/shared';

/** Requests of this process waiting for a payment's settlement, by workflow id. */
const waiting = new Map<string, Set<(result: unknown) => void>>();

/**
 * The `payments` sink: a workflow run by this process's worker reports its settlement in the
 * activation that settles it, before the task completes, never on replay, so a request that
 * started it eagerly (src/api/workflow-starts.ts) hears at once instead of waiting on the server.
 */
export const paymentSinks: InjectedSinks<PaymentSinks> = {
  payments: {
    settled: {
      fn: (info, result) => {
        for (const resolve of waiting.get(info.workflowId) ?? []) resolve(result);
      },
      callDuringReplay: false,
    },
  },
};

/**
 * How long a payment started eagerly waits for this process's worker to report how it settled,
 * before it asks the server for the workflow's result (a step still retrying, a worker stopped).
 */
export const LOCAL_SETTLEMENT_MS = 3_000;

/**
 * Listens for the settlement of the payment `workflowId` by this process's worker, from now
 * on (before the start, so that none is missed): `within(ms)` answers it, or undefined when it
 * did not come in time; `stop()` forgets the listener (always call it).
 */
export function listenForSettlement(workflowId: string): {
  within: (ms: number) => Promise<unknown>;
  stop: () => void;
} {
  let heard: { result: unknown } | undefined;
  let wake: (() => void) | undefined;
  const listener = (result: unknown) => {
    heard ??= { result };
    wake?.();
  };
  const listeners = waiting.get(workflowId) ?? new Set();
  listeners.add(listener);
  waiting.set(workflowId, listeners);
  return {
    within: async (ms) => {
      if (!heard) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, ms);
        });
        clearTimeout(timer);
      }
      return heard?.result;
    },
    stop: () => {
      listeners.delete(listener);
      if (listeners.size === 0 && waiting.get(workflowId) === listeners) waiting.delete(workflowId);
    },
  };
}

/**
 * Which transfer results the worker's report may answer: committed money is committed (a rerun
 * of the task finds the step made and completes the same); a decline wrote nothing and a rerun
 * might not decline, so the server's recorded result answers it.
 */
export const transferAnsweredLocally = (result: TransferResult): boolean =>
  result.status === 'completed';
