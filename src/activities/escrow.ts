import {
  holdGuard,
  lockHold,
  releaseGuard,
  shrinkHoldPart,
  type EscrowFeeMemory,
  type HoldMemory,
} from '../db/escrow';
import {
  lockAccounts,
  rememberedSystemAccount,
  systemAccountsIn,
  type SystemAccountMemory,
} from '../db/ledger';
import { remember } from '../cache/bounded';
import { recordAnswer, recordMoneyStep, recordMoneyStepAtOnce } from '../db/money-steps';
import { afterCommit, type DatabasePool, type DatabaseTransactionConnection } from '../db/pool';
import { findTransaction, transactionRecord, type TransactionRow } from '../db/transactions';
import {
  rememberWalletCurrencies,
  walletStatesUnlessMade,
  type WalletCurrencyMemory,
} from '../db/wallets';
import { computeEscrowFee } from '../domain/fees';
import { holdPostings, refundPostings, releasePostings } from '../domain/ledger';
import { minorToMajorNumber, type Currency } from '../domain/money';
import { workflowIds } from '../workflows/ids';
import type {
  EscrowStepResult,
  HoldInput,
  RefundRequest,
  ReleaseRequest,
} from '../workflows/shared';
import { refuseUnless, refuseUnlessAll } from './money-rules';
import { holdRules, refundRules, releaseRules } from '../domain/money-rules';
import { transactionEventData } from './events';

/** The step already written under this id (a retried activity or update): its result again. */
async function alreadyDone(
  trx: DatabaseTransactionConnection,
  id: string,
  remaining: bigint,
): Promise<EscrowStepResult> {
  const done = await findTransaction(trx, id);
  if (!done) throw new Error(`payment step ${id} was seen written and is gone`);
  return stepDone(done, remaining);
}

/** A step made: its payment row travels with the answer, so that the API need not read it. */
function stepDone(row: TransactionRow, remaining: bigint, answered?: unknown): EscrowStepResult {
  return {
    status: 'done',
    transactionId: row.id,
    remaining: remaining.toString(),
    transaction: transactionRecord(row),
    ...(answered ? { answered: true } : {}),
  };
}

/**
 * Escrow money steps, each one database transaction: the payment record, one balanced ledger
 * transaction and its event. Each is idempotent by its own transaction id.
 */
export function createEscrowActivities(deps: {
  pool: DatabasePool;
  /** System account ids seen committed (src/db/ledger.ts); none to start with when absent. */
  systemAccounts?: SystemAccountMemory;
  /** Wallet currencies seen (src/db/wallets.ts); none to start with when absent. */
  walletCurrencies?: WalletCurrencyMemory;
}) {
  const { pool } = deps;
  const systemAccounts = deps.systemAccounts ?? new Map<string, string>();
  const systemAccount = systemAccountsIn(systemAccounts);
  const currencies = deps.walletCurrencies ?? new Map<string, Currency>();
  // What a release needs to be written in one statement (`releaseAtOnce`): the holds this
  // process's steps have written or read, and the applications' escrow fees as last read.
  const holds: HoldMemory = new Map();
  const fees: EscrowFeeMemory = new Map();

  /** The hold as a step of this process leaves it, once committed: forgotten when emptied. */
  function rememberHold(hold: TransactionRow, remaining: bigint): void {
    if (remaining > 0n) remember(holds, hold.id, { ...hold, escrow_amount: remaining });
    else holds.delete(hold.id);
  }

  /**
   * The hold's step, as written by either way (`holdFunds`): `at` is the transaction's `now()`,
   * none in one statement (which takes the statement's).
   */
  function newHold(input: HoldInput, escrow: string, currency: Currency, at?: string) {
    const amount = BigInt(input.amount);
    return {
      transaction: {
        id: input.holdId,
        applicationId: input.applicationId,
        mode: input.mode,
        type: 'escrow_hold' as const,
        status: 'held' as const,
        currency,
        amount,
        escrowAmount: amount,
        walletId: input.walletId,
        escrowWalletId: escrow,
        recipientWalletId: input.recipientWalletId,
        description: input.description,
        workflowId: workflowIds.escrow(input.holdId),
        metadata: { expires_at: input.expiresAt },
        merchantMetadata: input.metadata,
      },
      ledger: {
        postings: holdPostings({
          walletId: input.walletId,
          escrowAccountId: escrow,
          currency,
          amount,
        }),
      },
      event: { type: 'escrow.held', data: transactionEventData },
      ...recordAnswer(input, input.answer),
      at,
    };
  }

  /**
   * The hold in one statement (src/db/escrow.ts `holdGuard`), when the sender's wallet and its escrow
   * account have been seen before; null when it must run the usual way (which says why).
   */
  async function holdAtOnce(input: HoldInput): Promise<EscrowStepResult | null> {
    const currency = currencies.get(input.walletId);
    if (currency === undefined) return null;
    const escrow = rememberedSystemAccount(
      systemAccounts,
      input.applicationId,
      input.mode,
      'escrow',
      currency,
    );
    if (escrow === undefined) return null;
    const step = newHold(input, escrow, currency);
    const row = await recordMoneyStepAtOnce(
      pool,
      step,
      holdGuard({ ...input, escrowAccountId: escrow, currency, amount: step.transaction.amount }),
    );
    if (!row) return null;
    rememberHold(row, row.escrow_amount);
    return stepDone(row, step.transaction.amount, step.answer);
  }

  async function holdFunds(input: HoldInput): Promise<EscrowStepResult> {
    const amount = BigInt(input.amount);
    const fast = await holdAtOnce(input);
    if (fast) return fast;
    return pool.transaction(async (trx) => {
      const recipient = input.recipientWalletId;
      const { made, at, states } = await walletStatesUnlessMade(
        trx,
        [input.walletId, ...(recipient ? [recipient] : [])],
        input.holdId,
      );
      rememberWalletCurrencies(currencies, states.values());
      if (made) {
        const existing = await findTransaction(trx, input.holdId);
        if (existing) {
          rememberHold(existing, existing.status === 'held' ? existing.escrow_amount : 0n);
          return stepDone(existing, existing.escrow_amount);
        }
      }
      const facts = {
        subjects: {
          sender: states.get(input.walletId) ?? null,
          recipient: recipient ? (states.get(recipient) ?? null) : null,
        },
        params: { ...input, amount },
      };
      // Every rule but the balance's, which the lock reads.
      refuseUnless(holdRules, facts);
      const currency = facts.subjects.sender!.currency;
      const escrow = await systemAccount(trx, input.applicationId, input.mode, 'escrow', currency);
      // One lock, in the fixed order: the sender's wallet, then the escrow account.
      const sender = (await lockAccounts(trx, [input.walletId, escrow])).get(input.walletId)!;
      refuseUnlessAll(holdRules, {
        ...facts,
        subjects: {
          ...facts.subjects,
          sender: { ...facts.subjects.sender!, balance: sender.balance },
        },
      });
      const step = newHold(input, escrow, sender.currency, at);
      const hold = await recordMoneyStep(trx, step);
      afterCommit(trx, () => rememberHold(hold, amount));
      return stepDone(hold, amount, step.answer);
    });
  }

  /** The release's step, as written by either way (`releaseFunds`); `at` as `newHold`'s. */
  function newRelease(
    input: ReleaseRequest & { holdId: string },
    hold: TransactionRow,
    moved: { amount: bigint; fee: bigint; net: bigint; feeAccount: string | null },
    at: string | undefined,
    guard?: ReturnType<typeof releaseGuard>['guard'],
  ) {
    const { fee, net, feeAccount } = moved;
    const escrow = hold.escrow_wallet_id!;
    const remaining = hold.escrow_amount - moved.amount;
    return {
      transaction: {
        id: input.releaseId,
        applicationId: hold.application_id,
        mode: hold.mode,
        type: 'escrow_release' as const,
        status: 'completed' as const,
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
        metadata: { released: moved.amount.toString() },
        merchantMetadata: input.metadata,
      },
      ledger: {
        postings: releasePostings({
          escrowAccountId: escrow,
          recipientWalletId: input.recipientWalletId,
          feeAccountId: feeAccount,
          currency: hold.currency,
          net,
          fee,
        }),
        alongside: [shrinkHoldPart(hold.id, remaining, 'completed', guard)],
      },
      event: {
        type: 'escrow.released',
        data: (row: TransactionRow) => ({
          ...transactionEventData(row),
          hold_id: hold.id,
          application_fee: minorToMajorNumber(fee),
        }),
      },
      ...recordAnswer({ applicationId: hold.application_id, mode: hold.mode }, input.answer),
      at,
    };
  }

  /**
   * The release in one statement (src/db/escrow.ts `releaseGuard`), when this process remembers the
   * hold, the application's escrow fee and, for a fee, its fee account; null when it must run
   * the usual way (which says why, and remembers them again).
   */
  async function releaseAtOnce(
    input: ReleaseRequest & { holdId: string },
  ): Promise<EscrowStepResult | null> {
    const hold = holds.get(input.holdId);
    const rule = hold && fees.get(hold.application_id);
    if (!hold || !rule) return null;
    const amount = input.amount === null ? hold.escrow_amount : BigInt(input.amount);
    if (amount <= 0n || amount > hold.escrow_amount) return null;
    const { fee, net } = computeEscrowFee(amount, rule);
    const feeAccount =
      fee > 0n
        ? rememberedSystemAccount(
            systemAccounts,
            hold.application_id,
            hold.mode,
            'application_fees',
            hold.currency,
          )
        : null;
    if (feeAccount === undefined) return null;
    const guard = releaseGuard({
      ...input,
      amount: input.amount === null ? null : amount,
      hold,
      feeAccountId: feeAccount,
      fee: rule,
    });
    const moved = { amount, fee, net, feeAccount };
    const step = newRelease(input, hold, moved, undefined, guard.guard);
    const row = await recordMoneyStepAtOnce(pool, step, guard);
    if (!row) {
      // Not as remembered (or a decline): the usual way reads it afresh.
      holds.delete(hold.id);
      return null;
    }
    const remaining = hold.escrow_amount - amount;
    rememberHold(hold, remaining);
    return stepDone(row, remaining, step.answer);
  }

  async function releaseFunds(
    input: ReleaseRequest & { holdId: string },
  ): Promise<EscrowStepResult> {
    const fast = await releaseAtOnce(input);
    if (fast) return fast;
    return pool.transaction(async (trx) => {
      const locked = await lockHold(trx, input.holdId, input.releaseId, input.recipientWalletId);
      const { hold } = locked;
      remember(fees, hold.application_id, locked.fee);
      if (locked.stepMade) {
        rememberHold(hold, hold.escrow_amount);
        return alreadyDone(trx, input.releaseId, hold.escrow_amount);
      }
      refuseUnlessAll(releaseRules, {
        subjects: { hold, recipient: locked.recipient ?? null },
        params: {
          applicationId: hold.application_id,
          mode: hold.mode,
          recipientWalletId: input.recipientWalletId,
          amount: input.amount === null ? null : BigInt(input.amount),
        },
      });
      const amount = input.amount === null ? hold.escrow_amount : BigInt(input.amount);
      const { fee, net } = computeEscrowFee(amount, locked.fee);
      const feeAccount =
        fee > 0n
          ? await systemAccount(
              trx,
              hold.application_id,
              hold.mode,
              'application_fees',
              hold.currency,
            )
          : null;
      await lockAccounts(trx, [
        input.recipientWalletId,
        hold.escrow_wallet_id!,
        ...(feeAccount ? [feeAccount] : []),
      ]);
      const step = newRelease(input, hold, { amount, fee, net, feeAccount }, locked.at);
      const release = await recordMoneyStep(trx, step);
      const remaining = hold.escrow_amount - amount;
      afterCommit(trx, () => rememberHold(hold, remaining));
      return stepDone(release, remaining, step.answer);
    });
  }

  async function refundFunds(input: RefundRequest & { holdId: string }): Promise<EscrowStepResult> {
    return pool.transaction(async (trx) => {
      const { hold, stepMade, at } = await lockHold(trx, input.holdId, input.refundId);
      afterCommit(trx, () => holds.delete(hold.id));
      if (stepMade) return alreadyDone(trx, input.refundId, hold.escrow_amount);
      // Whether it still holds anything, then, under the lock, the sender's account's currency.
      refuseUnless(refundRules, { subjects: { hold }, params: {} });
      const amount = hold.escrow_amount;
      const sender = hold.wallet_id!;
      const escrow = hold.escrow_wallet_id!;
      const locked = await lockAccounts(trx, [sender, escrow]);
      refuseUnlessAll(refundRules, {
        subjects: { hold, sender: locked.get(sender) ?? null },
        params: {},
      });
      const answer = recordAnswer(
        { applicationId: hold.application_id, mode: hold.mode },
        input.answer,
      );
      const refund = await recordMoneyStep(trx, {
        transaction: {
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
          description: refundDescription(hold, input.reason),
          workflowId: hold.workflow_id,
          parentId: hold.id,
          metadata: { reason: input.reason },
          merchantMetadata: input.metadata,
        },
        ledger: {
          description: hold.description,
          postings: refundPostings({
            escrowAccountId: escrow,
            walletId: sender,
            currency: hold.currency,
            amount,
          }),
          alongside: [shrinkHoldPart(hold.id, 0n, 'reversed')],
        },
        event: {
          type: 'escrow.refunded',
          data: (row) => ({ ...transactionEventData(row), hold_id: hold.id, reason: input.reason }),
        },
        ...answer,
        at,
      });
      return stepDone(refund, 0n, answer);
    });
  }

  return { holdFunds, releaseFunds, refundFunds };
}

function refundDescription(hold: TransactionRow, reason: RefundRequest['reason']): string {
  return reason === 'expired' ? `${hold.description} (expired)`.trim() : hold.description;
}
