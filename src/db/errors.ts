import { InvalidInputError } from 'slonik';

/**
 * Reading the database's errors by their SQLSTATE and constraint name, never by message text
 * (messages change with the server's version and locale). Slonik wraps the driver's error, so
 * each looks through the chain of causes.
 */

type PgFields = { code?: unknown; constraint?: unknown };

function* chain(error: unknown): Generator<PgFields> {
  const seen = new Set<unknown>();
  for (let e = error; e && typeof e === 'object' && !seen.has(e);) {
    seen.add(e);
    yield e;
    e = (e as { cause?: unknown }).cause;
  }
}

/** The SQLSTATE of a database error (for example 23505), or null for any other error. */
export function sqlState(error: unknown): string | null {
  for (const e of chain(error)) {
    if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return e.code;
  }
  return null;
}

const UNIQUE_VIOLATION = '23505';

/** The constraint (or unique index) a unique violation names, or null for any other error. */
export function uniqueViolation(error: unknown): string | null {
  if (sqlState(error) !== UNIQUE_VIOLATION) return null;
  for (const e of chain(error)) {
    if (typeof e.constraint === 'string') return e.constraint;
  }
  return null;
}

/**
 * An error that no retry can cure: refused data (class 22, or slonik's InvalidInputError) or a
 * broken integrity rule (class 23). A unique violation is left out: in an idempotent step it means
 * a concurrent attempt wrote the row first, and the retry finds it.
 */
export function isPermanentDatabaseError(error: unknown): boolean {
  // Slonik refuses some values itself, before the statement is sent (a NUL character in a JSON
  // value), and reports 22P02 (invalid_text_representation) without its code: both as its
  // InvalidInputError, whose other uses (an empty or multi-statement query) no retry cures either.
  for (const e of chain(error)) if (e instanceof InvalidInputError) return true;
  const state = sqlState(error);
  if (state === null || state === UNIQUE_VIOLATION) return false;
  return state.startsWith('22') || state.startsWith('23');
}
