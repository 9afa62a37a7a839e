import type { Config } from '../config';
import { findApplication } from '../db/applications';
import { findDeposit, lockDeposit, type DepositMetadata, type DepositRecord } from '../db/deposits';
import { systemAccountsIn, type SystemAccountMemory } from '../db/ledger';
import type { CommonQueryMethods, DatabasePool } from '../db/pool';
import {
  insertTransactionInCurrency,
  type NewTransaction,
  type TransactionRow,
} from '../db/transactions';
import { walletStates } from '../db/wallets';
import type { Currency } from '../domain/money';
import { computeDepositFees } from '../domain/fees';
import { sleInBaseCurrency, sleToUsd } from '../domain/fx';
import { depositCompletionPostings } from '../domain/ledger';
import { minorTextToWireInteger } from '../domain/money';
import type { Mode } from '../domain/types';
import {
  ProviderNotConfiguredError,
  ProviderRefusedError,
  type PaymentCodeStatus,
} from '../providers/mobile-money';
import type { Providers } from '../providers';
import { workflowIds } from '../workflows/ids';
import type { DepositInput, DepositOpened } from '../workflows/shared';
import { decline } from './declines';
import { depositCompletion } from './deposit-completion';
import { refuseUnlessAll } from './money-rules';
import { depositRules } from '../domain/money-rules';
import { transactionEventData } from './events';

function opened({ row, meta }: DepositRecord): DepositOpened {
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

/**
 * A provider call, with the provider's refusal and its missing credentials turned into declines
 * (never retried); anything else (a timeout, a 5xx) is left to the activity's bounded retry.
 */
export async function callProvider<T>(call: () => Promise<T>, refusal?: string): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ProviderRefusedError) throw decline('provider_refused', refusal);
    if (error instanceof ProviderNotConfiguredError)
      throw decline('provider_unavailable', error.message);
    throw error;
  }
}

/**
 * A deposit's rules (src/domain/money-rules.ts) over the wallet it credits, in `currency`, with
 * `credited` (null: too small to convert).
 */
export async function checkDepositWallet(
  db: CommonQueryMethods,
  input: { applicationId: string; mode: Mode; walletId: string },
  currency: Currency,
  credited: bigint | null,
): Promise<void> {
  const wallet = (await walletStates(db, [input.walletId])).get(input.walletId) ?? null;
  refuseUnlessAll(depositRules, { subjects: { wallet }, params: { ...input, currency, credited } });
}

/**
 * A deposit's pending record, written only while its wallet still holds the deposit's currency
 * (src/db/transactions.ts `insertTransactionInCurrency`): a currency switch that committed since the
 * first check refuses the deposit, and one that comes after finds the deposit open.
 */
export async function insertPendingDeposit(
  pool: DatabasePool,
  input: { applicationId: string; mode: Mode; walletId: string },
  currency: Currency,
  record: NewTransaction & { walletId: string },
): Promise<TransactionRow> {
  const row = await insertTransactionInCurrency(pool, { ...record, currency });
  if (row) return row;
  // Refused: the deposit's rules say why (a currency switched meanwhile, most likely).
  await checkDepositWallet(pool, input, currency, record.amount);
  throw new Error(`deposit ${record.id}: its wallet changed while it was recorded`);
}

export function createDepositActivities(deps: {
  pool: DatabasePool;
  providers: Providers;
  config: Config;
  /** System account ids seen committed (src/db/ledger.ts); none to start with when absent. */
  systemAccounts?: SystemAccountMemory;
}) {
  const { pool, providers, config } = deps;
  const systemAccount = systemAccountsIn(deps.systemAccounts);

  /**
   * Asks the provider for a payment code (idempotency key per deposit, so a retry gets the same
   * code) and records the pending deposit with its fees. Running it again returns the record.
   */
  async function openDeposit(input: DepositInput): Promise<DepositOpened> {
    const existing = await findDeposit(pool, input.transactionId);
    if (existing) return opened(existing);

    const app = await findApplication(pool, input.applicationId);
    if (!app) throw new Error(`application ${input.applicationId} does not exist`);
    const amount = BigInt(input.amount);
    // Refused before the provider is asked: nobody pays a code whose money cannot be credited.
    const credited = sleInBaseCurrency(amount, app.base_currency, config.fx.slePerUsd);
    await checkDepositWallet(pool, input, app.base_currency, credited);
    if (credited === null)
      throw new Error(`deposit ${input.transactionId}: too small, yet allowed`);
    const fees = computeDepositFees({
      method: 'mobile_money',
      amount,
      applicationFeeBps: app.fee_bps.mobile_money,
    });
    const code = await callProvider(
      () =>
        providers.mobileMoney(input.mode).createPaymentCode({
          idempotencyKey: workflowIds.deposit(input.transactionId),
          reference: input.transactionId,
          amount: fees.totalAmountToPay,
          depositAmount: amount,
          name: app.name,
          expiresInSeconds: config.sandbox.paymentCodeTtlSeconds,
          description: `Deposit to wallet ${input.walletId}`,
        }),
      'Provider failed to create the payment code',
    );
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
    const row = await insertPendingDeposit(pool, input, app.base_currency, {
      id: input.transactionId,
      applicationId: input.applicationId,
      mode: input.mode,
      type: 'mobile_money_deposit',
      status: 'pending',
      currency: app.base_currency,
      amount: credited,
      walletId: input.walletId,
      // The record's amounts are in the wallet's currency; the SLE figures are in the metadata.
      applicationFee: usd
        ? sleToUsd(fees.applicationFee, config.fx.slePerUsd)
        : fees.applicationFee,
      description: 'Mobile money deposit',
      providerReference: code.id,
      workflowId: workflowIds.deposit(input.transactionId),
      metadata: meta,
      merchantMetadata: input.metadata,
    });
    return opened({ row, meta });
  }

  /** The provider's view of a payment code now; a refusal is a decline the workflow handles. */
  async function checkPaymentCode(input: {
    mode: Mode;
    paymentCodeId: string;
  }): Promise<PaymentCodeStatus> {
    const code = await callProvider(() =>
      providers.mobileMoney(input.mode).getPaymentCode(input.paymentCodeId),
    );
    return code.status;
  }

  /** An operator's resolution failed cancels the code at the provider; answers its status then. */
  async function cancelPaymentCode(input: {
    mode: Mode;
    paymentCodeId: string;
  }): Promise<PaymentCodeStatus> {
    const code = await callProvider(() =>
      providers.mobileMoney(input.mode).cancelPaymentCode(input.paymentCodeId),
    );
    return code.status;
  }

  /**
   * Paid: one ledger transaction (src/domain/ledger.ts `depositCompletionPostings`), with FX legs
   * when the wallet holds another currency than SLE.
   */
  const { complete: completeDeposit, close: closeDeposit } = depositCompletion(pool, {
    lock: lockDeposit,
    async credit(trx, { row, meta }) {
      const { application_id: app, mode } = row;
      const walletId = row.wallet_id!;
      const clearing = await systemAccount(trx, app, mode, 'provider_clearing_mobile_money', 'SLE');
      const fees = await systemAccount(trx, app, mode, 'application_fees', 'SLE');
      const fx =
        row.currency === 'SLE'
          ? null
          : {
              sleAccountId: await systemAccount(trx, app, mode, 'fx', 'SLE'),
              usdAccountId: await systemAccount(trx, app, mode, 'fx', 'USD'),
              creditedUsd: row.amount,
            };
      return {
        accounts: [walletId, clearing, fees, ...(fx ? [fx.sleAccountId, fx.usdAccountId] : [])],
        ledger: {
          metadata: {
            sle_amount: meta.sle_amount,
            credited_amount: row.amount.toString(),
            credited_currency: row.currency,
            fx_sle_per_usd: meta.fx_sle_per_usd,
          },
          postings: depositCompletionPostings({
            walletId,
            clearingAccountId: clearing,
            feeAccountId: fees,
            sleAmount: BigInt(meta.sle_amount),
            totalPaid: BigInt(meta.total_amount_paid),
            providerFee: BigInt(meta.provider_fee),
            applicationFee: BigInt(meta.application_fee),
            fx,
          }),
        },
      };
    },
    eventData: depositEventData,
  });

  return { openDeposit, checkPaymentCode, cancelPaymentCode, completeDeposit, closeDeposit };
}

/** A deposit's event: the payment as the API shows it, and the SLE figures in SLE cents. */
function depositEventData(row: TransactionRow, meta: DepositMetadata) {
  return {
    ...transactionEventData(row),
    provider_reference: row.provider_reference,
    sle_amount: minorTextToWireInteger(meta.sle_amount),
    provider_fee: minorTextToWireInteger(meta.provider_fee),
    application_fee: minorTextToWireInteger(meta.application_fee),
    total_amount_paid: minorTextToWireInteger(meta.total_amount_paid),
    fx_sle_per_usd: meta.fx_sle_per_usd,
  };
}
