import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { apiRoutes } from '../../src/api/app';
import { offlineDeps } from '../support/offline-deps';
import { RECOVERY_CODES, TOTP_DIGITS, TOTP_PERIOD } from '../../src/api/dashboard/two-step';
import { EXPORT_RETRY_AFTER_SECONDS } from '../../src/api/export-slots';
import { MAX_BODY_BYTES, MAX_BODY_DEPTH } from '../../src/api/middleware/body';
import { MAX_PLAIN_DIGITS } from '../../src/api/middleware/json-number';
import { IDEMPOTENCY_KEY_MAX_LENGTH } from '../../src/api/pipeline';
import { BATCH_MAX_BODY_BYTES } from '../../src/api/routes/batches';
import { REDELIVERY_WINDOW_MS } from '../../src/api/routes/events';
import { MAX_DOCUMENT_BYTES } from '../../src/api/document-upload';
import { MAX_NOTIFICATION_BYTES } from '../../src/api/routes/provider-webhooks';
import {
  MAX_BULK_RESOLVE,
  MAX_RUN_WINDOW_DAYS,
  MAX_SETTLEMENT_FILE_BYTES,
} from '../../src/api/routes/reconciliation';
import { DEFAULT_DAYS, MAX_CSV_ENTRIES } from '../../src/api/routes/statements';
import { PER_PAGE } from '../../src/api/schemas';
import { envSchema } from '../../src/config';
import { DEFAULT_LOCKOUT } from '../../src/db/auth-lockout';
import { SECOND_STEP_MINUTES, SESSION_HOURS } from '../../src/db/dashboard-accounts';
import { INVITATION_HOURS } from '../../src/db/dashboard-team';
import { IDEMPOTENCY_TTL_HOURS } from '../../src/db/idempotency';
import { TOTAL_COUNTED_AHEAD } from '../../src/db/pages';
import {
  EVENT_DELIVERIES,
  HISTORY_ATTEMPTS,
  REDELIVERIES_PER_DAY,
} from '../../src/db/webhook-deliveries';
import { FAILING_FOR_MS } from '../../src/db/webhook-subscriptions';
import { BATCH_LIMITS } from '../../src/domain/batches';
import { FRESH_SECONDS, PASSWORD_LENGTH } from '../../src/domain/dashboard-access';
import {
  METADATA_MAX_KEY_LENGTH,
  METADATA_MAX_KEYS,
  METADATA_MAX_VALUE_LENGTH,
} from '../../src/domain/metadata';
import { MAX_MINOR_UNITS, parseMajorDecimal } from '../../src/domain/money';
import { MONEY_STEPS } from '../../src/domain/money-rules';
import { RATE_LIMIT_CATEGORIES } from '../../src/domain/types';
import { TEST_EVIDENCE_DAYS } from '../../src/intake/disputes';
import { WEBHOOK_ANSWER_MAX_BYTES, WEBHOOK_TIMEOUT_MS } from '../../src/outbound/webhook-post';
import { MONIME_SIGNATURE_TOLERANCE_SECONDS } from '../../src/providers/monime';
import {
  MAX_REFERENCE_LENGTH,
  SETTLEMENT_FILE_MAX_ERRORS,
  SETTLEMENT_FILE_MAX_ROWS,
} from '../../src/providers/settlement-file';
import { ADVANCE_SECONDS } from '../../src/workflows/clock-shared';
import { MAX_EVIDENCE_CHARS } from '../../src/workflows/dispute-shared';
import { RECON_EXCEPTION_STALE_MS } from '../../src/workflows/recon-shared';
import { RESOLUTION_LIMITS } from '../../src/workflows/resolution';
import {
  WEBHOOK_MAX_RETRY_INTERVAL_MS,
  WEBHOOK_RETRY_WINDOW_MS,
} from '../../src/workflows/webhook-schedule';

const ROOT = path.join(__dirname, '..', '..');
const LIMITS_MD = readFileSync(path.join(ROOT, 'docs', 'limits.md'), 'utf8');

const defaults: Record<string, unknown> = envSchema.parse({});
/** A setting's default, as an unset environment gets it: every limit read here is a number. */
function setting(name: string): number {
  const value = defaults[name];
  if (typeof value !== 'number') throw new Error(`${name} has no number for a default`);
  return value;
}

const n = (value: number | bigint) => value.toLocaleString('en');
const plural = (value: number, unit: string) => `${n(value)} ${unit}${value === 1 ? '' : 's'}`;
const mib = (bytes: number) => `${bytes / 1024 / 1024} MiB`;
const kib = (bytes: number) => `${bytes / 1024} KiB`;
const hours = (ms: number) => plural(ms / 3_600_000, 'hour');
const days = (ms: number) => plural(ms / 86_400_000, 'day');
const perMinute = (limit: number) => `${limit} a minute`;
const secondsAndMinutes = (s: number) => `${s} seconds (${s / 60} minutes)`;

/**
 * What each row's Value cell starts with, by the file and name its "Defined in" cell gives: the
 * value computed from the code, so a limit changed there fails here until the page follows.
 */
const EXPECTED: Record<string, string> = {
  'src/domain/money.ts MAX_MINOR_UNITS': `${n(MAX_MINOR_UNITS)} (${n(MAX_MINOR_UNITS / 100n)}.00 major)`,
  'src/domain/money.ts parseMajorDecimal':
    parseMajorDecimal('0.01') === 1n && parseMajorDecimal('0.001') === null ? '2' : 'not 2',
  'src/api/middleware/json-number.ts MAX_PLAIN_DIGITS': n(MAX_PLAIN_DIGITS),

  'src/api/middleware/body.ts MAX_BODY_BYTES': mib(MAX_BODY_BYTES),
  'src/api/middleware/body.ts MAX_BODY_DEPTH': `${MAX_BODY_DEPTH} levels`,
  'src/api/pipeline.ts IDEMPOTENCY_KEY_MAX_LENGTH': `${IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters`,
  'src/db/idempotency.ts IDEMPOTENCY_TTL_HOURS': plural(IDEMPOTENCY_TTL_HOURS, 'hour'),
  'src/config/index.ts API_REQUEST_TIMEOUT_MS': `${n(setting('API_REQUEST_TIMEOUT_MS'))} ms`,
  'src/api/schemas.ts PER_PAGE.max': `${PER_PAGE.max} (default ${PER_PAGE.default})`,
  'src/api/schemas.ts PER_PAGE.default': `${PER_PAGE.default}`,
  'src/db/pages.ts TOTAL_COUNTED_AHEAD': n(TOTAL_COUNTED_AHEAD),

  'src/domain/metadata.ts METADATA_MAX_KEYS': `${METADATA_MAX_KEYS}`,
  'src/domain/metadata.ts METADATA_MAX_KEY_LENGTH': `${METADATA_MAX_KEY_LENGTH}`,
  'src/domain/metadata.ts METADATA_MAX_VALUE_LENGTH': `${METADATA_MAX_VALUE_LENGTH}`,

  ...Object.fromEntries(
    Object.entries(RATE_LIMIT_CATEGORIES).map(([category, limit]) => [
      `src/domain/types.ts RATE_LIMIT_CATEGORIES.${category}`,
      perMinute(limit),
    ]),
  ),
  'src/config/index.ts RATE_LIMIT_CARD_AUTHENTICATION_PAGE': perMinute(
    setting('RATE_LIMIT_CARD_AUTHENTICATION_PAGE'),
  ),
  'src/config/index.ts RATE_LIMIT_DASHBOARD_SIGNED_OUT': perMinute(
    setting('RATE_LIMIT_DASHBOARD_SIGNED_OUT'),
  ),
  'src/config/index.ts RATE_LIMIT_DASHBOARD_ACCOUNT': perMinute(
    setting('RATE_LIMIT_DASHBOARD_ACCOUNT'),
  ),
  'src/db/webhook-deliveries.ts REDELIVERIES_PER_DAY': `${REDELIVERIES_PER_DAY} in 24 hours`,

  'src/db/auth-lockout.ts DEFAULT_LOCKOUT.limit': `${DEFAULT_LOCKOUT.limit}`,
  'src/db/auth-lockout.ts DEFAULT_LOCKOUT.windowSeconds': secondsAndMinutes(
    DEFAULT_LOCKOUT.windowSeconds,
  ),
  'src/db/auth-lockout.ts DEFAULT_LOCKOUT.lockSeconds': secondsAndMinutes(
    DEFAULT_LOCKOUT.lockSeconds,
  ),

  'src/config/index.ts MAX_CREDENTIALS_PER_MODE': `${setting('MAX_CREDENTIALS_PER_MODE')}`,
  'src/config/index.ts MAX_WEBHOOK_SUBSCRIPTIONS_PER_MODE': `${setting('MAX_WEBHOOK_SUBSCRIPTIONS_PER_MODE')}`,
  'src/config/index.ts ONBOARDING_DOCUMENTS_PER_WALLET': `${setting('ONBOARDING_DOCUMENTS_PER_WALLET')}`,
  'src/config/index.ts ONBOARDING_DOCUMENT_BYTES_PER_WALLET': `${setting('ONBOARDING_DOCUMENT_BYTES_PER_WALLET')} bytes (${mib(setting('ONBOARDING_DOCUMENT_BYTES_PER_WALLET'))})`,

  'src/config/index.ts EXPORT_MAX_ROWS': n(setting('EXPORT_MAX_ROWS')),
  'src/config/index.ts EXPORT_MAX_PER_APPLICATION': `${setting('EXPORT_MAX_PER_APPLICATION')}`,
  'src/config/index.ts EXPORT_MAX_PER_PROCESS': `${setting('EXPORT_MAX_PER_PROCESS')}`,
  'src/api/export-slots.ts EXPORT_RETRY_AFTER_SECONDS': plural(
    EXPORT_RETRY_AFTER_SECONDS,
    'second',
  ),
  // The setting holds milliseconds, read from seconds.
  'src/config/index.ts EXPORT_TIME_LIMIT_SECONDS': plural(
    setting('EXPORT_TIME_LIMIT_SECONDS') / 1000,
    'second',
  ),
  'src/api/routes/statements.ts MAX_CSV_ENTRIES': n(MAX_CSV_ENTRIES),
  'src/api/routes/statements.ts DEFAULT_DAYS': plural(DEFAULT_DAYS, 'day'),

  'src/domain/batches.ts BATCH_LIMITS.items': n(BATCH_LIMITS.items),
  'src/domain/batches.ts BATCH_LIMITS.atomicItems': n(BATCH_LIMITS.atomicItems),
  'src/domain/batches.ts BATCH_LIMITS.referenceLength': plural(
    BATCH_LIMITS.referenceLength,
    'character',
  ),
  'src/api/routes/batches.ts BATCH_MAX_BODY_BYTES': mib(BATCH_MAX_BODY_BYTES),
  'src/config/index.ts BATCH_ITEMS_IN_FLIGHT': `${setting('BATCH_ITEMS_IN_FLIGHT')}`,

  'src/api/routes/reconciliation.ts MAX_BULK_RESOLVE': n(MAX_BULK_RESOLVE),
  'src/api/routes/reconciliation.ts MAX_RUN_WINDOW_DAYS': plural(MAX_RUN_WINDOW_DAYS, 'day'),
  'src/api/routes/reconciliation.ts MAX_SETTLEMENT_FILE_BYTES': mib(MAX_SETTLEMENT_FILE_BYTES),
  'src/providers/settlement-file.ts SETTLEMENT_FILE_MAX_ROWS': n(SETTLEMENT_FILE_MAX_ROWS),
  'src/providers/settlement-file.ts SETTLEMENT_FILE_MAX_ERRORS': n(SETTLEMENT_FILE_MAX_ERRORS),
  'src/providers/settlement-file.ts MAX_REFERENCE_LENGTH': plural(
    MAX_REFERENCE_LENGTH,
    'character',
  ),

  'src/workflows/recon-shared.ts RECON_EXCEPTION_STALE_MS': hours(RECON_EXCEPTION_STALE_MS),

  'src/outbound/webhook-post.ts WEBHOOK_TIMEOUT_MS': `${n(WEBHOOK_TIMEOUT_MS)} ms`,
  'src/outbound/webhook-post.ts WEBHOOK_ANSWER_MAX_BYTES': kib(WEBHOOK_ANSWER_MAX_BYTES),
  'src/workflows/webhook-schedule.ts WEBHOOK_RETRY_WINDOW_MS': hours(WEBHOOK_RETRY_WINDOW_MS),
  'src/workflows/webhook-schedule.ts WEBHOOK_MAX_RETRY_INTERVAL_MS': hours(
    WEBHOOK_MAX_RETRY_INTERVAL_MS,
  ),
  'src/db/webhook-subscriptions.ts FAILING_FOR_MS': hours(FAILING_FOR_MS),
  'src/config/index.ts WEBHOOK_ATTEMPTS_PER_WORKER': `${setting('WEBHOOK_ATTEMPTS_PER_WORKER')}`,
  'src/config/index.ts WEBHOOK_ATTEMPTS_PER_ENDPOINT': `${setting('WEBHOOK_ATTEMPTS_PER_ENDPOINT')}`,
  'src/api/routes/events.ts REDELIVERY_WINDOW_MS': days(REDELIVERY_WINDOW_MS),
  'src/db/webhook-deliveries.ts HISTORY_ATTEMPTS': `${HISTORY_ATTEMPTS}`,
  'src/db/webhook-deliveries.ts EVENT_DELIVERIES': `${EVENT_DELIVERIES}`,

  'src/api/routes/provider-webhooks.ts MAX_NOTIFICATION_BYTES': kib(MAX_NOTIFICATION_BYTES),
  'src/providers/monime.ts MONIME_SIGNATURE_TOLERANCE_SECONDS': plural(
    MONIME_SIGNATURE_TOLERANCE_SECONDS,
    'second',
  ),
  'src/config/index.ts NOTIFICATION_RETRY_HOURS': plural(
    setting('NOTIFICATION_RETRY_HOURS'),
    'hour',
  ),
  'src/config/index.ts NOTIFICATION_KEEP_DAYS': plural(setting('NOTIFICATION_KEEP_DAYS'), 'day'),

  'src/api/document-upload.ts MAX_DOCUMENT_BYTES': mib(MAX_DOCUMENT_BYTES),

  'src/intake/disputes.ts TEST_EVIDENCE_DAYS': plural(TEST_EVIDENCE_DAYS, 'day'),
  'src/workflows/dispute-shared.ts MAX_EVIDENCE_CHARS': plural(MAX_EVIDENCE_CHARS, 'character'),
  'src/workflows/resolution.ts RESOLUTION_LIMITS.operator': plural(
    RESOLUTION_LIMITS.operator,
    'character',
  ),
  'src/workflows/resolution.ts RESOLUTION_LIMITS.reason': plural(
    RESOLUTION_LIMITS.reason,
    'character',
  ),

  'src/workflows/clock-shared.ts ADVANCE_SECONDS.min': plural(ADVANCE_SECONDS.min, 'second'),
  'src/workflows/clock-shared.ts ADVANCE_SECONDS.max': plural(ADVANCE_SECONDS.max, 'second'),

  'src/config/index.ts SANDBOX_PAYMENT_CODE_TTL_SECONDS': `${setting('SANDBOX_PAYMENT_CODE_TTL_SECONDS')} seconds`,
  'src/config/index.ts CARD_PAYMENT_PENDING_TTL_SECONDS': `${setting('CARD_PAYMENT_PENDING_TTL_SECONDS')} seconds`,
  'src/config/index.ts MONEY_OUT_PENDING_TTL_SECONDS': `${setting('MONEY_OUT_PENDING_TTL_SECONDS')} seconds`,

  'src/db/dashboard-accounts.ts SESSION_HOURS': plural(SESSION_HOURS, 'hour'),
  'src/db/dashboard-accounts.ts SECOND_STEP_MINUTES': plural(SECOND_STEP_MINUTES, 'minute'),
  'src/domain/dashboard-access.ts FRESH_SECONDS': secondsAndMinutes(FRESH_SECONDS),
  'src/domain/dashboard-access.ts PASSWORD_LENGTH': `${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters`,
  'src/db/dashboard-team.ts INVITATION_HOURS': plural(INVITATION_HOURS, 'hour'),
  'src/api/dashboard/two-step.ts RECOVERY_CODES': `${RECOVERY_CODES}`,
  'src/api/dashboard/two-step.ts TOTP_DIGITS': `${TOTP_DIGITS}`,
  'src/api/dashboard/two-step.ts TOTP_PERIOD': plural(TOTP_PERIOD, 'second'),
};

type Row = { line: string; limit: string; value: string; where: string[] };

/** The rows of the tables whose first column is "Limit", with the spans of "Defined in". */
function limitRows(): Row[] {
  const rows: Row[] = [];
  let inLimits = false;
  for (const line of LIMITS_MD.split('\n')) {
    if (!line.startsWith('|')) {
      inLimits = false;
      continue;
    }
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    if (cells[0] === 'Limit') inLimits = true;
    if (!inLimits || cells[0] === 'Limit' || /^-+$/.test(cells[0] ?? '')) continue;
    const where = [...(cells[2] ?? '').matchAll(/`([^`]+)`/g)].map(([, span]) => span ?? '');
    rows.push({ line, limit: cells[0] ?? '', value: cells[1] ?? '', where });
  }
  return rows;
}

const isRoute = (span: string | undefined) => /^[A-Z]+ \//.test(span ?? '');

/** The app's routes, built without a database or Temporal. */
function routes() {
  return apiRoutes(offlineDeps());
}

/** The bound (longest, most items, largest) a route's body or query schema gives `field`. */
function fieldBound(
  served: ReturnType<typeof routes>,
  route: string,
  field: string,
): number | undefined {
  const found = served.find(
    (r) => `${r.method.toUpperCase()} ${r.path.replace(/:(\w+)/g, '{$1}')}` === route,
  );
  if (!found) throw new Error(`no such route: ${route}`);
  const schema = found.body ?? found.query;
  if (!schema) throw new Error(`${route} takes no body or query`);
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as {
    $ref?: string;
    $defs?: Record<string, { properties?: Record<string, unknown> }>;
    properties?: Record<string, unknown>;
  };
  const top = json.$ref ? json.$defs?.[json.$ref.replace('#/$defs/', '')] : json;
  const bounds: number[] = [];
  const walk = (node: unknown) => {
    if (!node || typeof node !== 'object') return;
    for (const key of ['maxLength', 'maxItems', 'maximum'] as const) {
      const bound = (node as Record<string, unknown>)[key];
      if (typeof bound === 'number') bounds.push(bound);
    }
    for (const child of Object.values(node)) walk(child);
  };
  walk(top?.properties?.[field]);
  return bounds[0];
}

describe('docs/limits.md', () => {
  const rows = limitRows();

  test('every row names a file of the repository and what in it defines the limit', () => {
    expect(rows.length).toBeGreaterThan(50);
    const unreadable = rows.filter(
      ({ where }) =>
        !where[0] ||
        !existsSync(path.join(ROOT, where[0])) ||
        !(where.length === 2 || (where.length === 3 && isRoute(where[1]))),
    );
    expect(unreadable.map(({ line }) => line)).toEqual([]);
  });

  test('each constant or setting has the value the page gives, and each one is on the page', () => {
    const documented = rows
      .filter(({ where }) => !isRoute(where[1]))
      .map(({ value, where }) => ({ key: where.join(' '), value }));
    const wrong = documented
      .filter(({ key, value }) => !(key in EXPECTED) || !value.startsWith(EXPECTED[key] ?? ''))
      .map(({ key, value }) => ({ key, documented: value, code: EXPECTED[key] ?? 'unknown' }));
    expect(wrong).toEqual([]);
    const keys = new Set(documented.map(({ key }) => key));
    expect(Object.keys(EXPECTED).filter((key) => !keys.has(key))).toEqual([]);
  });

  test("each field length is the route schema's own", () => {
    const served = routes();
    const wrong = rows
      .filter(({ where }) => isRoute(where[1]))
      .map(({ value, where: [, route = '', field = ''] }) => ({
        route,
        field,
        documented: Number(/\d[\d,]*/.exec(value)?.[0].replace(/,/g, '')),
        code: fieldBound(served, route, field),
      }))
      .filter(({ documented, code }) => documented !== code);
    expect(wrong).toEqual([]);
  });

  test('the money rules name codes that their money steps decline with', () => {
    const table = LIMITS_MD.slice(LIMITS_MD.indexOf('| Rule'), LIMITS_MD.indexOf('## Requests'));
    const steps = new Map(Object.values(MONEY_STEPS).map((step) => [step.name, step]));
    const rules = table
      .split('\n')
      .slice(2)
      .filter((line) => line.startsWith('|'))
      .map((line) => line.split('|').map((cell) => cell.trim()));
    expect(rules.length).toBeGreaterThan(0);
    const wrong = rules.flatMap(([, , codeCell = '', stepsCell = '']) => {
      const code = codeCell.replace(/`/g, '');
      return stepsCell
        .split(', ')
        .filter((name) => !steps.get(name)?.rules.some((rule) => rule.code === code))
        .map((name) => `${code} in ${name}`);
    });
    expect(wrong).toEqual([]);
  });
});
