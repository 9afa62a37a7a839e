import type { MoneyOutInput, MoneyOutOutcome } from './money-out-shared';
import { moneyOutSaga } from './money-out';

/**
 * A card payout (`payout-<id>`): the money-out saga (src/workflows/money-out.ts) with the card
 * provider's payout to the owner's debit card as its provider step. Its own name, so that an
 * operator sees card payouts apart from cashouts in the Temporal UI.
 */
export async function cardPayoutWorkflow(input: MoneyOutInput): Promise<MoneyOutOutcome> {
  return moneyOutSaga({ ...input, kind: 'payout' });
}
