import { recordAudit } from '../db/audit-log';
import { lockAccounts } from '../db/ledger';
import { recordMoneyStep, type StepLedger } from '../db/money-steps';
import type { DatabasePool, DatabaseTransactionConnection } from '../db/pool';
import type { TransactionRow } from '../db/transactions';
import type { AuditEntry } from '../domain/audit';

/** A deposit's record: its payment row and its provider's metadata. */
type DepositBookRecord<M> = { row: TransactionRow; meta: M };

/** What a deposit's provider tells its completion: its record, its ledger step, its event. */
export type DepositBook<M> = {
  /** The deposit, locked for its settlement; it must exist. */
  lock(trx: DatabaseTransactionConnection, id: string): Promise<DepositBookRecord<M>>;
  /** The paid deposit's ledger transaction, and the accounts it posts to, in locking order. */
  credit(
    trx: DatabaseTransactionConnection,
    record: DepositBookRecord<M>,
  ): Promise<{ accounts: string[]; ledger: StepLedger }>;
  /** The data of its `deposit.completed` and `deposit.failed` events. */
  eventData(row: TransactionRow, meta: M): unknown;
};

/**
 * A deposit's completion steps, for any provider. Each is one database transaction that checks
 * the deposit is still pending first: a second run finds it settled and changes nothing.
 */
export function depositCompletion<M>(pool: DatabasePool, book: DepositBook<M>) {
  /** Paid: one ledger transaction, then the event, in the same database transaction. */
  async function complete(input: { transactionId: string; audit?: AuditEntry }): Promise<void> {
    await pool.transaction(async (trx) => {
      const record = await book.lock(trx, input.transactionId);
      const { row, meta } = record;
      if (row.status !== 'pending') return;
      const { accounts, ledger } = await book.credit(trx, record);
      await lockAccounts(trx, accounts);
      await recordMoneyStep(trx, {
        transaction: { id: row.id, status: 'completed' },
        ledger,
        event: {
          type: 'deposit.completed',
          data: (completed) => book.eventData(completed, meta),
        },
      });
      if (input.audit) await recordAudit(trx, input.audit);
    });
  }

  /** Failed or expired: no money moves; the record and the `deposit.failed` event say why. */
  async function close(input: {
    transactionId: string;
    status: 'failed' | 'expired';
    audit?: AuditEntry;
  }): Promise<void> {
    await pool.transaction(async (trx) => {
      const { row, meta } = await book.lock(trx, input.transactionId);
      if (row.status !== 'pending') return;
      await recordMoneyStep(trx, {
        transaction: { id: row.id, status: input.status },
        event: { type: 'deposit.failed', data: (closed) => book.eventData(closed, meta) },
      });
      if (input.audit) await recordAudit(trx, input.audit);
    });
  }

  return { complete, close };
}
