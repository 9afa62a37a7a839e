import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';

/**
 * How every connection to Postgres is opened (the pools, the migrations, the LISTEN clients): the
 * URL's `sslmode` and `sslrootcert` (libpq's names; config folds `DATABASE_SSL_CA` into the
 * latter) become the driver's `ssl` option here, and nowhere else (docs/operations.md).
 */

export const SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

export type DatabaseTls = { mode: SslMode; caFile: string | undefined; host: string };

/**
 * A setting that cannot work, found at start: the process stops with this one line. Its stack
 * is the line alone, since a trace would only bury the setting it names.
 */
export class DatabaseSettingError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DatabaseSettingError';
    this.stack = message;
  }
}

/** The URL's TLS parameters read here; the driver's own readings of the others are refused. */
const OWN_PARAMETERS = new Set(['sslmode', 'sslrootcert']);
const DRIVER_TLS_PARAMETER = /^(ssl|uselibpqcompat)/;

/** The TLS settings of a connection URL, checked (a DatabaseSettingError otherwise). */
export function databaseTls(url: string): DatabaseTls {
  const parsed = new URL(url);
  for (const key of parsed.searchParams.keys()) {
    if (DRIVER_TLS_PARAMETER.test(key) && !OWN_PARAMETERS.has(key)) {
      throw new DatabaseSettingError(
        `DATABASE_URL: the parameter ${key} is not supported (use sslmode and DATABASE_SSL_CA)`,
      );
    }
  }
  const mode = parsed.searchParams.get('sslmode') ?? 'disable';
  if (!(SSL_MODES as readonly string[]).includes(mode)) {
    throw new DatabaseSettingError(
      `DATABASE_URL: sslmode=${mode} is not supported (disable, require, verify-ca or verify-full)`,
    );
  }
  const caFile = parsed.searchParams.get('sslrootcert') || undefined;
  if (caFile !== undefined && mode !== 'verify-ca' && mode !== 'verify-full') {
    throw new DatabaseSettingError(
      `DATABASE_SSL_CA: needs sslmode=verify-ca or sslmode=verify-full in DATABASE_URL, not ${mode}`,
    );
  }
  return { mode: mode as SslMode, caFile, host: decodeURIComponent(parsed.hostname) };
}

/** The URL with `sslrootcert` set to `caFile`: how config hands `DATABASE_SSL_CA` to every path. */
export function withCaFile(url: string, caFile: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('sslrootcert', caFile);
  return parsed.toString();
}

function readCa(caFile: string): string {
  try {
    return readFileSync(caFile, 'utf8');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new DatabaseSettingError(`DATABASE_SSL_CA: cannot read ${caFile} (${String(code)})`, {
      cause: error,
    });
  }
}

function sslOptions(tls: DatabaseTls): false | ConnectionOptions {
  if (tls.mode === 'disable') return false;
  // Encrypted, but any certificate is taken: libpq's `require` without a CA.
  if (tls.mode === 'require') return { rejectUnauthorized: false };
  const ca = tls.caFile === undefined ? {} : { ca: readCa(tls.caFile) };
  // verify-ca: the chain is checked, the name is not.
  return tls.mode === 'verify-ca' ? { ...ca, checkServerIdentity: () => undefined } : ca;
}

/**
 * What the driver is given for `url`: the URL without its TLS parameters (pg would read them
 * its own way, and they would override `ssl`) and the `ssl` option they stand for.
 */
export function pgConnection(url: string): {
  connectionString: string;
  ssl: false | ConnectionOptions;
} {
  const tls = databaseTls(url);
  const parsed = new URL(url);
  for (const key of OWN_PARAMETERS) parsed.searchParams.delete(key);
  return { connectionString: parsed.toString(), ssl: sslOptions(tls) };
}

/** Node's codes for a certificate chain that does not lead to a trusted CA. */
const UNTRUSTED_CHAIN = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
]);

const NO_TLS = 'The server does not support SSL connections';

function tlsFailureLine(error: object, tls: DatabaseTls): string | undefined {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const said = typeof message === 'string' ? message : String(code);
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `DATABASE_URL: the Postgres server's certificate does not match host ${tls.host} (${said})`;
  }
  if (typeof code === 'string' && UNTRUSTED_CHAIN.has(code)) {
    return tls.caFile === undefined
      ? `DATABASE_SSL_CA: the Postgres server's certificate is not signed by a CA this system trusts; set DATABASE_SSL_CA to its CA's certificate (${said})`
      : `DATABASE_SSL_CA: the Postgres server's certificate is not signed by ${tls.caFile} (${said})`;
  }
  if (typeof code === 'string' && /^CERT_/.test(code)) {
    return `DATABASE_URL: sslmode=${tls.mode} refuses the Postgres server's certificate (${said})`;
  }
  if (message === NO_TLS) {
    return `DATABASE_URL: sslmode=${tls.mode}, but the Postgres server at ${tls.host} does not offer TLS`;
  }
  return undefined;
}

/**
 * `error` of a connection to `url`, as a DatabaseSettingError when TLS refused it (a wrong CA,
 * host name or mode): no retry can fix that, unlike a database that is down.
 */
export function asDatabaseSettingError(error: unknown, url: string): unknown {
  if (error instanceof DatabaseSettingError) return error;
  const tls = databaseTls(url);
  if (tls.mode === 'disable') return error;
  const seen = new Set<unknown>();
  for (let e = error; e && typeof e === 'object' && !seen.has(e);) {
    seen.add(e);
    const line = tlsFailureLine(e, tls);
    if (line) return new DatabaseSettingError(line, { cause: error });
    e = (e as { cause?: unknown }).cause;
  }
  return error;
}

/** Whether `error` is a DatabaseSettingError (by name: under Jest classes differ by realm). */
export function isDatabaseSettingError(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'DatabaseSettingError';
}
