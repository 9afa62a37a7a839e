import { sql, type DatabasePool } from 'slonik';
import { transferPostings } from '../domain/ledger';
import { postLedgerTransaction } from '../db/ledger';
import { insertEvent, insertTransaction } from '../db/transactions';
import { z } from 'zod';
import type { TransferInput } from '../workflows/shared';
import { decline } from './declines';
import { transactionEventData } from './events';

/** Both wallets, locked, with what the checks need, and whether this transfer already happened. */
const lockedWallet = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  is_active: z.boolean(),
  currency: z.enum(['USD', 'SLE']),
  balance: z.bigint(),
  done: z.boolean(),
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
      // One round trip: lock both wallets (user wallets only, so by id is the fixed order),
      // read their state, and learn whether a previous attempt already wrote this transfer.
      const rows = await trx.any(sql.type(lockedWallet)`
        SELECT a.id, w.application_id, w.mode, w.is_active, a.currency, a.balance,
          EXISTS (SELECT 1 FROM transactions t WHERE t.id = ${input.transactionId}) AS done
        FROM ledger_accounts a JOIN wallets w ON w.id = a.id
        WHERE a.id = ANY(${sql.array([input.fromWalletId, input.toWalletId], 'uuid')})
        ORDER BY a.id
        FOR NO KEY UPDATE OF a`);
      if (rows[0]?.done) return { transactionId: input.transactionId };
      const from = rows.find((w) => w.id === input.fromWalletId);
      const to = rows.find((w) => w.id === input.toWalletId);
      if (!from || !to) throw decline('not_found', 'Wallet not found');
      for (const w of [from, to]) {
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
