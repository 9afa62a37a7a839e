import { proxyActivities, uuid4 } from '@temporalio/workflow';
import type { Activities } from './activities-types';
import { asDeclined } from './declines';
import { activityPresets } from './retry';
import type { ReconAdjusted, ReconAdjustInput } from './recon-adjust-shared';
import type { Declined } from './shared';

const { adjustReconExceptionStep } = proxyActivities<Activities>(activityPresets.ledger);

/**
 * `recon-adjust-<exception id>`: the adjustment's one ledger step (docs/api.md, Reconciliation).
 * A decline (insufficient funds, already resolved) is the result, nothing written.
 */
export async function reconAdjustWorkflow(
  input: ReconAdjustInput,
): Promise<ReconAdjusted | Declined> {
  try {
    return await adjustReconExceptionStep({ ...input, adjustmentId: uuid4() });
  } catch (error) {
    const declined = asDeclined(error);
    if (!declined) throw error;
    return declined;
  }
}
