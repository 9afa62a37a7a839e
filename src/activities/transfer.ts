import { recordAnswer, recordMoneyStep, recordMoneyStepAtOnce } from '../db/money-steps';
import type { DatabasePool } from '../db/pool';
import { transactionRecord, type TransactionRow } from '../db/transactions';
import { lockTransferWallets, transferGuard } from '../db/transfers';
import type { Currency } from '../domain/money';
import { rememberWalletCurrencies, type WalletCurrencyMemory } from '../db/wallets';
import { transferPostings } from '../domain/ledger';
import { workflowIds } from '../workflows/ids';
import type { TransactionRecord, TransferInput } from '../workflows/shared';
import { transactionEventData } from './events';
import { refuseUnlessAll } from './money-rules';
import { transferRules } from '../domain/money-rules';

/**
 * A transfer's money step (src/db/money-steps.ts): its payment row, ledger postings, event and answer,
 * in a database transaction whose `now()` is `at` (none for a step written in one statement,
 * which takes the statement's). An atomic batch's items are these too.
 */
export function transferStep(input: TransferInput, currency: Currency, at?: string) {
  const amount = BigInt(input.amount);
  return {
    transaction: {
      id: input.transactionId,
      applicationId: input.applicationId,
      mode: input.mode,
      type: 'transfer' as const,
      status: 'completed' as const,
      currency,
      amount,
      walletId: input.fromWalletId,
      recipientWalletId: input.toWalletId,
      description: input.description,
      merchantMetadata: input.metadata,
      workflowId: workflowIds.transfer(input.transactionId),
    },
    ledger: {
      postings: transferPostings(input.fromWalletId, input.toWalletId, currency, amount),
    },
    event: { type: 'transfer.completed', data: transactionEventData },
    ...recordAnswer(input, input.answer),
    at,
  };
}

/**
 * Moves money between two wallets in one database transaction, locking both accounts in the fixed
 * order so that concurrent transfers cannot deadlock; running it again for the same transaction id
 * changes nothing. See docs/architecture.md, The transfer path.
 */
export function createTransferActivities(deps: {
  pool: DatabasePool;
  /** Wallet currencies seen (src/db/wallets.ts); none to start with when absent. */
  walletCurrencies?: WalletCurrencyMemory;
}) {
  const currencies = deps.walletCurrencies ?? new Map<string, Currency>();

  const written = (input: TransferInput, row: TransactionRow) => ({
    transactionId: input.transactionId,
    transaction: transactionRecord(row),
    ...(input.answer && { answered: true as const }),
  });

  /**
   * The transfer in one statement (src/db/money-steps.ts) once both wallets' currencies are remembered;
   * its guard checks them again. Null when its checks do not all pass: it then wrote nothing (a
   * decline, a switched currency, a transfer already written): the usual way runs and says why.
   */
  async function atOnce(input: TransferInput) {
    const currency = currencies.get(input.fromWalletId);
    if (currency === undefined || currencies.get(input.toWalletId) !== currency) return null;
    const step = transferStep(input, currency);
    return recordMoneyStepAtOnce(
      deps.pool,
      step,
      transferGuard({ ...input, currency, amount: step.transaction.amount }),
    );
  }

  async function transferFunds(
    input: TransferInput,
  ): Promise<{ transactionId: string; transaction?: TransactionRecord; answered?: true }> {
    const amount = BigInt(input.amount);
    const fast = await atOnce(input);
    if (fast) return written(input, fast);
    return deps.pool.transaction(async (trx) => {
      const rows = await lockTransferWallets(trx, input.transactionId, [
        input.fromWalletId,
        input.toWalletId,
      ]);
      rememberWalletCurrencies(currencies, rows);
      if (rows[0]?.done) return { transactionId: input.transactionId };
      const found = (id: string) => rows.find((w) => w.id === id) ?? null;
      const from = found(input.fromWalletId);
      refuseUnlessAll(transferRules, {
        subjects: { from, to: found(input.toWalletId) },
        params: { ...input, amount },
      });
      const row = await recordMoneyStep(trx, transferStep(input, from!.currency, from!.at));
      return written(input, row);
    });
  }
  return { transferFunds };
}
