import type { DatabasePool } from '../db/pool';
import { adjustReconException } from '../db/recon-resolutions';
import type { ReconAdjustStep, ReconAdjusted } from '../workflows/recon-adjust-shared';
import { decline } from './declines';

/** The `adjust` resolution's money step (docs/api.md, Reconciliation), on the maintenance queue. */
export function createReconAdjustmentActivities(deps: { pool: DatabasePool }) {
  /**
   * One database transaction; a refusal is a decline, nothing written. Run again after it
   * committed, it finds its own adjustment (by id) and answers it again.
   */
  async function adjustReconExceptionStep(input: ReconAdjustStep): Promise<ReconAdjusted> {
    const outcome = await adjustReconException(deps.pool, input);
    if ('refused' in outcome) {
      switch (outcome.refused) {
        case 'insufficient_funds':
          throw decline('insufficient_funds');
        case 'resolved':
          throw decline('invalid_request', 'The exception is already resolved');
        case 'not_found':
        case 'forbidden':
          throw decline('not_found', 'Exception not found');
        case 'not_adjustable':
          throw decline('invalid_request', outcome.detail);
      }
    }
    const { adjustment } = outcome;
    return {
      status: 'adjusted',
      exceptionId: input.exceptionId,
      adjustmentId: adjustment.id,
      ledgerTransactionId: adjustment.ledgerTransactionId,
      walletId: adjustment.walletId,
      amount: adjustment.amount.toString(),
      currency: adjustment.currency,
    };
  }
  return { adjustReconExceptionStep };
}
