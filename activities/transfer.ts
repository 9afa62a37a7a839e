import { recordAnswer, recordMoneyStep } from '../db/money-steps';
import type { DatabasePool } from '../db/pool';
import { transactionRecord } from '../db/transactions';
import { lockTransferWallets } from '../db/transfers';
import { transferPostings } from '../domain/ledger';
import { workflowIds } from '../workflows/ids';
import type { TransactionRecord, TransferInput } from '../workflows/shared';
import { decline } from './declines';
import { transactionEventData } from './events';
import { checkWallet } from './wallet-checks';

/**
 * Moves money between two wallets in one database transaction: locks both accounts in the
 * fixed order, checks them, writes the payment record, the balanced ledger transaction and the
 * `transfer.completed` event. Running it again for the same transaction id changes nothing.
 */
export function createTransferActivities(deps: { pool: DatabasePool }) {
  async function transferFunds(
    input: TransferInput,
  ): Promise<{ transactionId: string; transaction?: TransactionRecord; answered?: true }> {
    const amount = BigInt(input.amount);
    return deps.pool.transaction(async (trx) => {
      const rows = await lockTransferWallets(trx, input.transactionId, [
        input.fromWalletId,
        input.toWalletId,
      ]);
      if (rows[0]?.done) return { transactionId: input.transactionId };
      const from = rows.find((w) => w.id === input.fromWalletId);
      const to = rows.find((w) => w.id === input.toWalletId);
      if (!from || !to) throw decline('wallet_not_found');
      const scope = { application_id: input.applicationId, mode: input.mode };
      checkWallet(from, scope);
      checkWallet(to, scope);
      if (from.currency !== to.currency) {
        throw decline('invalid_request', 'Wallets hold different currencies');
      }
      if (from.balance < amount) throw decline('insufficient_funds');

      const row = await recordMoneyStep(trx, {
        transaction: {
          id: input.transactionId,
          applicationId: input.applicationId,
          mode: input.mode,
          type: 'transfer',
          status: 'completed',
          currency: from.currency,
          amount,
          walletId: from.id,
          recipientWalletId: to.id,
          description: input.description,
          workflowId: workflowIds.transfer(input.transactionId),
        },
        ledger: { postings: transferPostings(from.id, to.id, from.currency, amount) },
        event: { type: 'transfer.completed', data: transactionEventData },
        ...recordAnswer(input, input.answer),
        at: from.at,
      });
      return {
        transactionId: input.transactionId,
        transaction: transactionRecord(row),
        ...(input.answer && { answered: true as const }),
      };
    });
  }
  return { transferFunds };
}
