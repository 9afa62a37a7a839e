/**
 * The `resolve` update that an operator's resolution of a stuck payment sends to its workflow. Its
 * argument (operator, reason, credential) stays in the history, where the timeline reads it. No
 * I/O here: workflow code imports it.
 */
import { ApplicationFailure } from '@temporalio/common';
import {
  defineUpdate,
  proxySinks,
  setHandler,
  workflowInfo,
  type Sinks,
} from '@temporalio/workflow';
import { SearchAttributes } from './shared';

export const RESOLUTION_OUTCOMES = ['completed', 'failed'] as const;
export type ResolutionOutcome = (typeof RESOLUTION_OUTCOMES)[number];

/** The longest operator name and reason accepted (characters). */
export const RESOLUTION_LIMITS = { operator: 200, reason: 1000 } as const;

export type Resolution = {
  outcome: ResolutionOutcome;
  reason: string;
  operator: string;
  /** The admin credential that sent it (its id, never a secret); null from the command line. */
  adminId: string | null;
  via: 'api' | 'cli';
};

/** Answers the payment's outcome once the resolution has settled it. */
export const resolveUpdate = defineUpdate<string, [Resolution]>('resolve');

/** The failure type of a resolution the payment refuses (its message says why). */
export const RESOLUTION_REFUSED = 'ResolutionRefused';

/** Tells the worker's process of a resolution (its metric), never during replay. */
export interface ResolutionSinks extends Sinks {
  operators: { resolved(resolution: { type: string; outcome: string }): void };
}

/** Where a payment stands, as far as a resolution is concerned. */
export type ResolvableState = {
  /** The payment's outcome so far: `pending` until it settles. */
  outcome: string;
  /** A settlement (the provider's answer) is being written. */
  settling: boolean;
  /** The provider has the payment and the workflow waits for its answer. */
  waiting: boolean;
};

/** Why a payment cannot be resolved now, or null when it can. */
export function resolutionRefusal(state: ResolvableState): string | null {
  if (state.outcome !== 'pending') return `The payment is already ${state.outcome}`;
  if (state.settling) return 'The payment is being settled on its provider’s answer';
  if (!state.waiting) return 'The payment is not waiting on its provider';
  return null;
}

function invalidResolution(resolution: unknown): string | null {
  const r = resolution as Partial<Record<keyof Resolution, unknown>> | null;
  if (!r || typeof r !== 'object') return 'A resolution needs an outcome, a reason and an operator';
  if (!RESOLUTION_OUTCOMES.includes(r.outcome as ResolutionOutcome)) {
    return 'The outcome must be completed or failed';
  }
  for (const field of ['operator', 'reason'] as const) {
    const value = r[field];
    if (typeof value !== 'string' || !value.trim() || value.length > RESOLUTION_LIMITS[field]) {
      return `The ${field} must be 1 to ${RESOLUTION_LIMITS[field]} characters`;
    }
  }
  if (r.adminId !== null && typeof r.adminId !== 'string') return 'adminId must be an id or null';
  if (r.via !== 'api' && r.via !== 'cli') return 'via must be api or cli';
  return null;
}

/**
 * Registers the payment workflow's `resolve` update. The validator refuses, before anything
 * is written to the history, a malformed resolution and a payment that is not waiting on its
 * provider; an accepted one settles through `settle`, the very path of the provider's answer.
 */
export function handleResolution(
  settle: (outcome: ResolutionOutcome) => Promise<string>,
  state: () => ResolvableState,
): void {
  setHandler(
    resolveUpdate,
    async ({ outcome }) => {
      const ended = await settle(outcome);
      const info = workflowInfo();
      const type = info.typedSearchAttributes.get(SearchAttributes.PaymentType);
      proxySinks<ResolutionSinks>().operators.resolved({
        type: type ?? info.workflowType,
        outcome: ended,
      });
      return ended;
    },
    {
      validator: (resolution) => {
        const why = invalidResolution(resolution) ?? resolutionRefusal(state());
        if (why) throw ApplicationFailure.nonRetryable(why, RESOLUTION_REFUSED);
      },
    },
  );
}
