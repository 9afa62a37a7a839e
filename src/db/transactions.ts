import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { minorToMajorNumber, type Currency } from '../domain/money';
import {
  TRANSACTION_STATUSES,
  TRANSACTION_TYPES,
  type Caller,
  type Mode,
  type TransactionStatus,
  type TransactionType,
} from '../domain/types';
import type { TransactionRecord } from '../workflows/shared';
import { prepare } from './pool';
import { compileRules } from './money-rules';
import { walletFacts } from './wallet-facts';
import { depositRules } from '../domain/money-rules';
import { metadataMerge } from './metadata';
import { oneRow, manyRows, type WrittenColumn } from './insert-values';

export const transactionRow = z.object({
  id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  transaction_type: z.enum(TRANSACTION_TYPES),
  status: z.enum(TRANSACTION_STATUSES),
  wallet_id: z.string().nullable(),
  recipient_wallet_id: z.string().nullable(),
  escrow_wallet_id: z.string().nullable(),
  application_wallet_id: z.string().nullable(),
  currency: z.enum(['USD', 'SLE']),
  amount: z.bigint(),
  escrow_amount: z.bigint(),
  application_fee: z.bigint().nullable(),
  description: z.string(),
  provider_reference: z.string().nullable(),
  workflow_id: z.string().nullable(),
  /** The merchant's metadata; `metadata` is the engine's own provider facts, never shown as it. */
  merchant_metadata: z.record(z.string(), z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});
export type TransactionRow = z.infer<typeof transactionRow>;

/** A payment row as JSON, for a workflow result (src/workflows/shared.ts `TransactionRecord`). */
export function transactionRecord(row: TransactionRow): TransactionRecord {
  return {
    ...row,
    amount: row.amount.toString(),
    escrow_amount: row.escrow_amount.toString(),
    application_fee: row.application_fee?.toString() ?? null,
  };
}

/** The row back from its JSON form. */
export function transactionFromRecord(record: TransactionRecord): TransactionRow {
  return {
    ...record,
    amount: BigInt(record.amount),
    escrow_amount: BigInt(record.escrow_amount),
    application_fee: record.application_fee === null ? null : BigInt(record.application_fee),
    // Absent from records of results recorded before payments carried it.
    merchant_metadata: record.merchant_metadata ?? {},
  };
}

/** The columns of `transactionRow`, for queries elsewhere that read or return a payment row. */
export const transactionColumns = sql.fragment`id, application_id, mode, transaction_type, status, wallet_id,
  recipient_wallet_id, escrow_wallet_id, application_wallet_id, currency, amount, escrow_amount,
  application_fee, description, provider_reference, workflow_id, merchant_metadata, created_at,
  updated_at`;

export type NewTransaction = {
  id: string;
  applicationId: string;
  mode: Mode;
  type: TransactionType;
  status: TransactionStatus;
  currency: Currency;
  amount: bigint;
  walletId?: string | null;
  recipientWalletId?: string | null;
  escrowWalletId?: string | null;
  applicationWalletId?: string | null;
  escrowAmount?: bigint;
  applicationFee?: bigint | null;
  description?: string;
  providerReference?: string | null;
  workflowId?: string | null;
  parentId?: string | null;
  metadata?: Record<string, unknown>;
  /** The merchant's metadata (src/api/schemas.ts `Metadata`), written with the row. */
  merchantMetadata?: Readonly<Record<string, string>> | undefined;
};

export async function insertTransaction(
  db: CommonQueryMethods,
  t: NewTransaction,
): Promise<TransactionRow> {
  return db.one(
    prepare(sql.type(transactionRow)`
      INSERT INTO transactions ${transactionValues(t)} RETURNING ${transactionColumns}`),
  );
}

/**
 * `insertTransaction` of a deposit, only while the deposit's compiled rules hold of its wallet in
 * the payment's currency; the account's key-share lock makes a currency switch (src/db/applications.ts)
 * wait for it, or it for the switch. Null when they do not hold (the caller's check says why).
 */
export async function insertTransactionInCurrency(
  db: CommonQueryMethods,
  t: NewTransaction & { walletId: string },
): Promise<TransactionRow | null> {
  const rules = compileRules(depositRules, {
    applicationId: t.applicationId,
    mode: t.mode,
    currency: t.currency,
    credited: t.amount,
  });
  return db.maybeOne(
    prepare(sql.type(transactionRow)`
      WITH deposit_account AS (
        SELECT id, currency FROM ledger_accounts WHERE id = ${t.walletId} FOR KEY SHARE
      ), deposit_facts AS (
        SELECT ${walletFacts({}, { prefix: 'wallet_', omit: ['balance'] })}
        FROM (SELECT) one
          LEFT JOIN (deposit_account a JOIN wallets w ON w.id = a.id
            JOIN applications app ON app.id = w.application_id) ON true
      )
      INSERT INTO transactions ${transactionValues(
        t,
        sql.fragment`coalesce((SELECT ${rules} FROM deposit_facts), false)`,
      )}
      RETURNING ${transactionColumns}`),
  );
}

/**
 * `insertTransaction` as a part of another statement's WITH (src/db/ledger.ts `alongside`); the row
 * it writes is `writtenTransaction(t, at)`.
 */
export function transactionInsertPart(
  t: NewTransaction,
  guard?: FragmentSqlToken,
): FragmentSqlToken {
  return sql.fragment`payment_written AS (INSERT INTO transactions ${transactionValues(t, guard)})`;
}

/**
 * The row `insertTransaction` writes, as it reads back, in a database transaction whose `now()`
 * is `at` (every timestamp default is `now()`, the transaction's start, the same for each of
 * its statements; no trigger changes the row).
 */
export function writtenTransaction(t: NewTransaction, at: string): TransactionRow {
  return {
    id: t.id,
    application_id: t.applicationId,
    mode: t.mode,
    transaction_type: t.type,
    status: t.status,
    wallet_id: t.walletId ?? null,
    recipient_wallet_id: t.recipientWalletId ?? null,
    escrow_wallet_id: t.escrowWalletId ?? null,
    application_wallet_id: t.applicationWalletId ?? null,
    currency: t.currency,
    amount: t.amount,
    escrow_amount: t.escrowAmount ?? 0n,
    application_fee: t.applicationFee ?? null,
    description: t.description ?? '',
    provider_reference: t.providerReference ?? null,
    workflow_id: t.workflowId ?? null,
    merchant_metadata: { ...t.merchantMetadata },
    created_at: at,
    updated_at: at,
  };
}

/** The columns a new payment row is written with (the rest take their defaults), in order. */
function writtenColumns(t: NewTransaction): readonly WrittenColumn[] {
  return [
    ['id', 'uuid', t.id],
    ['application_id', 'uuid', t.applicationId],
    ['mode', 'text', t.mode],
    ['transaction_type', 'text', t.type],
    ['status', 'text', t.status],
    ['currency', 'text', t.currency],
    ['amount', 'int8', t.amount.toString()],
    ['wallet_id', 'uuid', t.walletId ?? null],
    ['recipient_wallet_id', 'uuid', t.recipientWalletId ?? null],
    ['escrow_wallet_id', 'uuid', t.escrowWalletId ?? null],
    ['application_wallet_id', 'uuid', t.applicationWalletId ?? null],
    ['escrow_amount', 'int8', (t.escrowAmount ?? 0n).toString()],
    ['application_fee', 'int8', t.applicationFee?.toString() ?? null],
    ['description', 'text', t.description ?? ''],
    ['provider_reference', 'text', t.providerReference ?? null],
    ['workflow_id', 'text', t.workflowId ?? null],
    ['parent_id', 'uuid', t.parentId ?? null],
    ['metadata', 'jsonb', JSON.parse(JSON.stringify(t.metadata ?? {}))],
    ['merchant_metadata', 'jsonb', { ...t.merchantMetadata }],
  ];
}

function transactionValues(t: NewTransaction, guard?: FragmentSqlToken): FragmentSqlToken {
  return oneRow(writtenColumns(t), guard);
}

/**
 * `insertTransaction` of many new rows as one part of another statement's WITH (src/db/ledger.ts
 * `alongside`), each row written as the one alone would be: in a database transaction whose
 * `now()` is `at`, each reads back as `writtenTransaction(t, at)`.
 */
export function transactionsInsertPart(ts: readonly NewTransaction[]): FragmentSqlToken {
  return sql.fragment`payments_written AS (
    INSERT INTO transactions ${manyRows(ts.map(writtenColumns))})`;
}

export async function findTransaction(
  db: CommonQueryMethods,
  id: string,
): Promise<TransactionRow | null> {
  // Prepared: an escrow release or refund reads its hold with it when the API has not seen it.
  return db.maybeOne(
    prepare(
      sql.type(transactionRow)`SELECT ${transactionColumns} FROM transactions WHERE id = ${id}`,
    ),
  );
}

/**
 * The row of a payment step a workflow answered as made: carried by the answer, read only when
 * the answer lacks it (a step found already made on a retry, or an answer recorded before rows
 * travelled with it).
 */
export async function madeStepRow(
  db: CommonQueryMethods,
  made: { transactionId: string; transaction?: TransactionRecord },
): Promise<TransactionRow> {
  const row = made.transaction
    ? transactionFromRecord(made.transaction)
    : await findTransaction(db, made.transactionId);
  if (!row) throw new Error(`payment step ${made.transactionId} answered without a record`);
  return row;
}

/**
 * A payment as the API answers it (src/api/serializers.ts `TransactionBody`): amounts as major-unit
 * numbers (docs/api.md, API conventions). Here, so that a money step can store it as the
 * answer of the request that asked for it (src/db/money-steps.ts `answer`).
 */
export function transactionAnswer(t: TransactionRow) {
  return {
    id: t.id,
    wallet_id: t.wallet_id,
    escrow_wallet_id: t.escrow_wallet_id,
    recipient_wallet_id: t.recipient_wallet_id,
    application_wallet_id: t.application_wallet_id,
    amount: minorToMajorNumber(t.amount),
    escrow_amount: minorToMajorNumber(t.escrow_amount),
    application_fee: t.application_fee === null ? null : minorToMajorNumber(t.application_fee),
    transaction_type: t.transaction_type,
    status: t.status,
    description: t.description,
    metadata: t.merchant_metadata,
    created_at: t.created_at,
    updated_at: t.updated_at,
  };
}

/**
 * Merges `patch` into the payment's merchant metadata in one statement (src/db/metadata.ts); null
 * when the payment is gone or the merged metadata would break the key limit.
 */
export async function mergeTransactionMetadata(
  db: CommonQueryMethods,
  id: string,
  patch: Readonly<Record<string, string | null>>,
): Promise<TransactionRow | null> {
  const merge = metadataMerge(patch, sql.identifier(['merchant_metadata']));
  return db.maybeOne(sql.type(transactionRow)`
    UPDATE transactions SET merchant_metadata = ${merge.set}, updated_at = now()
    WHERE id = ${id} AND ${merge.fits}
    RETURNING ${transactionColumns}`);
}

/** Moves a payment to a new status; returns the row as it now is. */
export async function setTransactionStatus(
  db: CommonQueryMethods,
  id: string,
  status: TransactionStatus,
): Promise<TransactionRow> {
  return db.one(
    prepare(sql.type(transactionRow)`
      UPDATE transactions SET status = ${status}, updated_at = now() WHERE id = ${id}
      RETURNING ${transactionColumns}`),
  );
}

/** A transaction of the caller's by our id or by the provider's reference, or null. */
export async function findTransactionByReference(
  db: CommonQueryMethods,
  caller: Caller,
  reference: string,
): Promise<TransactionRow | null> {
  return db.maybeOne(sql.type(transactionRow)`
    SELECT ${transactionColumns}
    FROM transactions
    WHERE application_id = ${caller.applicationId} AND mode = ${caller.mode}
      AND (provider_reference = ${reference} OR id::text = ${reference.toLowerCase()})
    LIMIT 1`);
}
