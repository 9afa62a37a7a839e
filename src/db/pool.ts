import { createHash } from 'node:crypto';
import {
  createBigintTypeParser,
  createPool,
  isSqlToken,
  SchemaValidationError,
  sql,
  type CommonQueryMethods,
  type DatabasePool,
  type Interceptor,
  type QueryResultRow,
  type QuerySqlToken,
  type SqlToken,
} from 'slonik';
import { asDatabaseSettingError, isDatabaseSettingError, pgConnection } from './connection';

export type { DatabasePool, DatabaseTransactionConnection, CommonQueryMethods } from 'slonik';

/** Timestamps arrive as ISO 8601 strings in UTC with a trailing Z, as the API shows them. */
const timestamptzParser = {
  name: 'timestamptz',
  parse: (value: string) => new Date(value).toISOString(),
};

/**
 * The statement's `now()` as text, as `timestamptzParser` reads it: for a time written into JSON
 * by the statement that also writes it into a column (src/db/money-steps.ts `recordMoneyStepAtOnce`).
 */
export const nowAsRead = sql.fragment`to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** A JSON value as a jsonb parameter; a jsonb expression in SQL (a token) as it is. */
export function jsonbValue(value: unknown): SqlToken {
  return isSqlToken(value) ? value : sql.jsonb(value as never);
}

/**
 * Validates every row of a `sql.type(schema)` query, so a schema that drifts from the database
 * fails loudly at its first query. Synchronously: slonik's `transformRowAsync` queues every result,
 * which costs more than the validation; so a schema with an async refinement fails here.
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
 * `query` as a named prepared statement, for those every payment runs (see docs/architecture.md,
 * The ledger). Only with result columns spelled out: a prepared `SELECT *` fails once a migration
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

/**
 * Socket failures of a connection already taken from the pool: the server went away in the
 * middle of a conversation (killed, restarted, the network cut), which slonik passes on as the
 * driver's bare socket error.
 */
const SOCKET_FAILURES = new Set([
  'EPIPE',
  'ECONNRESET',
  'ECONNABORTED',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
]);

/** Socket errors that came from a database connection (a provider's are not the database's). */
const lostConnections = new WeakSet<object>();

function noteIfConnectionLost(error: unknown): void {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && SOCKET_FAILURES.has(code)) lostConnections.add(error as object);
}

/**
 * The pool's own statements: a connection's error ends them at once (slonik races it against
 * the statement), before the interceptor below sees the statement fail.
 */
const POOL_QUERY_METHODS = [
  'any',
  'anyFirst',
  'exists',
  'many',
  'manyFirst',
  'maybeOne',
  'maybeOneFirst',
  'one',
  'oneFirst',
  'query',
] as const;

/** Marks a statement's socket failure as the database's, for `isDatabaseUnreachable`. */
const connectionLossInterceptor: Interceptor = {
  name: 'connection-loss',
  queryExecutionError: (_context, _query, error) => {
    noteIfConnectionLost(error);
    return null;
  },
};

/**
 * How long opening a connection may take before the query fails (an unreachable database),
 * unless the pool is given its own (`DATABASE_CONNECT_TIMEOUT_MS`).
 */
export const CONNECTION_TIMEOUT_MS = 1_500;

export async function createDatabasePool(
  url: string,
  options: {
    maximumPoolSize?: number;
    /** Whether `prepare`d statements are kept by the server (default true; see `prepare`). */
    preparedStatements?: boolean;
    /** How long opening a connection may take (default `CONNECTION_TIMEOUT_MS`). */
    connectTimeoutMs?: number;
  } = {},
): Promise<DatabasePool> {
  const { connectionString, ssl } = pgConnection(url);
  const pool = await createPool(connectionString, {
    ...(ssl ? { ssl } : {}),
    maximumPoolSize: options.maximumPoolSize ?? 20,
    typeParsers: [createBigintTypeParser(), timestamptzParser],
    interceptors: [
      ...(options.preparedStatements === false ? [unnamedStatementsInterceptor] : []),
      resultParserInterceptor,
      connectionLossInterceptor,
    ],
    statementTimeout: 30_000,
    idleInTransactionSessionTimeout: 60_000,
    // A database that does not answer fails a request within this bound (503 at the API) instead
    // of hanging it; on loopback a healthy server connects in milliseconds.
    connectionTimeout: options.connectTimeoutMs ?? CONNECTION_TIMEOUT_MS,
    // No session state is ever left on a pooled connection (no SET, no temp tables, no advisory
    // locks: migrations use their own client), so the default `DISCARD ALL` on every release is
    // a wasted round trip on every statement-heavy payment path.
    resetConnection: () => Promise.resolve(),
  }).catch((error: unknown) => {
    throw asDatabaseSettingError(error, url);
  });
  // Slonik emits every failed query's error on the pool, then rethrows it to the caller, who
  // handles it. Without a listener that emit throws instead, and where realms differ (under
  // Jest) it throws a wrapper, so `instanceof UniqueIntegrityConstraintViolationError` fails.
  pool.on('error', () => undefined);
  for (const method of POOL_QUERY_METHODS) {
    const run = (pool[method] as (...args: unknown[]) => Promise<unknown>).bind(pool);
    const noted = (...args: unknown[]) =>
      run(...args).catch((error: unknown) => {
        noteIfConnectionLost(error);
        throw error;
      });
    Object.assign(pool, { [method]: noted });
  }
  const open = pool.transaction.bind(pool);
  (pool as { transaction: DatabasePool['transaction'] }).transaction = async (
    handler,
    retryLimit,
  ) => {
    const hooks: (() => void)[] = [];
    const thrownByHandler = new WeakSet<object>();
    const result = await open(async (trx) => {
      // A retried attempt (slonik retries a transaction that hit a serialization failure)
      // starts over: what a rolled-back attempt asked for is dropped.
      hooks.length = 0;
      afterCommitHooks.set(trx, hooks);
      try {
        return await handler(trx);
      } catch (error) {
        if (error && typeof error === 'object') thrownByHandler.add(error);
        throw error;
      }
    }, retryLimit).catch((error: unknown) => {
      // BEGIN, COMMIT and ROLLBACK go to the driver past the interceptors, and a connection's
      // error ends the transaction at once, before any statement of the handler fails with it.
      if (!(error && typeof error === 'object' && thrownByHandler.has(error))) {
        noteIfConnectionLost(error);
      }
      throw error;
    });
    for (const hook of hooks) hook();
    return result;
  };
  return pool;
}

const afterCommitHooks = new WeakMap<object, (() => void)[]>();

/**
 * Runs `fn` once the database transaction `trx` (opened by a pool's `transaction`) has committed,
 * never if it rolls back; at once on any other connection. A metric counted before the commit
 * would count again when a failed commit is retried.
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

/** pg's own messages, without a code, for a connection cut, not opened in time, or dead. */
const PG_CONNECTION_LOST =
  /^(Connection terminated|timeout expired$|Client has encountered a connection error and is not queryable$|Client was closed and is not queryable$)/;

/** Errors that say the database cannot be reached (down, restarting, the connection cut). */
const UNREACHABLE_ERRORS = new Set([
  'ConnectionError',
  'BackendTerminatedError',
  'BackendTerminatedUnexpectedlyError',
]);

/**
 * Whether `error` says that Postgres is unreachable rather than that a statement failed: a
 * connection error (slonik's by name: under Jest classes differ between realms), SQLSTATE 08 or
 * 57P01-57P03, or a pooled connection's socket failure; not another's, nor a TLS refusal.
 */
export function isDatabaseUnreachable(error: unknown): boolean {
  if (isDatabaseSettingError(error)) return false;
  const seen = new Set<unknown>();
  for (let e = error; e && typeof e === 'object' && !seen.has(e);) {
    seen.add(e);
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (UNREACHABLE_ERRORS.has(e.constructor.name) || lostConnections.has(e)) return true;
    if (typeof code === 'string' && /^(08...|57P0[123])$/.test(code)) return true;
    if (typeof message === 'string' && PG_CONNECTION_LOST.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Runs `open` (creating a pool connects at once) until the database answers: a process started
 * during an outage waits for its end instead of exiting. Errors other than an unreachable
 * database (bad credentials, no such database, a certificate TLS refuses) are thrown at once.
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
