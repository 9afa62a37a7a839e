import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { findApplication } from '../db/applications';
import { lockAccounts, postLedgerTransaction, systemAccountId } from '../db/ledger';
import {
  findTransaction,
  insertEvent,
  insertTransaction,
  transactionColumns,
  transactionRow,
  type TransactionRow,
} from '../db/transactions';
import type { Posting } from '../domain/ledger';
import { basisPoints } from '../domain/money';
import {
  escrowWorkflowId,
  type EscrowStepResult,
  type HoldInput,
  type RefundRequest,
  type ReleaseRequest,
} from '../workflows/shared';
import { decline } from './declines';
import { transactionEventData } from './events';

const walletState = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  is_active: z.boolean(),
  currency: z.enum(['USD', 'SLE']),
});

async function walletStates(trx: DatabaseTransactionConnection, ids: string[]) {
  const rows = await trx.any(sql.type(walletState)`
    SELECT w.id, w.application_id, w.mode, w.is_active, a.currency
    FROM wallets w JOIN ledger_accounts a ON a.id = w.id
    WHERE w.id = ANY(${sql.array(ids, 'uuid')})`);
  return new Map(rows.map((r) => [r.id, r]));
}

/** A wallet that may take part: it exists, it is the application's and mode's, it is active. */
function checkWallet(
  wallet: z.infer<typeof walletState> | undefined,
  hold: { application_id: string; mode: string },
): void {
  if (!wallet) throw decline('not_found', 'Wallet not found');
  if (wallet.application_id !== hold.application_id || wallet.mode !== hold.mode) {
    throw decline('forbidden', 'You do not have permission to access this wallet');
  }
  if (!wallet.is_active) throw decline('wallet_disabled', 'Wallet is disabled');
}

async function lockHold(
  trx: DatabaseTransactionConnection,
  holdId: string,
): Promise<TransactionRow> {
  const hold = await trx.maybeOne(sql.type(transactionRow)`
    SELECT ${transactionColumns}
    FROM transactions WHERE id = ${holdId} AND transaction_type = 'escrow_hold' FOR NO KEY UPDATE`);
  if (!hold) throw new Error(`escrow hold ${holdId} has no record`);
  return hold;
}

/** The step already written under this id (a retried activity or update): its result again. */
async function alreadyDone(
  trx: DatabaseTransactionConnection,
  id: string,
  hold: TransactionRow,
): Promise<EscrowStepResult | null> {
  const done = await findTransaction(trx, id);
  return done
    ? { status: 'done', transactionId: done.id, remaining: hold.escrow_amount.toString() }
    : null;
}

const notHeld = () => decline('invalid_request', 'The escrow transaction is not in held status');

/**
 * Escrow money steps, each one database transaction: the payment record, one balanced ledger
 * transaction and its event. Each is idempotent by its own transaction id.
 */
export function createEscrowActivities(deps: { pool: DatabasePool }) {
  const { pool } = deps;

  async function holdFunds(input: HoldInput): Promise<EscrowStepResult> {
    const amount = BigInt(input.amount);
    return pool.transaction(async (trx) => {
      const existing = await findTransaction(trx, input.holdId);
      if (existing)
        return {
          status: 'done',
          transactionId: existing.id,
          remaining: existing.escrow_amount.toString(),
        };
      const wallets = await walletStates(trx, [input.walletId]);
      const scope = { application_id: input.applicationId, mode: input.mode };
      const wallet = wallets.get(input.walletId);
      checkWallet(wallet, scope);
      const escrow = await systemAccountId(
        trx,
        input.applicationId,
        input.mode,
        'escrow',
        wallet!.currency,
      );
      // One lock, in the fixed order: the sender's wallet, then the escrow account.
      const sender = (await lockAccounts(trx, [input.walletId, escrow])).get(input.walletId)!;
      if (sender.balance < amount) throw decline('insufficient_funds', 'Insufficient funds');
      const hold = await insertTransaction(trx, {
        id: input.holdId,
        applicationId: input.applicationId,
        mode: input.mode,
        type: 'escrow_hold',
        status: 'held',
        currency: sender.currency,
        amount,
        escrowAmount: amount,
        walletId: input.walletId,
        escrowWalletId: escrow,
        recipientWalletId: input.recipientWalletId,
        description: input.description,
        workflowId: escrowWorkflowId(input.holdId),
        metadata: { expires_at: input.expiresAt },
      });
      await postLedgerTransaction(trx, {
        applicationId: input.applicationId,
        mode: input.mode,
        transactionId: hold.id,
        kind: 'escrow_hold',
        description: input.description,
        postings: [
          { accountId: input.walletId, currency: sender.currency, amount: -amount },
          { accountId: escrow, currency: sender.currency, amount },
        ],
      });
      await insertEvent(trx, {
        applicationId: input.applicationId,
        mode: input.mode,
        type: 'escrow.held',
        transactionId: hold.id,
        data: transactionEventData(hold),
      });
      return { status: 'done', transactionId: hold.id, remaining: amount.toString() };
    });
  }

  async function releaseFunds(
    input: ReleaseRequest & { holdId: string },
  ): Promise<EscrowStepResult> {
    return pool.transaction(async (trx) => {
      const hold = await lockHold(trx, input.holdId);
      const replay = await alreadyDone(trx, input.releaseId, hold);
      if (replay) return replay;
      if (hold.status !== 'held' || hold.escrow_amount === 0n) throw notHeld();
      const amount = input.amount === null ? hold.escrow_amount : BigInt(input.amount);
      if (amount <= 0n) throw decline('validation_failed', 'amount must be greater than 0');
      if (amount > hold.escrow_amount) {
        throw decline('invalid_request', 'Release amount exceeds the held amount');
      }
      checkWallet(
        (await walletStates(trx, [input.recipientWalletId])).get(input.recipientWalletId),
        hold,
      );
      const app = await findApplication(trx, hold.application_id);
      if (!app) throw new Error(`application ${hold.application_id} does not exist`);
      const rawFee = basisPoints(amount, app.escrow_fee_bps) + app.escrow_fee_fixed;
      const fee = rawFee > amount ? amount : rawFee;
      const net = amount - fee;
      const escrow = hold.escrow_wallet_id!;
      const feeAccount =
        fee > 0n
          ? await systemAccountId(
              trx,
              hold.application_id,
              hold.mode,
              'application_fees',
              hold.currency,
            )
          : null;
      await lockAccounts(trx, [
        input.recipientWalletId,
        escrow,
        ...(feeAccount ? [feeAccount] : []),
      ]);
      const remaining = hold.escrow_amount - amount;
      const release = await insertTransaction(trx, {
        id: input.releaseId,
        applicationId: hold.application_id,
        mode: hold.mode,
        type: 'escrow_release',
        status: 'completed',
        currency: hold.currency,
        amount: net,
        escrowAmount: remaining,
        applicationFee: feeAccount ? fee : null,
        walletId: hold.wallet_id,
        escrowWalletId: escrow,
        recipientWalletId: input.recipientWalletId,
        applicationWalletId: feeAccount,
        description: hold.description,
        workflowId: hold.workflow_id,
        parentId: hold.id,
        metadata: { released: amount.toString() },
      });
      const postings: Posting[] = [{ accountId: escrow, currency: hold.currency, amount: -amount }];
      if (net > 0n)
        postings.push({ accountId: input.recipientWalletId, currency: hold.currency, amount: net });
      if (feeAccount)
        postings.push({ accountId: feeAccount, currency: hold.currency, amount: fee });
      await postLedgerTransaction(trx, {
        applicationId: hold.application_id,
        mode: hold.mode,
        transactionId: release.id,
        kind: 'escrow_release',
        description: hold.description,
        postings,
      });
      await shrinkHold(trx, hold.id, remaining, 'completed');
      await insertEvent(trx, {
        applicationId: hold.application_id,
        mode: hold.mode,
        type: 'escrow.released',
        transactionId: release.id,
        data: {
          ...transactionEventData(release),
          hold_id: hold.id,
          application_fee: Number(fee) / 100,
        },
      });
      return { status: 'done', transactionId: release.id, remaining: remaining.toString() };
    });
  }

  async function refundFunds(input: RefundRequest & { holdId: string }): Promise<EscrowStepResult> {
    return pool.transaction(async (trx) => {
      const hold = await lockHold(trx, input.holdId);
      const replay = await alreadyDone(trx, input.refundId, hold);
      if (replay) return replay;
      if (hold.status !== 'held' || hold.escrow_amount === 0n) throw notHeld();
      const amount = hold.escrow_amount;
      const sender = hold.wallet_id!;
      const escrow = hold.escrow_wallet_id!;
      await lockAccounts(trx, [sender, escrow]);
      const refund = await insertTransaction(trx, {
        id: input.refundId,
        applicationId: hold.application_id,
        mode: hold.mode,
        type: 'escrow_refund',
        status: 'completed',
        currency: hold.currency,
        amount,
        escrowAmount: 0n,
        walletId: sender,
        escrowWalletId: escrow,
        description:
          input.reason === 'expired' ? `${hold.description} (expired)`.trim() : hold.description,
        workflowId: hold.workflow_id,
        parentId: hold.id,
        metadata: { reason: input.reason },
      });
      await postLedgerTransaction(trx, {
        applicationId: hold.application_id,
        mode: hold.mode,
        transactionId: refund.id,
        kind: 'escrow_refund',
        description: hold.description,
        postings: [
          { accountId: escrow, currency: hold.currency, amount: -amount },
          { accountId: sender, currency: hold.currency, amount },
        ],
      });
      await shrinkHold(trx, hold.id, 0n, 'reversed');
      await insertEvent(trx, {
        applicationId: hold.application_id,
        mode: hold.mode,
        type: 'escrow.refunded',
        transactionId: refund.id,
        data: { ...transactionEventData(refund), hold_id: hold.id, reason: input.reason },
      });
      return { status: 'done', transactionId: refund.id, remaining: '0' };
    });
  }

  return { holdFunds, releaseFunds, refundFunds };
}

/** What a hold still holds; when nothing is left it ends with the given status. */
async function shrinkHold(
  trx: DatabaseTransactionConnection,
  holdId: string,
  remaining: bigint,
  endStatus: 'completed' | 'reversed',
): Promise<void> {
  await trx.query(sql.unsafe`
    UPDATE transactions SET escrow_amount = ${remaining.toString()},
      status = CASE WHEN ${remaining.toString()}::bigint = 0 THEN ${endStatus} ELSE status END,
      updated_at = now()
    WHERE id = ${holdId}`);
}
