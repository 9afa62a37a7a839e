import { sql, UniqueIntegrityConstraintViolationError, type FragmentSqlToken } from 'slonik';
import type { Posting } from '../domain/ledger';
import type { TransactionStatus } from '../domain/types';
import { countPaymentEnded } from '../observability/metrics';
import { answerKeyPart, type KeyUse } from './idempotency';
import { postGuardedLedgerTransaction, postLedgerTransaction } from './ledger';
import {
  afterCommit,
  nowAsRead,
  type CommonQueryMethods,
  type DatabaseTransactionConnection,
} from './pool';
import {
  insertTransaction,
  setTransactionStatus,
  transactionAnswer,
  transactionInsertPart,
  writtenTransaction,
  type NewTransaction,
  type TransactionRow,
} from './transactions';
import { eventInsertPart, insertEvent } from './transaction-events';

/**
 * The `answer` of a step whose request is answered with the payment row as written (a transfer,
 * an escrow hold, release or refund): none when the request came without an Idempotency-Key.
 */
export function recordAnswer(
  owner: { applicationId: string; mode: string },
  use: { key: string; claimedAt: string } | undefined,
): { answer: StepAnswer } | undefined {
  return use && { answer: { use: { ...owner, ...use }, status: 200, body: transactionAnswer } };
}

type StepAnswer = { use: KeyUse; status: number; body: (row: TransactionRow) => unknown };
type StepEvent = { type: string; data: (row: TransactionRow) => unknown };
export type StepLedger = {
  postings: readonly Posting[];
  /** Defaults to the payment's description. */
  description?: string;
  metadata?: Record<string, string | number | boolean | null>;
  /** More writes of the step for the ledger's statement (an escrow hold's new amount). */
  alongside?: readonly FragmentSqlToken[];
};

/** A step's ledger transaction, for the row it writes. */
const ledgerOf = (row: TransactionRow, ledger: StepLedger) => ({
  applicationId: row.application_id,
  mode: row.mode,
  transactionId: row.id,
  kind: row.transaction_type,
  description: ledger.description ?? row.description,
  ...(ledger.metadata ? { metadata: ledger.metadata } : {}),
  postings: ledger.postings,
});

/** A step's event, about the row it writes. */
const eventOf = (row: TransactionRow, event: StepEvent) => ({
  applicationId: row.application_id,
  mode: row.mode,
  type: event.type,
  transactionId: row.id,
  data: event.data(row),
});

/** A step's request's answer, with the row it writes. */
const answerOf = (row: TransactionRow, answer: StepAnswer) => ({
  use: answer.use,
  status: answer.status,
  body: answer.body(row),
});

/**
 * One money step, the same way every time, in the caller's database transaction (its accounts
 * locked already): the payment row, the ledger transaction when money moves, the event and the
 * request's answer, all committed together.
 */
export async function recordMoneyStep(
  trx: DatabaseTransactionConnection,
  step: {
    transaction: NewTransaction | { id: string; status: TransactionStatus };
    /** Absent when no money moves (a deposit opened, failed or expired). */
    ledger?: StepLedger;
    /** Absent when nothing is announced (a deposit opened). */
    event?: StepEvent;
    /**
     * The answer of the API request that asked for this step, stored under its Idempotency-Key
     * with the step (src/db/idempotency.ts `answerKeyPart`): the API then stores nothing itself.
     */
    answer?: StepAnswer;
    /**
     * The database transaction's `now()`, read by one of its earlier statements (the step's
     * lock): a new payment row that moves money is then written by the ledger's statement, one
     * round trip for all, as it will read back (src/db/transactions.ts `writtenTransaction`).
     */
    at?: string;
  },
): Promise<TransactionRow> {
  const fresh = 'type' in step.transaction ? step.transaction : null;
  // A new row of a step that moves money, its transaction's now() known: the ledger's statement
  // writes it, and this is the row as it will read back.
  const inLedger =
    fresh && step.ledger && step.at !== undefined ? writtenTransaction(fresh, step.at) : null;
  const row =
    inLedger ??
    (fresh
      ? await insertTransaction(trx, fresh)
      : await setTransactionStatus(trx, step.transaction.id, step.transaction.status));
  const event = step.event && eventOf(row, step.event);
  const answer = step.answer && answerOf(row, step.answer);
  if (step.ledger) {
    // The new row, the event and the answer are written by the ledger's statement: one round
    // trip for all.
    await postLedgerTransaction(trx, ledgerOf(row, step.ledger), [
      ...(inLedger && fresh ? [transactionInsertPart(fresh)] : []),
      ...(step.ledger.alongside ?? []),
      ...(event ? [eventInsertPart(event)] : []),
      ...(answer ? [answerKeyPart(answer.use, answer.status, answer.body)] : []),
    ]);
  } else {
    // Only a step that moves money answers a request (a transfer); no other asks for it.
    if (answer) throw new Error('a money step without a ledger transaction stores no answer');
    if (event) await insertEvent(trx, event);
  }
  // Counted once committed: a step whose transaction rolls back (and is retried) counts once.
  afterCommit(trx, () => countPaymentEnded(row));
  return row;
}

/**
 * Stands for the statement's time in the row of a step written in one statement, built before
 * the statement runs; its event and answer take the database's clock in its place.
 */
const STATEMENT_TIME = 'the statement time';

/**
 * `value` as jsonb in SQL, each top-level field that holds `STATEMENT_TIME` set to the
 * statement's `now()` as it reads back (src/db/pool.ts `nowAsRead`).
 */
function stampedJson(value: unknown): FragmentSqlToken {
  const json: unknown = JSON.parse(JSON.stringify(value));
  const fields =
    json && typeof json === 'object' && !Array.isArray(json) ? Object.entries(json) : [];
  const stamped = fields.filter(([, v]) => v === STATEMENT_TIME).map(([k]) => k);
  const rest =
    stamped.length > 0 ? Object.fromEntries(fields.filter(([, v]) => v !== STATEMENT_TIME)) : json;
  if (JSON.stringify(rest).includes(STATEMENT_TIME)) {
    throw new Error("a money step's time is stamped only in its JSON's top-level fields");
  }
  if (stamped.length === 0) return sql.fragment`${sql.jsonb(rest as never)}`;
  const times = stamped.map((k) => sql.fragment`${k}::text, ${nowAsRead}`);
  return sql.fragment`(${sql.jsonb(rest as never)} || jsonb_build_object(${sql.join(times, sql.fragment`, `)}))`;
}

/**
 * A new payment's money step as one statement outside any transaction, written only where
 * `guard.guard` holds (docs/architecture.md, The transfer path), at the statement's `now()`.
 * Null when nothing was written: the caller then runs the step the usual way, which says why.
 */
export async function recordMoneyStepAtOnce(
  db: CommonQueryMethods,
  step: {
    transaction: NewTransaction;
    /** Its `alongside` parts must be written only where the guard holds (built with it). */
    ledger: Pick<StepLedger, 'postings' | 'alongside'>;
    event: StepEvent;
    answer?: StepAnswer;
  },
  guard: { prelude: FragmentSqlToken; guard: FragmentSqlToken },
): Promise<TransactionRow | null> {
  const unstamped = writtenTransaction(step.transaction, STATEMENT_TIME);
  const event = eventOf(unstamped, step.event);
  const answer = step.answer && answerOf(unstamped, step.answer);
  const at = await postGuardedLedgerTransaction(db, ledgerOf(unstamped, step.ledger), guard, [
    transactionInsertPart(step.transaction, guard.guard),
    ...(step.ledger.alongside ?? []),
    eventInsertPart({ ...event, data: stampedJson(event.data) }, guard.guard),
    ...(answer
      ? [answerKeyPart(answer.use, answer.status, stampedJson(answer.body), guard.guard)]
      : []),
  ]).catch((error: unknown) => {
    // A unique key taken meanwhile: another attempt of the same step wrote it (the usual way
    // finds it made).
    if (error instanceof UniqueIntegrityConstraintViolationError) return null;
    throw error;
  });
  if (at === null) return null;
  const row = writtenTransaction(step.transaction, at);
  countPaymentEnded(row);
  return row;
}
