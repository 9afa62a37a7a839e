import type { MoneyOutInput, MoneyOutOutcome } from './money-out-shared';
import { moneyOutSaga } from './money-out';

/**
 * A mobile-money cashout (`cashout-<id>`): the money-out saga (src/workflows/money-out.ts) with the
 * mobile-money provider's payout as its provider step. Its own name, so that an operator sees
 * cashouts apart from card payouts in the Temporal UI.
 */
export async function mobileMoneyCashoutWorkflow(input: MoneyOutInput): Promise<MoneyOutOutcome> {
  return moneyOutSaga({ ...input, kind: 'cashout' });
}
