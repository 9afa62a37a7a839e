import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { Config } from '../config';
import { findApplication } from '../db/applications';
import { lockAccounts, postLedgerTransaction, systemAccountId } from '../db/ledger';
import {
  insertEvent,
  insertTransaction,
  transactionColumns,
  transactionRow,
  type TransactionRow,
} from '../db/transactions';
import { computeDepositFees } from '../domain/fees';
import { sleToUsd } from '../domain/fx';
import type { Posting } from '../domain/ledger';
import type { Mode } from '../domain/types';
import {
  ProviderNotConfiguredError,
  ProviderRefusedError,
  type PaymentCodeStatus,
} from '../providers/mobile-money';
import type { Providers } from '../providers';
import { depositWorkflowId, type DepositInput, type DepositOpened } from '../workflows/shared';
import { decline } from './declines';
import { transactionEventData } from './events';

/** What a deposit records of itself beyond the transaction row: the SLE side and the FX. */
const depositMetadata = z.object({
  sle_amount: z.string(),
  provider_fee: z.string(),
  application_fee: z.string(),
  total_amount_paid: z.string(),
  fx_sle_per_usd: z.string().nullable(),
  payment_code: z.object({
    id: z.string(),
    code: z.string(),
    amount: z.string(),
    instructions: z.string(),
    status: z.string(),
    expires_at: z.string(),
  }),
});
type DepositMetadata = z.infer<typeof depositMetadata>;

const depositRow = transactionRow.extend({ metadata: z.unknown() });

function opened(row: TransactionRow, meta: DepositMetadata): DepositOpened {
  return {
    status: 'opened',
    transactionId: row.id,
    paymentCode: {
      id: meta.payment_code.id,
      code: meta.payment_code.code,
      amount: meta.payment_code.amount,
      currency: 'SLE',
      instructions: meta.payment_code.instructions,
      status: meta.payment_code.status,
      expiresAt: meta.payment_code.expires_at,
    },
    deposit: {
      walletId: row.wallet_id!,
      amount: meta.sle_amount,
      totalAmountPaid: meta.total_amount_paid,
      providerFee: meta.provider_fee,
      applicationFee: meta.application_fee,
    },
  };
}

async function lockDeposit(trx: DatabaseTransactionConnection, id: string) {
  const row = await trx.maybeOne(sql.type(depositRow)`
    SELECT * FROM transactions WHERE id = ${id} AND transaction_type = 'mobile_money_deposit' FOR NO KEY UPDATE`);
  if (!row) throw new Error(`deposit ${id} has no record`);
  return { row, meta: depositMetadata.parse(row.metadata) };
}

export function createDepositActivities(deps: {
  pool: DatabasePool;
  providers: Providers;
  config: Config;
}) {
  const { pool, providers, config } = deps;

  /**
   * Asks the provider for a payment code (idempotency key per deposit, so a retry gets the same
   * code) and records the pending deposit with its fees. Running it again returns the record.
   */
  async function openDeposit(input: DepositInput): Promise<DepositOpened> {
    const existing = await pool.maybeOne(sql.type(depositRow)`
      SELECT * FROM transactions WHERE id = ${input.transactionId}`);
    if (existing) return opened(existing, depositMetadata.parse(existing.metadata));

    const app = await findApplication(pool, input.applicationId);
    if (!app) throw new Error(`application ${input.applicationId} does not exist`);
    const amount = BigInt(input.amount);
    const fees = computeDepositFees({
      method: 'mobile_money',
      amount,
      applicationFeeBps: app.fee_bps.mobile_money,
    });
    let code;
    try {
      code = await providers.mobileMoney(input.mode).createPaymentCode({
        idempotencyKey: depositWorkflowId(input.transactionId),
        reference: input.transactionId,
        amount: fees.totalAmountToPay,
        depositAmount: amount,
        name: app.name,
        expiresInSeconds: config.sandbox.paymentCodeTtlSeconds,
        description: `Deposit to wallet ${input.walletId}`,
      });
    } catch (error) {
      if (error instanceof ProviderRefusedError) {
        throw decline('provider_refused', 'Provider failed to create the payment code');
      }
      if (error instanceof ProviderNotConfiguredError)
        throw decline('provider_unavailable', error.message);
      throw error;
    }
    const usd = app.base_currency === 'USD';
    const meta: DepositMetadata = {
      sle_amount: amount.toString(),
      provider_fee: fees.providerFee.toString(),
      application_fee: fees.applicationFee.toString(),
      total_amount_paid: fees.totalAmountToPay.toString(),
      fx_sle_per_usd: usd ? config.fx.slePerUsd : null,
      payment_code: {
        id: code.id,
        code: code.code,
        amount: code.amount.toString(),
        instructions: code.instructions,
        status: code.status,
        expires_at: code.expiresAt,
      },
    };
    const row = await insertTransaction(pool, {
      id: input.transactionId,
      applicationId: input.applicationId,
      mode: input.mode,
      type: 'mobile_money_deposit',
      status: 'pending',
      currency: app.base_currency,
      amount: usd ? sleToUsd(amount, config.fx.slePerUsd) : amount,
      walletId: input.walletId,
      // The record's amounts are in the wallet's currency; the SLE figures are in the metadata.
      applicationFee: usd
        ? sleToUsd(fees.applicationFee, config.fx.slePerUsd)
        : fees.applicationFee,
      description: 'Mobile money deposit',
      providerReference: code.id,
      workflowId: depositWorkflowId(input.transactionId),
      metadata: meta,
    });
    return opened(row, meta);
  }

  /** The provider's view of a payment code now. */
  async function checkPaymentCode(input: {
    mode: Mode;
    paymentCodeId: string;
  }): Promise<PaymentCodeStatus> {
    return (await providers.mobileMoney(input.mode).getPaymentCode(input.paymentCodeId)).status;
  }

  /**
   * Paid: one ledger transaction. The provider's clearing account (SLE) gives what the payer
   * paid and keeps its fee; the application's fee account gets the application fee; the wallet
   * gets the amount, through the FX accounts for a USD wallet. Then the event, in the same
   * database transaction. A second run finds the deposit completed and changes nothing.
   */
  async function completeDeposit(input: { transactionId: string }): Promise<void> {
    await pool.transaction(async (trx) => {
      const { row, meta } = await lockDeposit(trx, input.transactionId);
      if (row.status !== 'pending') return;
      const { application_id: app, mode } = row;
      const walletId = row.wallet_id!;
      const clearing = await systemAccountId(
        trx,
        app,
        mode,
        'provider_clearing_mobile_money',
        'SLE',
      );
      const fees = await systemAccountId(trx, app, mode, 'application_fees', 'SLE');
      const sleAmount = BigInt(meta.sle_amount);
      const applicationFee = BigInt(meta.application_fee);
      const postings: Posting[] = [
        { accountId: clearing, currency: 'SLE', amount: -BigInt(meta.total_amount_paid) },
      ];
      const providerFee = BigInt(meta.provider_fee);
      if (providerFee > 0n)
        postings.push({ accountId: clearing, currency: 'SLE', amount: providerFee });
      if (applicationFee > 0n)
        postings.push({ accountId: fees, currency: 'SLE', amount: applicationFee });
      const accounts = [walletId, clearing, fees];
      if (row.currency === 'SLE') {
        postings.push({ accountId: walletId, currency: 'SLE', amount: sleAmount });
      } else {
        const fxSle = await systemAccountId(trx, app, mode, 'fx', 'SLE');
        const fxUsd = await systemAccountId(trx, app, mode, 'fx', 'USD');
        accounts.push(fxSle, fxUsd);
        postings.push(
          { accountId: fxSle, currency: 'SLE', amount: sleAmount },
          { accountId: fxUsd, currency: 'USD', amount: -row.amount },
          { accountId: walletId, currency: 'USD', amount: row.amount },
        );
      }
      await lockAccounts(trx, accounts);
      await postLedgerTransaction(trx, {
        applicationId: app,
        mode,
        transactionId: row.id,
        kind: 'mobile_money_deposit',
        description: row.description,
        metadata: {
          sle_amount: meta.sle_amount,
          credited_amount: row.amount.toString(),
          credited_currency: row.currency,
          fx_sle_per_usd: meta.fx_sle_per_usd,
        },
        postings,
      });
      const completed = await setStatus(trx, row.id, 'completed');
      await insertEvent(trx, {
        applicationId: app,
        mode,
        type: 'deposit.completed',
        transactionId: row.id,
        data: depositEventData(completed, meta),
      });
    });
  }

  /** Failed or expired: no money moves; the record and the `deposit.failed` event say why. */
  async function closeDeposit(input: {
    transactionId: string;
    status: 'failed' | 'expired';
  }): Promise<void> {
    await pool.transaction(async (trx) => {
      const { row, meta } = await lockDeposit(trx, input.transactionId);
      if (row.status !== 'pending') return;
      const closed = await setStatus(trx, row.id, input.status);
      await insertEvent(trx, {
        applicationId: row.application_id,
        mode: row.mode,
        type: 'deposit.failed',
        transactionId: row.id,
        data: depositEventData(closed, meta),
      });
    });
  }

  return { openDeposit, checkPaymentCode, completeDeposit, closeDeposit };
}

async function setStatus(
  trx: DatabaseTransactionConnection,
  id: string,
  status: string,
): Promise<TransactionRow> {
  return trx.one(sql.type(transactionRow)`
    UPDATE transactions SET status = ${status}, updated_at = now() WHERE id = ${id}
    RETURNING ${transactionColumns}`);
}

function depositEventData(row: TransactionRow, meta: DepositMetadata) {
  return {
    ...transactionEventData(row),
    provider_reference: row.provider_reference,
    sle_amount: Number(meta.sle_amount),
    provider_fee: Number(meta.provider_fee),
    application_fee: Number(meta.application_fee),
    total_amount_paid: Number(meta.total_amount_paid),
    fx_sle_per_usd: meta.fx_sle_per_usd,
  };
}
