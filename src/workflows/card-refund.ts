import type { MoneyOutInput, MoneyOutOutcome } from './money-out-shared';
import { moneyOutSaga } from './money-out';

/**
 * A card refund (`refund-<id>`): the money-out saga (src/workflows/money-out.ts) with the card
 * provider's refund of the deposit's payment as its provider step. Its own name, so that an
 * operator sees refunds apart from payouts in the Temporal UI.
 */
export async function cardRefundWorkflow(input: MoneyOutInput): Promise<MoneyOutOutcome> {
  return moneyOutSaga({ ...input, kind: 'refund' });
}
