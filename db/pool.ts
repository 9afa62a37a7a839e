import { createHash } from 'node:crypto';
import {
  createBigintTypeParser,
  createPool,
  SchemaValidationError,
  sql,
  type CommonQueryMethods,
  type DatabasePool,
  type Interceptor,
  type QueryResultRow,
  type QuerySqlToken,
} from 'slonik';

export type { DatabasePool, DatabaseTransactionConnection, CommonQueryMethods } from 'slonik';

/** Timestamps arrive as ISO 8601 strings in UTC with a trailing Z, as the API shows them. */
const timestamptzParser = {
  name: 'timestamptz',
  parse: (value: string) => new Date(value).toISOString(),
};

/**
 * Validates every row of a `sql.type(schema)` query, so that a schema that drifts from the
 * database fails loudly at the first query. Synchronously (`transformRow`): slonik runs an
 * interceptor's `transformRowAsync` through a task queue of its own for every result, rows or
 * none, which cost more than the validation (the README's benchmark). Every schema of ours is
 * synchronous; one that is not (an async refinement) fails its first query, here.
 */
const resultParserInterceptor: Interceptor = {
  name: 'result-parser',
  transformRow: (context, query, row) => {
    const parser = context.resultParser;
    if (!parser) return row;
    const result = parser['~standard'].validate(row);
    if (result instanceof Promise) {
      throw new TypeError('A sql.type schema must validate synchronously (no async refinements)');
    }
    if (result.issues) {
      throw new SchemaValidationError(query, row, result.issues);
    }
    return result.value as QueryResultRow;
  },
};

/** Statement names by SQL text, for `prepare`. */
const statementNames = new Map<string, string>();
/** Past this many texts a statement runs unnamed: what each connection prepares stays bounded. */
const MAX_PREPARED_STATEMENTS = 100;

/**
 * `query` as a named prepared statement: the first time a pooled connection runs it, Postgres
 * parses and keeps it; every later run on that connection only binds and executes it, and after
 * five runs Postgres may keep its plan as well. For the statements every payment runs (the
 * request's count and key claim, the money step's locks and ledger statement), whose parse and
 * plan are much of what Postgres spends on a payment (the README's benchmark). The name is a
 * hash of the text, so a text that varies (a statement built of optional parts) is one prepared
 * statement per variant, each checked by Postgres as any other. Only statements whose result
 * columns are spelled out (no `*` over a table): a prepared `SELECT *` fails once a migration
 * adds a column. A pool opened with `preparedStatements: false` runs them unnamed.
 */
export function prepare<T extends QuerySqlToken>(query: T): T {
  let name = statementNames.get(query.sql);
  if (name === undefined) {
    if (statementNames.size >= MAX_PREPARED_STATEMENTS) return query;
    name = `wallet_${createHash('sha256').update(query.sql).digest('hex').slice(0, 32)}`;
    statementNames.set(query.sql, name);
  }
  return { ...query, name };
}

/** Runs every statement unnamed (`prepare` ignored), for a pool that may not keep them. */
const unnamedStatementsInterceptor: Interceptor = {
  name: 'unnamed-statements',
  transformQuery: (_context, query) =>
    query.name === undefined ? query : { sql: query.sql, values: query.values },
};

/** How long opening a connection may take before the query fails (an unreachable database). */
export const CONNECTION_TIMEOUT_MS = 1_500;

export async function createDatabasePool(
  url: string,
  options: {
    maximumPoolSize?: number;
    /** Whether `prepare`d statements are kept by the server (default true; see `prepare`). */
    preparedStatements?: boolean;
  } = {},
): Promise<DatabasePool> {
  const pool = await createPool(url, {
    maximumPoolSize: options.maximumPoolSize ?? 20,
    typeParsers: [createBigintTypeParser(), timestamptzParser],
    interceptors: [
      ...(options.preparedStatements === false ? [unnamedStatementsInterceptor] : []),
      resultParserInterceptor,
    ],
    statementTimeout: 30_000,
    idleInTransactionSessionTimeout: 60_000,
    // A database that does not answer fails a request within this bound (503 at the API) instead
    // of hanging it; on loopback a healthy server connects in milliseconds.
    connectionTimeout: CONNECTION_TIMEOUT_MS,
    // No session state is ever left on a pooled connection (no SET, no temp tables, no advisory
    // locks: migrations use their own client), so the default `DISCARD ALL` on every release is
    // a wasted round trip on every statement-heavy payment path.
    resetConnection: () => Promise.resolve(),
  });
  // Slonik emits every failed query's error on the pool, then rethrows it to the caller, who
  // handles it. Without a listener that emit throws instead, and where realms differ (under
  // Jest) it throws a wrapper, so `instanceof UniqueIntegrityConstraintViolationError` fails.
  pool.on('error', () => undefined);
  const open = pool.transaction.bind(pool);
  (pool as { transaction: DatabasePool['transaction'] }).transaction = async (
    handler,
    retryLimit,
  ) => {
    const hooks: (() => void)[] = [];
    const result = await open((trx) => {
      // A retried attempt (slonik retries a transaction that hit a serialization failure)
      // starts over: what a rolled-back attempt asked for is dropped.
      hooks.length = 0;
      afterCommitHooks.set(trx, hooks);
      return handler(trx);
    }, retryLimit);
    for (const hook of hooks) hook();
    return result;
  };
  return pool;
}

const afterCommitHooks = new WeakMap<object, (() => void)[]>();

/**
 * Runs `fn` once the database transaction `trx` (opened by a pool's `transaction`) has
 * committed, never if it rolls back; at once on any other connection. For what must count
 * only what was written: a metric counted before the commit would count again when a failed
 * commit is retried.
 */
export function afterCommit(trx: CommonQueryMethods, fn: () => void): void {
  const hooks = afterCommitHooks.get(trx);
  if (hooks) hooks.push(fn);
  else fn();
}

/** Whether the database answers a trivial query (readiness). */
export async function databaseAnswers(db: CommonQueryMethods): Promise<boolean> {
  return db.oneFirst(sql.unsafe`SELECT 1`).then(
    () => true,
    () => false,
  );
}

/** Errors that say the database cannot be reached (down, restarting, the connection cut). */
const UNREACHABLE_ERRORS = new Set([
  'ConnectionError',
  'BackendTerminatedError',
  'BackendTerminatedUnexpectedlyError',
]);

/**
 * Whether `error` says that Postgres is unreachable rather than that a statement failed: slonik's
 * connection errors (by name: under Jest classes differ between realms), the driver's connection
 * cut or not opened in time, SQLSTATE class 08 (connection exception) or 57P01-57P03 (shut down,
 * starting up). A socket error of anything else (a provider's HTTP call) is not one of them.
 */
export function isDatabaseUnreachable(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = error; e && typeof e === 'object' && !seen.has(e);) {
    seen.add(e);
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (UNREACHABLE_ERRORS.has(e.constructor.name)) return true;
    if (typeof code === 'string' && /^(08...|57P0[123])$/.test(code)) return true;
    if (typeof message === 'string' && /^(Connection terminated|timeout expired$)/.test(message))
      return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Runs `open` (creating a pool connects at once) until the database answers: a process started
 * during an outage waits for its end instead of exiting. Errors other than an unreachable
 * database (bad credentials, no such database) are thrown at once.
 */
export async function whenDatabaseAnswers<T>(
  open: () => Promise<T>,
  onWait: (error: unknown, retryInMs: number) => void,
): Promise<T> {
  for (let delay = 500; ; delay = Math.min(delay * 2, 10_000)) {
    try {
      return await open();
    } catch (error) {
      if (!isDatabaseUnreachable(error)) throw error;
      onWait(error, delay);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
