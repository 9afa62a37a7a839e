/**
 * The `resolve` update that an operator's resolution of a stuck payment sends to its workflow. Its
 * argument (operator, reason, credential) stays in the history, where the timeline reads it. No
 * I/O here: workflow code imports it.
 */
import { ApplicationFailure } from '@temporalio/common';
import {
  defineUpdate,
  log,
  patched,
  proxySinks,
  setHandler,
  workflowInfo,
  type Sinks,
} from '@temporalio/workflow';
import type { AuditEntry } from '../domain/audit';
import { asDeclined, exhausted } from './declines';
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
  /**
   * Settle without the provider's answer when it cannot be reached; absent from resolutions
   * recorded before providers were asked. A provider that answers decides whatever this says.
   */
  force?: boolean;
  /** The audit log's entry, written with the settlement (absent from those recorded before). */
  audit?: AuditEntry;
};

/** Answers the payment's outcome once the resolution has settled it. */
export const resolveUpdate = defineUpdate<string, [Resolution]>('resolve');

/** The failure type of a resolution the payment refuses (its message says why). */
export const RESOLUTION_REFUSED = 'ResolutionRefused';

/** The failure type of a resolution refused because its provider could not be reached. */
export const RESOLUTION_UNREACHABLE = 'ResolutionProviderUnreachable';

/** Resolutions recorded before this patch settled without asking the provider. */
export const RESOLUTION_ASKS_PROVIDER_PATCH = 'resolution-asks-provider';

/**
 * The provider's answer to a resolution: the payment's status there after the cancel (outcome
 * `failed`) or the look (`completed`), in the payment's own words; unreachable when it could not
 * be asked, `detail` when it refused the request.
 */
export type ProviderAnswer =
  { reached: true; status: string; detail?: string } | { reached: false };

/** Why the provider's answer forbids `resolution`, or null when it allows it. */
export function providerRefusal(
  resolution: Pick<Resolution, 'outcome' | 'force'>,
  answer: ProviderAnswer,
): { type: string; detail: string } | null {
  if (!answer.reached) {
    if (resolution.force === true) return null;
    return {
      type: RESOLUTION_UNREACHABLE,
      detail:
        'The provider cannot be reached to confirm the outcome; resolve with force to settle ' +
        'without its answer',
    };
  }
  const agrees =
    resolution.outcome === 'completed'
      ? answer.status === 'completed'
      : answer.status === 'failed' || answer.status === 'expired';
  if (agrees) return null;
  const said =
    answer.status === REFUSED_REQUEST
      ? `The provider refused the request (${answer.detail ?? 'no reason given'})`
      : `The provider says the payment is ${answer.status}`;
  return {
    type: RESOLUTION_REFUSED,
    detail: `${said}: it cannot be resolved ${resolution.outcome}`,
  };
}

/** The status of an answer where the provider refused the cancel or the look itself. */
const REFUSED_REQUEST = 'refused';

/**
 * The provider's answer from an activity that answers the payment's status there: a decline is
 * a refusal of the request, an unconfigured provider or an exhausted retry is unreachable.
 */
export async function providerAnswer(call: () => Promise<string>): Promise<ProviderAnswer> {
  try {
    return { reached: true, status: await call() };
  } catch (error) {
    const declined = asDeclined(error);
    if (declined?.code === 'provider_unavailable' || (!declined && exhausted(error))) {
      return { reached: false };
    }
    if (!declined) throw error;
    return { reached: true, status: REFUSED_REQUEST, detail: declined.detail ?? declined.code };
  }
}

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
  if (r.force !== undefined && typeof r.force !== 'boolean') return 'force must be a boolean';
  return null;
}

/**
 * The `resolve` update: the validator refuses a malformed resolution or a payment not waiting
 * on its provider; an accepted one settles through the provider's path only once `ask` agrees.
 */
export function handleResolution(
  settle: (outcome: ResolutionOutcome, audit?: AuditEntry) => Promise<string>,
  state: () => ResolvableState,
  ask: (outcome: ResolutionOutcome) => Promise<ProviderAnswer>,
): void {
  let asking = false;
  setHandler(
    resolveUpdate,
    async (resolution) => {
      if (patched(RESOLUTION_ASKS_PROVIDER_PATCH)) {
        asking = true;
        const answer = await ask(resolution.outcome).finally(() => (asking = false));
        const refused = providerRefusal(resolution, answer);
        if (refused) throw ApplicationFailure.nonRetryable(refused.detail, refused.type);
        if (!answer.reached) {
          log.warn('payment resolved by force: its provider could not be reached', {
            outcome: resolution.outcome,
            operator: resolution.operator,
          });
        }
      }
      const ended = await settle(resolution.outcome, resolution.audit);
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
        const why =
          invalidResolution(resolution) ??
          resolutionRefusal(state()) ??
          (asking ? 'The payment is being resolved' : null);
        if (why) throw ApplicationFailure.nonRetryable(why, RESOLUTION_REFUSED);
      },
    },
  );
}
