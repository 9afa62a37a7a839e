import { sql, type FragmentSqlToken } from 'slonik';
import { jsonbValue } from './pool';

/**
 * The values of an insert: `VALUES (...)`, or, given a `guard` (a boolean SQL expression), the
 * same values selected only where the guard holds, so that a statement whose guard fails inserts
 * nothing (src/db/money-steps.ts `recordMoneyStepAtOnce`).
 */
export function insertedValues(
  values: FragmentSqlToken,
  guard: FragmentSqlToken | undefined,
): FragmentSqlToken {
  return guard ? sql.fragment`SELECT ${values} WHERE ${guard}` : sql.fragment`VALUES (${values})`;
}

/** A column of an insert: its name, its type (as a row read from JSON is cast) and its value. */
export type WrittenColumn = readonly [
  name: string,
  type: 'uuid' | 'text' | 'int8' | 'jsonb',
  value: unknown,
];

const columnNames = (columns: readonly WrittenColumn[]) =>
  sql.join(
    columns.map(([name]) => sql.identifier([name])),
    sql.fragment`, `,
  );

/** `(columns) VALUES (...)` of one row, or, given a `guard`, selected only where it holds. */
export function oneRow(
  columns: readonly WrittenColumn[],
  guard?: FragmentSqlToken,
): FragmentSqlToken {
  const values = sql.join(
    columns.map(([, type, value]) =>
      type === 'jsonb' ? jsonbValue(value) : (value as string | null),
    ),
    sql.fragment`, `,
  );
  return sql.fragment`(${columnNames(columns)}) ${insertedValues(sql.fragment`${values}`, guard)}`;
}

/**
 * `(columns) SELECT ...` of many rows of the same columns in one parameter (a JSON array read
 * back by `jsonb_to_recordset`), so that a thousand rows are one statement's work.
 */
export function manyRows(rows: readonly (readonly WrittenColumn[])[]): FragmentSqlToken {
  const first = rows[0];
  if (first === undefined) throw new Error('an insert of many rows needs one at least');
  const json = rows.map((columns) => Object.fromEntries(columns.map(([name, , v]) => [name, v])));
  const shape = sql.join(
    first.map(([name, type]) => sql.fragment`${sql.identifier([name])} ${sql.identifier([type])}`),
    sql.fragment`, `,
  );
  return sql.fragment`(${columnNames(first)})
    SELECT ${columnNames(first)} FROM jsonb_to_recordset(${sql.jsonb(json)}) AS r (${shape})`;
}
