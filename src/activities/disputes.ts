import { randomUUID } from 'node:crypto';
import { recordAudit } from '../db/audit-log';
import { depositFacts, lockCardCase } from '../db/card-cases';
import {
  disputeAnswer,
  disputeRecord,
  findDispute,
  insertDispute,
  lockDispute,
  setDisputeStatus,
} from '../db/disputes';
import {
  lockAccounts,
  postLedgerTransaction,
  systemAccountsIn,
  type SystemAccountMemory,
} from '../db/ledger';
import { recordMoneyStep } from '../db/money-steps';
import type { DatabasePool } from '../db/pool';
import { insertEvent } from '../db/transaction-events';
import type { AuditEntry } from '../domain/audit';
import { disputePostings } from '../domain/ledger';
import { disputeOpenRules, disputeReserve } from '../domain/money-rules';
import type { Providers } from '../providers';
import type { DisputeInput, DisputeOpened, DisputeStatus } from '../workflows/dispute-shared';
import { decline } from './declines';
import { callProvider } from './deposit';
import { refuseUnlessAll } from './money-rules';

const closed = (status: DisputeStatus) => status === 'won' || status === 'lost';

/**
 * The dispute workflow's steps. Each money step is one database transaction that checks the
 * dispute's status under its lock first, so that a retried step never moves money twice.
 */
export function createDisputeActivities(deps: {
  pool: DatabasePool;
  providers: Providers;
  systemAccounts?: SystemAccountMemory;
}) {
  const { pool, providers } = deps;
  const systemAccount = systemAccountsIn(deps.systemAccounts);

  /**
   * One database transaction under the deposit's card-case lock, which refunds take too; running
   * it again finds the dispute. The `dispute_reserve` record takes the dispute's own id: the
   * dispute's events and ledger transactions name it (one event of a kind per record).
   */
  async function openDispute(input: DisputeInput): Promise<DisputeOpened> {
    const row = await pool.transaction(async (trx) => {
      const facts = await lockCardCase(trx, input.transactionId);
      const made = await findDispute(trx, input.disputeId);
      if (made) return made;
      const amount = input.amount === null ? null : BigInt(input.amount);
      refuseUnlessAll(disputeOpenRules, {
        subjects: { deposit: facts && depositFacts(facts) },
        params: {
          applicationId: input.applicationId,
          mode: input.mode,
          amount,
          byProvider: input.providerDisputeId !== null,
        },
      });
      const { deposit, left } = facts!;
      const walletId = deposit.wallet_id;
      if (!walletId) throw new Error(`card deposit ${deposit.id} credited no wallet`);
      const { currency } = deposit;
      const reserve = await systemAccount(
        trx,
        input.applicationId,
        input.mode,
        'dispute_reserve',
        currency,
      );
      const locked = await lockAccounts(trx, [walletId, reserve]);
      const disputed = amount ?? left;
      const reserved = disputeReserve(disputed, left, locked.get(walletId)?.balance ?? 0n);
      const workflowId = `dispute-${input.disputeId}`;
      const dispute = await insertDispute(trx, {
        id: input.disputeId,
        applicationId: input.applicationId,
        mode: input.mode,
        transactionId: deposit.id,
        walletId,
        currency,
        amount: disputed,
        reserved,
        reason: input.reason,
        evidenceDueBy: input.evidenceDueBy,
        providerReference: input.providerDisputeId,
        workflowId,
        metadata: input.metadata,
      });
      const postings = disputePostings({
        step: 'reserve',
        walletId,
        reserveAccountId: reserve,
        providerAccountId: null,
        currency,
        reserved,
      });
      await recordMoneyStep(trx, {
        transaction: {
          id: dispute.id,
          applicationId: input.applicationId,
          mode: input.mode,
          type: 'dispute_reserve',
          status: 'completed',
          currency,
          amount: reserved,
          walletId,
          description: `Dispute ${dispute.id} reserve`,
          workflowId,
          parentId: deposit.id,
          metadata: { dispute_id: dispute.id },
          // The reserve's record is the dispute's (its id): it carries the dispute's metadata.
          merchantMetadata: input.metadata,
        },
        ...(postings && {
          ledger: { postings, metadata: { step: 'reserve', dispute_id: dispute.id } },
        }),
      });
      await insertEvent(trx, {
        applicationId: input.applicationId,
        mode: input.mode,
        type: 'dispute.created',
        transactionId: dispute.id,
        data: disputeAnswer(dispute),
      });
      return dispute;
    });
    return { status: 'opened', dispute: disputeRecord(row) };
  }

  /**
   * Sends the evidence text to the provider (Stripe: the dispute's evidence, submitted), then
   * records it and moves the dispute to `under_review`. A closed dispute is a decline. The
   * provider's refusal is a decline too; sending the same text again is harmless.
   */
  async function submitDisputeEvidence(input: {
    disputeId: string;
    text: string;
    audit?: AuditEntry;
  }): Promise<DisputeStatus> {
    const dispute = await findDispute(pool, input.disputeId);
    if (!dispute) throw new Error(`dispute ${input.disputeId} does not exist`);
    if (closed(dispute.status)) throw decline('dispute_closed');
    // The sandbox keeps no disputes of its own: it is told ours.
    const providerId = dispute.provider_reference ?? dispute.id;
    await callProvider(
      () => providers.card(dispute.mode).submitDisputeEvidence(providerId, input.text),
      'The provider refused the evidence',
    );
    return pool.transaction(async (trx) => {
      const locked = await lockDispute(trx, input.disputeId);
      if (!locked) throw new Error(`dispute ${input.disputeId} does not exist`);
      if (closed(locked.status)) throw decline('dispute_closed');
      const { status } = await setDisputeStatus(trx, locked.id, 'under_review', input.text);
      if (input.audit) await recordAudit(trx, input.audit);
      return status;
    });
  }

  /**
   * The provider's decision: won, the reserve goes back to the wallet (`dispute_release`); lost, it
   * goes to the card provider's clearing account with no record (the wallet already paid). The
   * uncovered part stays either way. A second run finds the dispute closed and answers its status.
   */
  async function closeDispute(input: {
    disputeId: string;
    status: 'won' | 'lost';
  }): Promise<DisputeStatus> {
    return pool.transaction(async (trx) => {
      const dispute = await lockDispute(trx, input.disputeId);
      if (!dispute) throw new Error(`dispute ${input.disputeId} does not exist`);
      if (closed(dispute.status)) return dispute.status;
      const { application_id: app, mode, currency, wallet_id: walletId } = dispute;
      const reserve = await systemAccount(trx, app, mode, 'dispute_reserve', currency);
      const provider =
        input.status === 'lost'
          ? await systemAccount(trx, app, mode, 'provider_clearing_card', currency)
          : null;
      await lockAccounts(trx, [walletId, reserve, ...(provider ? [provider] : [])]);
      const postings = disputePostings({
        step: input.status,
        walletId,
        reserveAccountId: reserve,
        providerAccountId: provider,
        currency,
        reserved: dispute.reserved_amount,
      });
      const metadata = { step: input.status, dispute_id: dispute.id };
      if (input.status === 'won') {
        await recordMoneyStep(trx, {
          transaction: {
            id: randomUUID(),
            applicationId: app,
            mode,
            type: 'dispute_release',
            status: 'completed',
            currency,
            amount: dispute.reserved_amount,
            walletId,
            description: `Dispute ${dispute.id} won`,
            workflowId: dispute.workflow_id,
            parentId: dispute.transaction_id,
            metadata: { dispute_id: dispute.id },
          },
          ...(postings && { ledger: { postings, metadata } }),
        });
      } else if (postings) {
        await postLedgerTransaction(trx, {
          applicationId: app,
          mode,
          transactionId: dispute.id,
          kind: 'dispute_lost',
          description: `Dispute ${dispute.id} lost`,
          metadata,
          postings,
        });
      }
      const updated = await setDisputeStatus(trx, dispute.id, input.status);
      await insertEvent(trx, {
        applicationId: app,
        mode,
        type: `dispute.${input.status}`,
        transactionId: dispute.id,
        data: disputeAnswer(updated),
      });
      return updated.status;
    });
  }

  return { openDispute, submitDisputeEvidence, closeDispute };
}
