import { randomUUID } from 'node:crypto';
import { isSqlToken, sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import type { Mode } from '../domain/types';
import { prepare } from './pool';
import { manyRows, oneRow, type WrittenColumn } from './insert-values';

/** An event for the outbox (insertEvent, eventInsertPart). */
export type NewEvent = {
  applicationId: string;
  mode: Mode;
  type: string;
  transactionId: string | null;
  /** For `eventInsertPart`, also a jsonb expression the statement computes (`jsonbValue`). */
  data: unknown;
};

/** Writes an event to the outbox; call it in the transaction of the movement it describes. */
export async function insertEvent(db: CommonQueryMethods, e: NewEvent): Promise<string> {
  const id = randomUUID();
  await db.query(prepare(sql.unsafe`INSERT INTO events ${eventValues(id, e)}`));
  return id;
}

/** An event's insert as a part of another statement's WITH (src/db/ledger.ts `alongside`). */
export function eventInsertPart(e: NewEvent, guard?: FragmentSqlToken): FragmentSqlToken {
  return sql.fragment`event_written AS (INSERT INTO events ${eventValues(randomUUID(), e, guard)})`;
}

/** The columns an event is written with, in order. */
function eventColumns(id: string, e: NewEvent): readonly WrittenColumn[] {
  return [
    ['id', 'uuid', id],
    ['application_id', 'uuid', e.applicationId],
    ['mode', 'text', e.mode],
    ['type', 'text', e.type],
    ['transaction_id', 'uuid', e.transactionId],
    ['data', 'jsonb', isSqlToken(e.data) ? e.data : JSON.parse(JSON.stringify(e.data))],
  ];
}

function eventValues(id: string, e: NewEvent, guard?: FragmentSqlToken): FragmentSqlToken {
  return oneRow(eventColumns(id, e), guard);
}

/** `insertEvent` of many events as one part of another statement's WITH, each as alone. */
export function eventsInsertPart(es: readonly NewEvent[]): FragmentSqlToken {
  return sql.fragment`events_written AS (
    INSERT INTO events ${manyRows(es.map((e) => eventColumns(randomUUID(), e)))})`;
}
