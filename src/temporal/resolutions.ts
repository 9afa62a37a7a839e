import type { InjectedSinks } from '@temporalio/worker';
import { paymentResolutions } from '../observability/metrics';
import type { ResolutionSinks } from '../workflows/resolution';

/**
 * The `operators` sink (src/workflows/resolution.ts): a payment workflow that an operator's
 * resolution settled counts it in this worker's metrics, by the payment's type (its search
 * attribute, as the workflow reads it) and the outcome it ended with. Never during replay, so a resolution counts once.
 */
export const resolutionSinks: InjectedSinks<ResolutionSinks> = {
  operators: {
    resolved: {
      fn: (_info, { type, outcome }) => paymentResolutions.inc({ type, outcome }),
      callDuringReplay: false,
    },
  },
};
