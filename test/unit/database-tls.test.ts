import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { asDatabaseSettingError, pgConnection } from '../../src/db/connection';
import { isDatabaseUnreachable } from '../../src/db/pool';

/**
 * The TLS settings of Postgres (docs/operations.md, Postgres over TLS): what config accepts and
 * what the driver is given. test/integration/postgres-tls.test.ts runs them against a server.
 */

const dir = mkdtempSync(path.join(tmpdir(), 'wallet-db-tls-'));
const caFile = path.join(dir, 'ca.pem');
writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\nnot checked here\n-----END CERTIFICATE-----\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const base = 'postgres://wallet:secret@db.internal:5432/wallet';

const configure = (env: Record<string, string | undefined>) =>
  loadConfig({ ...process.env, DATABASE_URL: undefined, DATABASE_SSL_CA: undefined, ...env });

describe('DATABASE_URL and DATABASE_SSL_CA in config', () => {
  it('folds DATABASE_SSL_CA into the URL as sslrootcert, made absolute', () => {
    const relative = path.relative(process.cwd(), caFile);
    const config = configure({
      DATABASE_URL: `${base}?sslmode=verify-full`,
      DATABASE_SSL_CA: relative,
    });
    const url = new URL(config.database.url!);
    expect(url.searchParams.get('sslmode')).toBe('verify-full');
    expect(url.searchParams.get('sslrootcert')).toBe(caFile);
  });

  it('accepts again the URL it made, with the same DATABASE_SSL_CA (a child process)', () => {
    const made = configure({ DATABASE_URL: `${base}?sslmode=verify-ca`, DATABASE_SSL_CA: caFile });
    const again = configure({ DATABASE_URL: made.database.url, DATABASE_SSL_CA: caFile });
    expect(again.database.url).toBe(made.database.url);
  });

  it.each([
    [`${base}?sslmode=prefer`, undefined, 'DATABASE_URL: sslmode=prefer is not supported'],
    [`${base}?sslmode=no-verify`, undefined, 'DATABASE_URL: sslmode=no-verify is not supported'],
    [`${base}?sslmode=require`, caFile, 'DATABASE_SSL_CA: needs sslmode=verify-ca or'],
    [base, caFile, 'DATABASE_SSL_CA: needs sslmode=verify-ca or'],
    [undefined, caFile, 'DATABASE_SSL_CA: needs DATABASE_URL'],
    [`${base}?sslmode=verify-full&ssl=true`, undefined, 'DATABASE_URL: the parameter ssl is'],
    [
      `${base}?sslmode=verify-full&sslcert=/c.pem`,
      undefined,
      'DATABASE_URL: the parameter sslcert',
    ],
    [`${base}?uselibpqcompat=true`, undefined, 'DATABASE_URL: the parameter uselibpqcompat'],
    [
      `${base}?sslmode=verify-full&sslrootcert=/other.pem`,
      caFile,
      'DATABASE_SSL_CA: DATABASE_URL names another CA',
    ],
  ])('refuses DATABASE_URL=%s with DATABASE_SSL_CA=%s at load', (url, ca, problem) => {
    expect(() => configure({ DATABASE_URL: url, DATABASE_SSL_CA: ca })).toThrow(problem);
  });
});

describe('pgConnection: what the driver is given', () => {
  it('strips sslmode and sslrootcert, keeping the other parameters', () => {
    const { connectionString } = pgConnection(
      `${base}?application_name=listen&sslmode=verify-full&sslrootcert=${caFile}`,
    );
    expect(connectionString).toBe(`${base}?application_name=listen`);
  });

  it('disable (or no sslmode): no TLS', () => {
    expect(pgConnection(base).ssl).toBe(false);
    expect(pgConnection(`${base}?sslmode=disable`).ssl).toBe(false);
  });

  it('require: TLS without verification', () => {
    expect(pgConnection(`${base}?sslmode=require`).ssl).toEqual({ rejectUnauthorized: false });
  });

  it('verify-full: the CA file only, the host name checked by Node', () => {
    expect(pgConnection(`${base}?sslmode=verify-full&sslrootcert=${caFile}`).ssl).toEqual({
      ca: expect.stringContaining('not checked here'),
    });
    expect(pgConnection(`${base}?sslmode=verify-full`).ssl).toEqual({});
  });

  it('verify-ca: the chain checked, any host name taken', () => {
    const ssl = pgConnection(`${base}?sslmode=verify-ca&sslrootcert=${caFile}`).ssl;
    expect(ssl).toMatchObject({ ca: expect.stringContaining('not checked here') });
    const check = (ssl as { checkServerIdentity: (host: string, cert: object) => unknown })
      .checkServerIdentity;
    expect(check('elsewhere', {})).toBeUndefined();
  });

  it('a CA file it cannot read is a setting error naming DATABASE_SSL_CA', () => {
    const missing = path.join(dir, 'missing.pem');
    expect(() => pgConnection(`${base}?sslmode=verify-full&sslrootcert=${missing}`)).toThrow(
      `DATABASE_SSL_CA: cannot read ${missing} (ENOENT)`,
    );
  });
});

describe('asDatabaseSettingError: a TLS refusal as the one line naming the setting', () => {
  const verified = `${base}?sslmode=verify-full&sslrootcert=${caFile}`;
  const tlsError = (code: string, message: string) => Object.assign(new Error(message), { code });

  it.each([
    [
      'another CA than DATABASE_SSL_CA',
      tlsError('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'),
      verified,
      `DATABASE_SSL_CA: the Postgres server's certificate is not signed by ${caFile} (self-signed certificate in certificate chain)`,
    ],
    [
      'no DATABASE_SSL_CA and a CA the system lacks',
      tlsError('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'),
      `${base}?sslmode=verify-full`,
      "DATABASE_SSL_CA: the Postgres server's certificate is not signed by a CA this system trusts; set DATABASE_SSL_CA to its CA's certificate (unable to verify the first certificate)",
    ],
    [
      'another host name',
      tlsError('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"),
      verified,
      "DATABASE_URL: the Postgres server's certificate does not match host db.internal (Hostname/IP does not match certificate's altnames)",
    ],
    [
      'an expired certificate',
      tlsError('CERT_HAS_EXPIRED', 'certificate has expired'),
      verified,
      "DATABASE_URL: sslmode=verify-full refuses the Postgres server's certificate (certificate has expired)",
    ],
    [
      'a server without TLS',
      new Error('The server does not support SSL connections'),
      `${base}?sslmode=require`,
      'DATABASE_URL: sslmode=require, but the Postgres server at db.internal does not offer TLS',
    ],
  ])('%s', (_name, error, url, line) => {
    const setting = asDatabaseSettingError(new Error('wrapped', { cause: error }), url);
    expect(setting).toMatchObject({ name: 'DatabaseSettingError', message: line, stack: line });
  });

  it('is never taken for an unreachable database, even when it wraps a connection error', () => {
    class ConnectionError extends Error {}
    const wrapped = Object.assign(new ConnectionError('connection failed'), {
      cause: tlsError('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'),
    });
    expect(isDatabaseUnreachable(wrapped)).toBe(true);
    expect(isDatabaseUnreachable(asDatabaseSettingError(wrapped, verified))).toBe(false);
  });

  it('leaves other errors, and every error of a connection without TLS, as they are', () => {
    const refused = tlsError('ECONNREFUSED', 'connect ECONNREFUSED');
    expect(asDatabaseSettingError(refused, verified)).toBe(refused);
    const chain = tlsError('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed');
    expect(asDatabaseSettingError(chain, base)).toBe(chain);
  });
});
