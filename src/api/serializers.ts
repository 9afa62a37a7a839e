import { z } from 'zod';
import type { ApplicationRow } from '../db/applications';
import { paymentLinks, type PaymentLinks } from '../db/card-refunds';
import type { MoneyOutRecord } from '../db/money-out';
import type { CommonQueryMethods } from '../db/pool';
import { madeStepRow, transactionAnswer, type TransactionRow } from '../db/transactions';
import { reconExceptionAnswer, type ReconException } from '../db/recon-exceptions';
import type { ReconImport } from '../db/recon-imports';
import {
  RECON_EXCEPTION_KINDS,
  RECON_PROVIDERS,
  RECON_RUN_STATUSES,
  reconRunAnswer,
  type ReconRun,
} from '../db/recon-runs';
import type { UserRow } from '../db/users';
import type { WalletRow } from '../db/wallets';
import type { WebhookSubscriptionRow } from '../db/webhook-subscriptions';
import type { DepositFees } from '../domain/fees';
import { minorToDecimalString, minorToMajorNumber } from '../domain/money';
import {
  PAYMENT_METHODS,
  TRANSACTION_STATUSES,
  TRANSACTION_TYPES,
  type PaymentMethod,
} from '../domain/types';
import type { TransactionRecord } from '../workflows/shared';

/** A JSON value written as its own literal text (`JSON.rawJSON`, newer than TypeScript's lib). */
export type RawJson = { readonly rawJSON: string };
const rawJSON = (JSON as unknown as { rawJSON: (text: string) => RawJson }).rawJSON;

/**
 * Minor units as a JSON number in major units, exact however large: a sum across the platform
 * can pass Number.MAX_SAFE_INTEGER minor units, which a double would round, so past it the
 * number is written as its decimal literal.
 */
export function exactMajorNumber(minor: bigint): number | RawJson {
  const safe = BigInt(Number.MAX_SAFE_INTEGER);
  return minor <= safe && minor >= -safe
    ? minorToMajorNumber(minor)
    : rawJSON(minorToDecimalString(minor));
}

/** Merchant metadata as stored: `{}` when there is none (src/api/schemas.ts `Metadata`). */
export const MetadataRecord = z
  .record(z.string(), z.string())
  .meta({ description: 'The merchant’s metadata; {} when there is none' });

export const UserBody = z
  .object({
    id: z.string(),
    app_user_id: z.string(),
    name: z.string(),
    phone_number: z.string(),
    email: z.string().nullable(),
    username: z.string().nullable(),
    is_active: z.boolean(),
    metadata: MetadataRecord,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'User' });

/** The get-user shape of the specification: no `updated_at`. */
export const UserDetailBody = UserBody.omit({ updated_at: true, username: true }).meta({
  id: 'UserDetail',
});

export const WalletBody = z
  .object({
    id: z.string(),
    user_id: z.string(),
    balance: z.number(),
    currency: z.enum(['USD', 'SLE']),
    is_active: z.boolean(),
    metadata: MetadataRecord,
  })
  .meta({ id: 'Wallet' });

export const TransactionBody = z
  .object({
    id: z.string(),
    wallet_id: z.string().nullable(),
    escrow_wallet_id: z.string().nullable(),
    recipient_wallet_id: z.string().nullable(),
    application_wallet_id: z.string().nullable(),
    amount: z.number(),
    escrow_amount: z.number(),
    application_fee: z.number().nullable(),
    transaction_type: z.enum(TRANSACTION_TYPES),
    status: z.enum(TRANSACTION_STATUSES),
    description: z.string(),
    metadata: MetadataRecord,
    created_at: z.string(),
    updated_at: z.string(),
    source_transaction_id: z.string().nullable().optional().meta({
      description:
        'The card deposit this record comes from: on `card_refund`, `dispute_reserve` and `dispute_release` only',
    }),
    amount_refunded: z.number().optional().meta({
      description:
        'What the deposit has refunded, pending and completed refunds (a failed one counts nothing): on `card_deposit` only',
    }),
  })
  .meta({ id: 'Transaction' });

export function userBody(u: UserRow): z.infer<typeof UserBody> {
  return {
    id: u.id,
    app_user_id: u.app_user_id,
    name: u.name,
    phone_number: u.phone_number,
    email: u.email,
    username: u.username,
    is_active: u.is_active,
    metadata: u.metadata,
    created_at: u.created_at,
    updated_at: u.updated_at,
  };
}

export function userDetailBody(u: UserRow): z.infer<typeof UserDetailBody> {
  return {
    id: u.id,
    app_user_id: u.app_user_id,
    name: u.name,
    email: u.email,
    phone_number: u.phone_number,
    is_active: u.is_active,
    metadata: u.metadata,
    created_at: u.created_at,
  };
}

export function walletBody(w: WalletRow): z.infer<typeof WalletBody> {
  return {
    id: w.id,
    user_id: w.user_id,
    balance: minorToMajorNumber(w.balance),
    currency: w.currency,
    is_active: w.is_active,
    metadata: w.metadata,
  };
}

/** The record as the API shows it; a money step stores it as its request's answer. */
export function transactionBody(
  t: TransactionRow,
  links?: PaymentLinks,
): z.infer<typeof TransactionBody> {
  return {
    ...transactionAnswer(t),
    ...(links?.source_transaction_id !== undefined && {
      source_transaction_id: links.source_transaction_id,
    }),
    ...(links?.amount_refunded !== undefined && {
      amount_refunded: minorToMajorNumber(links.amount_refunded),
    }),
  };
}

/**
 * Records as the API shows them when it reads them (one, a page): with the deposit a refund or
 * dispute record comes from and what a card deposit has refunded, read in one query.
 */
export async function transactionBodies(
  db: CommonQueryMethods,
  rows: readonly TransactionRow[],
): Promise<z.infer<typeof TransactionBody>[]> {
  const links = await paymentLinks(db, rows);
  return rows.map((row) => transactionBody(row, links.get(row.id)));
}

/**
 * The answer to a request whose money step is made (src/db/transactions.ts `madeStepRow`), with
 * `answered` when the step stored it under the request's Idempotency-Key already, in the
 * transaction that moved the money: the pipeline then stores nothing itself.
 */
export async function madeStepAnswer(
  db: CommonQueryMethods,
  done: { transactionId: string; transaction?: TransactionRecord; answered?: true },
) {
  return {
    body: transactionBody(await madeStepRow(db, done)),
    ...(done.answered && { answered: true }),
  };
}

/** A payment's status after the engine asked or told its workflow (sync, simulated webhook). */
export const StatusBody = z.object({
  status: z.string(),
  transaction_id: z.string(),
  message: z.string(),
});

export const WebhookSubscriptionBody = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    is_active: z.boolean(),
    disabled_reason: z.enum(['failing']).nullable().meta({
      description:
        'Why the engine turned it off: `failing`, every delivery failed for 72 hours; null otherwise, and once turned on again',
    }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'WebhookSubscription' });

/** The answer to a create, the only one that shows the secret. */
export const CreatedWebhookSubscriptionBody = WebhookSubscriptionBody.extend({
  secret: z.string().meta({
    description: '`whsec_` and the base64 of 32 random bytes; shown only here, keep it',
  }),
}).meta({ id: 'CreatedWebhookSubscription' });

export function webhookSubscriptionBody(
  s: WebhookSubscriptionRow,
): z.infer<typeof WebhookSubscriptionBody> {
  return {
    id: s.id,
    url: s.url,
    events: [...s.events],
    is_active: s.is_active,
    disabled_reason: s.disabled_reason,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

/** The Transaction record of a payout or cashout, with the provider's fee and reference. */
export const MoneyOutBody = TransactionBody.extend({
  currency: z.enum(['USD', 'SLE']),
  provider_fee: z.number().meta({ description: 'The provider’s fee, in the base currency' }),
  total_amount: z
    .number()
    .meta({ description: 'What the wallet paid: amount, provider fee and application fee' }),
  provider_reference: z.string().nullable().meta({ description: 'The provider’s payout id' }),
}).meta({ id: 'MoneyOut' });

export function moneyOutBody({ row, meta }: MoneyOutRecord): z.infer<typeof MoneyOutBody> {
  return {
    ...transactionBody(row),
    currency: row.currency,
    provider_fee: minorToMajorNumber(BigInt(meta.provider_fee)),
    total_amount: minorToMajorNumber(BigInt(meta.total)),
    provider_reference: row.provider_reference,
  };
}

/** A card refund's record: the Transaction record with its deposit and the provider's refund. */
export const RefundBody = TransactionBody.extend({
  currency: z.enum(['USD', 'SLE']),
  source_transaction_id: z.string().meta({ description: 'The card deposit refunded' }),
  provider_reference: z.string().nullable().meta({ description: 'The provider’s refund id' }),
  reason: z
    .enum(['requested_by_customer', 'duplicate', 'fraudulent'])
    .nullable()
    .meta({ description: 'Why, as the request said' }),
}).meta({ id: 'Refund' });

export function refundBody({ row, meta }: MoneyOutRecord): z.infer<typeof RefundBody> {
  const reason = meta.destination.reason;
  return {
    ...transactionBody(row),
    currency: row.currency,
    source_transaction_id: meta.destination.deposit_id ?? '',
    provider_reference: row.provider_reference,
    reason:
      reason === 'requested_by_customer' || reason === 'duplicate' || reason === 'fraudulent'
        ? reason
        : null,
  };
}

const Decimal = z
  .string()
  .regex(/^\d+\.\d{2}$/)
  .meta({ description: 'Major units of the base currency, 2 decimals', example: '12.50' });

const FeeBreakdownBody = z
  .object({
    transaction_amount: Decimal,
    application_fee: Decimal,
    estimated_provider_fee: Decimal,
    total_fees: Decimal,
    total_amount_to_pay: Decimal,
    net_amount: Decimal,
  })
  .meta({ id: 'FeeBreakdown' });

export const DepositEstimateBody = z
  .object({
    transaction_type: z.literal('deposit'),
    payment_method: z.enum(PAYMENT_METHODS),
    fee_enabled: z.boolean().meta({ description: 'Whether the application fee applies' }),
    fee_breakdown: FeeBreakdownBody,
    message: z.string(),
  })
  .meta({ id: 'DepositFeeEstimate' });

/** The card-aware estimate's answer: the generic one and the card it detected. */
export const CardDepositEstimateBody = DepositEstimateBody.extend({
  card_metadata: z
    .object({
      brand: z.string().meta({ example: 'visa' }),
      country: z.string().meta({ description: 'ISO 3166-1 alpha-2', example: 'US' }),
      funding: z.string().meta({ description: 'credit, debit, prepaid or unknown' }),
    })
    .meta({ description: 'The card detected from the payment method' }),
}).meta({ id: 'CardDepositFeeEstimate' });

/**
 * The answer of a deposit's fee estimate, the generic one and the card-aware one alike: the
 * card's rate is named when the method is `card`.
 */
export function depositEstimateBody(
  app: Pick<ApplicationRow, 'base_currency'>,
  method: PaymentMethod,
  fees: DepositFees,
  international: boolean,
): z.output<typeof DepositEstimateBody> {
  const rate =
    method === 'card' ? ` at the ${international ? 'international' : 'domestic'} card rate` : '';
  return {
    transaction_type: 'deposit',
    payment_method: method,
    fee_enabled: fees.feeEnabled,
    fee_breakdown: {
      transaction_amount: minorToDecimalString(fees.transactionAmount),
      application_fee: minorToDecimalString(fees.applicationFee),
      estimated_provider_fee: minorToDecimalString(fees.providerFee),
      total_fees: minorToDecimalString(fees.totalFees),
      total_amount_to_pay: minorToDecimalString(fees.totalAmountToPay),
      net_amount: minorToDecimalString(fees.netAmount),
    },
    message:
      `Estimated fees for a ${method} deposit of ` +
      `${minorToDecimalString(fees.transactionAmount)} ${app.base_currency}${rate}; ` +
      'no money has moved',
  };
}

export const DisputeBody = z
  .object({
    id: z.string(),
    transaction_id: z.string().meta({ description: 'The disputed card deposit' }),
    wallet_id: z.string().meta({ description: 'The wallet the deposit credited' }),
    amount: z.number().meta({ description: 'The disputed amount (base currency, major units)' }),
    reserved_amount: z
      .number()
      .meta({ description: 'What left the wallet for the dispute reserve at opening' }),
    uncovered_amount: z.number().meta({
      description: 'What the wallet lacked at opening: owed by the application, for the operator',
    }),
    reason: z.string(),
    status: z.enum(['needs_response', 'under_review', 'won', 'lost']),
    evidence_due_by: z.string(),
    metadata: MetadataRecord,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Dispute' });

/** A payment's merchant metadata as the API shows it (the export's column too). */
export function transactionMetadata(row: TransactionRow): Record<string, string> {
  return row.merchant_metadata;
}

const RECON_PROVIDER = z.enum(RECON_PROVIDERS);

export const ReconImportBody = z
  .object({
    id: z.string().nullable().meta({ description: 'Null when the file was refused' }),
    provider: RECON_PROVIDER,
    rows: z.int().meta({ description: 'Data rows read, the header not counted' }),
    rows_bad: z.int().meta({ description: 'Rows refused; any refuses the whole file' }),
    errors: z
      .array(
        z.object({
          row: z.int().meta({ description: 'The line of the file, the header being line 1' }),
          field: z.string().meta({
            description: 'A column of the header, or `header`, `row` or `file`',
          }),
          message: z.string(),
        }),
      )
      .meta({ description: 'The first 100 problems, in file order' }),
    sha256: z.string().meta({ description: 'SHA-256 of the file’s bytes, hex' }),
    created_at: z.string().nullable().meta({ description: 'Null when the file was refused' }),
  })
  .meta({ id: 'ReconciliationImport' });

/** A refused settlement file: the import's body with the `detail` every error carries. */
export const RefusedReconImportBody = ReconImportBody.extend({ detail: z.string() }).meta({
  id: 'RefusedReconciliationImport',
});

export function reconImportBody(i: ReconImport): z.infer<typeof ReconImportBody> {
  return {
    id: i.id,
    provider: i.provider,
    rows: i.rows,
    rows_bad: 0,
    errors: [],
    sha256: i.sha256,
    created_at: i.createdAt,
  };
}

export const ReconRunBody = z
  .object({
    id: z.string(),
    provider: RECON_PROVIDER,
    from: z.string().meta({ description: 'The window’s start (inclusive)' }),
    to: z.string().meta({ description: 'The window’s end (exclusive)' }),
    import_id: z
      .string()
      .nullable()
      .meta({ description: 'The settlement file read instead of the provider’s list' }),
    status: z.enum(RECON_RUN_STATUSES),
    counts: z.object({
      matched: z.int(),
      missing_internal: z.int(),
      missing_external: z.int(),
      amount_mismatch: z.int(),
      status_mismatch: z.int(),
      duplicate: z.int(),
    }),
    created_at: z.string(),
    completed_at: z.string().nullable(),
  })
  .meta({ id: 'ReconciliationRun' });

export const reconRunBody = (r: ReconRun): z.infer<typeof ReconRunBody> => reconRunAnswer(r);

const ReconSideBody = z.object({
  amount: z.number().meta({
    description: 'Major units of the currency the provider counts the payment in',
  }),
  status: z.string(),
});

export const ReconExceptionBody = z
  .object({
    id: z.string(),
    run_id: z
      .string()
      .nullable()
      .meta({ description: 'The run that found it last; null when the engine found it itself' }),
    kind: z.enum(RECON_EXCEPTION_KINDS),
    transaction_id: z.string().nullable(),
    provider_reference: z.string().nullable(),
    ours: ReconSideBody.nullable().meta({
      description: 'The payment as the engine has it (its transaction status); null: none',
    }),
    theirs: ReconSideBody.extend({ booked_at: z.string() }).nullable().meta({
      description: 'The record as the provider booked it (succeeded, failed, reversed); null: none',
    }),
    status: z.enum(['open', 'resolved']),
    resolution: z.enum(['accept', 'adjust']).nullable(),
    note: z.string().nullable(),
    resolved_by: z.string().nullable().meta({
      description: 'Who resolved it: `credential:<id>` (application) or `admin:<id>`',
    }),
    created_at: z.string(),
    resolved_at: z.string().nullable(),
  })
  .meta({ id: 'ReconciliationException' });

export const reconExceptionBody = (e: ReconException): z.infer<typeof ReconExceptionBody> =>
  reconExceptionAnswer(e);
