import { sql, type DatabasePool } from 'slonik';
import { transferPostings } from '../domain/ledger';
import { lockAccounts, postLedgerTransaction } from '../db/ledger';
import { findTransaction, insertEvent, insertTransaction } from '../db/transactions';
import { z } from 'zod';
import type { TransferInput } from '../workflows/shared';
import { decline } from './declines';
import { transactionEventData } from './events';

const walletState = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  is_active: z.boolean(),
});

/**
 * Moves money between two wallets in one database transaction: locks both accounts in the
 * fixed order, checks them, writes the payment record, the balanced ledger transaction and the
 * `transfer.completed` event. Running it again for the same transaction id changes nothing.
 */
export function createTransferActivities(deps: { pool: DatabasePool }) {
  async function transferFunds(input: TransferInput): Promise<{ transactionId: string }> {
    const amount = BigInt(input.amount);
    return deps.pool.transaction(async (trx) => {
      if (await findTransaction(trx, input.transactionId)) {
        return { transactionId: input.transactionId };
      }
      const accounts = await lockAccounts(trx, [input.fromWalletId, input.toWalletId]);
      const wallets = await trx.any(sql.type(walletState)`
        SELECT id, application_id, mode, is_active FROM wallets
        WHERE id = ANY(${sql.array([input.fromWalletId, input.toWalletId], 'uuid')})`);
      const from = accounts.get(input.fromWalletId);
      const to = accounts.get(input.toWalletId);
      const fromWallet = wallets.find((w) => w.id === input.fromWalletId);
      const toWallet = wallets.find((w) => w.id === input.toWalletId);
      if (!from || !to || !fromWallet || !toWallet) throw decline('not_found', 'Wallet not found');
      for (const w of [fromWallet, toWallet]) {
        if (w.application_id !== input.applicationId || w.mode !== input.mode) {
          throw decline('forbidden', 'You do not have permission to access this wallet');
        }
        if (!w.is_active) throw decline('wallet_disabled', 'Wallet is disabled');
      }
      if (from.currency !== to.currency) {
        throw decline('invalid_request', 'Wallets hold different currencies');
      }
      if (from.balance < amount) throw decline('insufficient_funds', 'Insufficient funds');

      const transaction = await insertTransaction(trx, {
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
        workflowId: `transfer-${input.transactionId}`,
      });
      await postLedgerTransaction(trx, {
        applicationId: input.applicationId,
        mode: input.mode,
        transactionId: input.transactionId,
        kind: 'transfer',
        description: input.description,
        postings: transferPostings(from.id, to.id, from.currency, amount),
      });
      await insertEvent(trx, {
        applicationId: input.applicationId,
        mode: input.mode,
        type: 'transfer.completed',
        transactionId: input.transactionId,
        data: transactionEventData(transaction),
      });
      return { transactionId: input.transactionId };
    });
  }
  return { transferFunds };
}
