import { createHash, createHash as hash, randomUUID } from 'node:crypto';
import type Router from '@koa/router';
import type Koa from 'koa';
import type { DatabasePool } from '../db/pool';
import type { z } from 'zod';
import ipaddr from 'ipaddr.js';
import {
  ADMIN_API_KEY_PREFIX,
  authenticateAdmin,
  hitAdminRateLimit,
  type AdminAuthResult,
} from '../db/admins';
import { admitAttempt, settleAttempt } from '../db/auth-lockout';
import type { CredentialCache } from '../cache/credential-cache';
import {
  authenticate,
  authenticateAndCount,
  type Admission,
  type Authenticated,
} from '../db/credentials';
import { hitKeyedRateLimit, type RateLimitHit } from '../db/rate-limit';
import { claimIdempotencyKey, completeIdempotencyKey, type ClaimResult } from '../db/idempotency';
import { idempotentReplays, rateLimitedRequests } from '../observability/metrics';
import { earlyAnswer } from './access';
import { AppError } from './errors';
import {
  RATE_LIMIT_CATEGORIES,
  categoryLimit,
  type Caller,
  type RateLimitCategory,
} from '../domain/types';
import { findApplication } from '../db/applications';
import { refuseUnstorableText } from './middleware/body';
import { RateLimitedError } from './middleware/errors';
import { InexactNumber } from './middleware/json-number';
import type { HandlerResult, Route, Throttle } from './route';
import { uuidPattern } from './schemas';
import type { PaymentAnswer } from '../workflows/shared';

const UNAUTHENTICATED: Record<'missing' | 'invalid' | 'revoked' | 'expired', string> = {
  missing: 'Missing application credentials: send the api-key and secret-key headers',
  invalid: 'Invalid application credentials',
  revoked: 'Invalid application credentials: this credential has been revoked',
  expired: 'Invalid application credentials: this credential has expired',
};

/**
 * Authenticates and counts an application's request (401, 429). `admit`, given the caller and
 * its limit, may name the idempotency key to claim in the statement that counts the request.
 */
async function authenticateRequest(
  ctx: Koa.Context,
  pool: DatabasePool,
  category: keyof typeof RATE_LIMIT_CATEGORIES,
  credentials: CredentialCache | undefined,
  admit: (caller: Caller, limit: number) => Admission | null,
): Promise<{ caller: Caller; claim?: ClaimResult | null }> {
  const apiKey = ctx.get('api-key');
  const secretKey = ctx.get('secret-key');
  if (!apiKey || !secretKey) throw new AppError('unauthenticated', UNAUTHENTICATED.missing);
  const limitOf = (rateLimits: Record<string, number>) => categoryLimit(rateLimits, category);
  const result = await authenticateAndCount(
    pool,
    apiKey,
    secretKey,
    category,
    credentials,
    (credential) => admit(callerOf(credential), limitOf(credential.rateLimits)),
  );
  if (!result.ok) {
    if (apiKey.startsWith(ADMIN_API_KEY_PREFIX)) {
      // An admin secret tried where it never works counts toward the admin lockout, so that
      // application endpoints are no oracle for guessing one.
      const admin = await underLockout(pool, ADMIN_LOCKOUT_SCOPE, clientAddress(ctx), async () => {
        const result = await authenticateAdmin(pool, apiKey, secretKey);
        return { failed: true, result };
      });
      if (admin.ok) throw new AppError('forbidden', ADMIN_ON_APPLICATION_ENDPOINT);
    }
    throw new AppError('unauthenticated', UNAUTHENTICATED[result.reason]);
  }
  const caller = callerOf(result);
  (ctx.state as { caller?: Caller }).caller = caller;
  refuseOverLimit(result.hit, limitOf(result.rateLimits), category);
  return { caller, ...(result.claim !== undefined ? { claim: result.claim } : {}) };
}

/**
 * Counts a session caller's request (the dashboard's) against its API route's category, under
 * the application's limits: the application and mode are counted as one caller.
 */
async function countSessionRequest(
  pool: DatabasePool,
  caller: Caller,
  category: RateLimitCategory,
): Promise<void> {
  const application = await findApplication(pool, caller.applicationId);
  const limit = categoryLimit(application?.rate_limits ?? {}, category);
  const subject = caller.rateLimitSubject;
  if (subject === undefined) throw new Error('a session caller without its rate-limit subject');
  refuseOverLimit(await hitKeyedRateLimit(pool, 'subject', subject, category), limit, category);
}

function callerOf(credential: Authenticated): Caller {
  const { applicationId, mode, credentialId } = credential;
  return { applicationId, mode, credentialId };
}

const ADMIN_ON_APPLICATION_ENDPOINT =
  'Admin credentials cannot be used on application endpoints: use application credentials';

const ADMIN_UNAUTHENTICATED: Record<'missing' | 'invalid' | 'revoked', string> = {
  missing: 'Missing admin credentials: send the api-key and secret-key headers',
  invalid: 'Invalid admin credentials',
  revoked: 'Invalid admin credentials: this credential has been revoked',
};

/** The lockout scope of the admin endpoints (src/db/auth-lockout.ts). */
export const ADMIN_LOCKOUT_SCOPE = 'admin_api';

/** A 429 of the per-address lockout: `Retry-After` like every 429, its own detail. */
export class LockedOutError extends RateLimitedError {
  override readonly detail: string;
  constructor(retryAfter: number) {
    super(retryAfter);
    this.detail = `Too many failed authentications from this address, retry in ${retryAfter} seconds`;
    this.message = this.detail;
  }
}

/**
 * The key a client is counted under: an IPv4 address as it is (an IPv4-mapped IPv6 address as
 * IPv4), an IPv6 address as its /64, the block one subscriber is given, so that walking the
 * block's addresses does not escape a lockout or a rate limit.
 */
export function addressKey(address: string): string {
  if (!ipaddr.isValid(address)) return address.slice(0, 100);
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/64`).toString()}/64`;
}

/**
 * The client's address key (`addressKey`) of Koa's `ctx.ip`, which believes `X-Forwarded-For`
 * only as far as the app's `TRUST_PROXY` proxies (src/api/app.ts).
 */
export function clientAddress(ctx: Koa.Context): string {
  return addressKey(ctx.ip || 'unknown');
}

/**
 * One authentication attempt of a client address under the scope's lockout (src/db/auth-lockout.ts):
 * 429 while the address is locked out; `check` says whether the attempt failed, and a failure
 * that starts a lockout answers 429 too. What `check` throws counts as a failure.
 */
export async function underLockout<T>(
  pool: DatabasePool,
  scope: string,
  address: string,
  check: () => Promise<{ failed: boolean; result: T }>,
): Promise<T> {
  const admission = await admitAttempt(pool, scope, address);
  if ('retryAfter' in admission) throw new LockedOutError(admission.retryAfter);
  const { failed, result } = await check();
  const lockout = await settleAttempt(pool, scope, address, admission.attempt, failed);
  if (lockout !== null) throw new LockedOutError(lockout);
  return result;
}

/** A request counted past its limit: 429 with `Retry-After`, and counted in the metrics. */
function refuseOverLimit(hit: RateLimitHit, limit: number, category: string): void {
  if (hit.count <= limit) return;
  rateLimitedRequests.inc({ category });
  throw new RateLimitedError(hit.retryAfterSeconds);
}

/** Counts a request of `subject` (a client address, a dashboard account): 429 over the limit. */
export async function throttle(
  pool: DatabasePool,
  subject: string,
  { category, perMinute }: Throttle,
): Promise<void> {
  refuseOverLimit(await hitKeyedRateLimit(pool, 'subject', subject, category), perMinute, category);
}

/**
 * Admin endpoints, behind the address's lockout (even valid credentials wait it out): the
 * admin's credential, where each failed authentication counts towards the lockout and
 * application credentials are refused with 403, then the admin's own rate limit.
 */
async function authenticateAdminRequest(
  ctx: Koa.Context,
  pool: DatabasePool,
  category: keyof typeof RATE_LIMIT_CATEGORIES,
  options: { basic: boolean },
): Promise<void> {
  const address = clientAddress(ctx);
  const basic = options.basic && !ctx.get('api-key') ? basicCredentials(ctx) : null;
  const apiKey = basic?.apiKey ?? ctx.get('api-key');
  const secretKey = basic?.secretKey ?? ctx.get('secret-key');
  type Outcome = AdminAuthResult | { ok: false; reason: 'missing' } | null;
  const admin = await underLockout<Outcome>(pool, ADMIN_LOCKOUT_SCOPE, address, async () => {
    if (!apiKey || !secretKey) return { failed: true, result: { ok: false, reason: 'missing' } };
    const result = await authenticateAdmin(pool, apiKey, secretKey);
    if (result.ok) return { failed: false, result };
    // Application credentials are no failed guess: refused with 403 below, not counted.
    const application = await authenticate(pool, apiKey, secretKey);
    return application.ok ? { failed: false, result: null } : { failed: true, result };
  });
  if (admin === null) throw new AppError('forbidden', 'This endpoint needs admin credentials');
  if (!admin.ok) throw new AppError('unauthenticated', ADMIN_UNAUTHENTICATED[admin.reason]);
  (ctx.state as { admin?: { id: string } }).admin = { id: admin.adminId };
  const hit = await hitAdminRateLimit(pool, admin.adminId, category);
  refuseOverLimit(hit, RATE_LIMIT_CATEGORIES[category], category);
}

/** `Authorization: Basic base64(api-key:secret-key)`, or null. */
function basicCredentials(ctx: Koa.Context): { apiKey: string; secretKey: string } | null {
  const match = /^Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(ctx.get('authorization'));
  if (!match) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return { apiKey: decoded.slice(0, colon), secretKey: decoded.slice(colon + 1) };
}

/** A field that is a plain number, given a literal that no double holds exactly. */
function inexactNumberMessage(issue: { input?: unknown }): string | undefined {
  const { input } = issue;
  if (!(input instanceof InexactNumber)) return undefined;
  if (!Number.isFinite(input.value)) return `${input.source} is out of range`;
  return `${input.source} cannot be read exactly as a number: send at most 15 significant digits`;
}

/** A field's path as a client writes it: `items[3].amount`. */
function fieldName(path: readonly PropertyKey[]): string {
  return path.reduce<string>((name, part) => {
    if (typeof part === 'number') return `${name}[${part}]`;
    return name ? `${name}.${String(part)}` : String(part);
  }, '');
}

function parse<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return undefined as T;
  const result = schema.safeParse(value, { error: inexactNumberMessage });
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const field = issue.path.length ? fieldName(issue.path) : where;
    return `${field}: ${issue.message}`;
  });
  throw new AppError('validation_failed', problems.join('; '));
}

const TIMEOUT_WITHOUT_KEY =
  'The payment is still processing and goes on. It was sent without an Idempotency-Key, so ' +
  'retrying it would start another payment: find its outcome in GET /api/v1/transactions/';

export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
const IDEMPOTENCY_KEY = new RegExp(`^[\\x20-\\x7e]{1,${IDEMPOTENCY_KEY_MAX_LENGTH}}$`);

/** JSON with object keys sorted, so that the same request with keys in another order matches. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

function requestHash(ctx: Koa.Context): Buffer {
  return createHash('sha256')
    .update(`${ctx.method}\n${ctx.path}\n${canonicalJson(ctx.state.body)}`)
    .digest();
}

/** Runs the handler, turning an expected failure into a result that can be stored and replayed. */
async function settle(run: () => Promise<HandlerResult>): Promise<HandlerResult> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof AppError && error.status < 500) {
      return { status: error.status, body: { detail: error.detail } };
    }
    throw error;
  }
}

/**
 * The query with its `metadata[KEY]=VALUE` parameters gathered into one `metadata` object, as
 * an OpenAPI deepObject parameter is sent (src/api/schemas.ts `MetadataFilter` checks it). Any key
 * that opens with `metadata[` is one, so that a malformed one is refused, not ignored.
 */
export function gatherMetadataQuery(query: Record<string, unknown>): Record<string, unknown> {
  const prefix = 'metadata[';
  const names = Object.keys(query).filter((name) => name.startsWith(prefix));
  if (names.length === 0) return query;
  const gathered: Record<string, unknown> = { ...query };
  const metadata: Record<string, unknown> = {};
  for (const name of names) {
    delete gathered[name];
    // Without its closing bracket the key keeps a `[`: refused as malformed.
    const key = name.endsWith(']') ? name.slice(prefix.length, -1) : name.slice(prefix.length - 1);
    // Defined, not assigned, so that `__proto__` stays a key that the schema refuses by name.
    Object.defineProperty(metadata, key, {
      value: query[name],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  gathered.metadata = metadata;
  return gathered;
}

type RequestRead = { params: unknown; query: unknown; body: unknown; key: string };

/**
 * A request's mode, path ids, path, query, Idempotency-Key and body, checked and parsed as its
 * route wants them (the key is '' when none was sent).
 */
function readRequest(ctx: Koa.Context, route: Route, caller: Caller | null): RequestRead {
  if (route.testModeOnly && caller?.mode !== 'test') {
    throw new AppError('wrong_mode', 'This endpoint is available in Test Mode only');
  }
  for (const [name, value] of Object.entries(ctx.params as Record<string, string>)) {
    if (name.endsWith('id') && !route.opaqueParams?.includes(name) && !uuidPattern.test(value)) {
      const what = name.replace(/_?id$/, '').replace(/_/g, ' ') || 'resource';
      throw new AppError('not_found', `${what.charAt(0).toUpperCase()}${what.slice(1)} not found`);
    }
  }
  refuseUnstorableText(ctx.params, [], 'path');
  const params = parse(route.params, ctx.params, 'path');
  // A route without query parameters ignores them: only one that reads them checks them.
  if (route.query) refuseUnstorableText(ctx.query, [], 'query');
  const query = parse(route.query, gatherMetadataQuery(ctx.query), 'query');
  // Present but empty (or only whitespace, which the HTTP parser trims away) is no key at
  // all: refused, not treated as absent, so that a retry can never move money twice.
  const sentKey = route.idempotent ? ctx.headers['idempotency-key'] : undefined;
  const key = sentKey === undefined ? '' : ctx.get('idempotency-key');
  if (sentKey !== undefined && !IDEMPOTENCY_KEY.test(key)) {
    throw new AppError(
      'validation_failed',
      `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} printable characters`,
    );
  }
  const body = parse(route.body, ctx.state.body, 'body');
  // What the handler gets must be storable; a property the schema drops never reaches the
  // database, so only a route without a body schema (it reads the raw body) checks it all.
  refuseUnstorableText(route.body ? body : ctx.state.body, [], 'body');
  return { params, query, body, key };
}

/** Mounts routes on the router: authentication, rate limit, validation, idempotency, handler. */
export function mountRoutes(
  router: Router,
  routes: readonly Route[],
  pool: DatabasePool,
  options: { credentials?: CredentialCache | undefined } = {},
): void {
  const concretePaths = new Set(routes.filter((r) => !r.path.includes(':')).map((r) => r.path));
  for (const route of routes) {
    const templated = route.path.includes(':');
    router[route.method](route.path, async function runRoute(ctx: Koa.Context, next: Koa.Next) {
      // A concrete path wins over a template that also matches it (OpenAPI's rule):
      // `GET /api/v1/users/create/` is the create path's 405, not a user named "create".
      if (templated && concretePaths.has(ctx.path)) {
        await next();
        return;
      }
      route.guard?.(ctx);
      if (route.throttle) {
        await throttle(pool, clientAddress(ctx), route.throttle);
      }
      const asAdmin =
        route.admin === true ||
        (route.adminToo === true && ctx.get('api-key').startsWith(ADMIN_API_KEY_PREFIX));
      if (asAdmin && route.auth !== null) {
        await authenticateAdminRequest(ctx, pool, route.auth, {
          basic: route.adminBasicAuth === true,
        });
      }
      // The request is read before it is counted, so that the statement that counts it can
      // also claim its key; what reading refused answers after the 401 and the 429 it had to.
      const reading: { read?: RequestRead; refused?: AppError } = {};
      const readAs = (who: Caller | null) => {
        try {
          reading.read = readRequest(ctx, route, who);
          delete reading.refused;
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          reading.refused = error;
        }
      };
      let caller: Caller | null;
      let counted: ClaimResult | null | undefined;
      if (route.auth === null || asAdmin) {
        caller = route.auth === null && route.sessionCaller ? route.sessionCaller(ctx) : null;
        if (caller && route.sessionCategory) {
          await countSessionRequest(pool, caller, route.sessionCategory);
        }
        readAs(caller);
      } else {
        ({ caller, claim: counted } = await authenticateRequest(
          ctx,
          pool,
          route.auth,
          options.credentials,
          (who, limit) => {
            readAs(who);
            const key = reading.refused ? '' : (reading.read?.key ?? '');
            return key ? { key, requestHash: requestHash(ctx), limit } : null;
          },
        ));
      }
      if (reading.refused || !reading.read) {
        throw reading.refused ?? new Error('the request was never read');
      }
      const { params, query, body, key } = reading.read;
      const input = {
        ctx,
        caller: caller as Caller,
        body,
        query,
        params,
        idempotency: null,
        answerEarly: earlyAnswer(pool, caller as Caller, null),
      };

      let result: HandlerResult;
      if (key && caller) {
        const claim = counted ?? (await claimIdempotencyKey(pool, caller, key, requestHash(ctx)));
        if (claim.kind === 'mismatch') {
          throw new AppError(
            'idempotency_mismatch',
            'Idempotency-Key was already used with a different request',
          );
        }
        let replayed = claim.kind === 'replay';
        if (claim.kind === 'replay') {
          idempotentReplays.inc({ route: route.path });
          result = { status: claim.status, body: claim.body };
        } else {
          const idempotency = {
            key,
            claimedAt: claim.claimedAt,
            fresh: claim.kind === 'claimed',
          };
          // A 5xx leaves the claim open: a retry then re-attaches to the same workflow.
          result = await settle(() =>
            route.handler({
              ...input,
              idempotency,
              answerEarly: earlyAnswer(pool, caller, idempotency),
            }),
          );
          // A retry's step may find its payment made by an earlier attempt, and store nothing.
          if (!result.answered || !idempotency.fresh) {
            await completeIdempotencyKey(pool, caller, key, result.status ?? 200, result.body);
          }
          // A retry's success is the key's one payment; a decline it answers is computed now.
          replayed = !idempotency.fresh && (result.status ?? 200) < 300;
        }
        if (replayed) ctx.set('Idempotent-Replayed', 'true');
      } else {
        result = await route.handler(input).catch((error: unknown) => {
          // Without a key a retry is a new payment: point the caller at the record instead.
          if (error instanceof AppError && error.code === 'timeout' && route.idempotent) {
            throw new AppError('timeout', TIMEOUT_WITHOUT_KEY, { cause: error });
          }
          throw error;
        });
      }
      ctx.status = result.status ?? 200;
      ctx.body = result.body;
      for (const [name, value] of Object.entries(result.headers ?? {})) ctx.set(name, value);
    });
  }
}

/**
 * A payment's id: derived from the idempotency key's use, so that a retry finds the same
 * payment; a random UUID for a request sent without a key.
 */
export function idFromKey(
  caller: Caller,
  idempotency: { key: string; claimedAt: string } | null,
  kind: string,
): string {
  if (!idempotency) return randomUUID();
  const digest = hash('sha256')
    .update(
      `${caller.applicationId}\n${caller.mode}\n${idempotency.key}\n${idempotency.claimedAt}\n${kind}`,
    )
    .digest();
  digest[6] = (digest[6]! & 0x0f) | 0x50; // version 5 (name-based)
  digest[8] = (digest[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const h = digest.subarray(0, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * The use of the request's Idempotency-Key under which the payment's money step stores the
 * request's answer (TransferInput `answer`), as a part of the step's input; none without a key.
 * A handler whose step says it did (`answered` in its result) returns `answered: true`.
 */
export function answerUnderKey(
  idempotency: { key: string; claimedAt: string } | null,
): { answer: PaymentAnswer } | undefined {
  return idempotency
    ? { answer: { key: idempotency.key, claimedAt: idempotency.claimedAt } }
    : undefined;
}

type MatchedLayer = { paramNames: readonly unknown[] };

/**
 * Between the router and its `allowedMethods`: where a concrete path matched, the templates that
 * also match it (`/users/:user_id/` for `/users/create/`) do not add their methods to `Allow`.
 */
export function concretePathsWin(): Koa.Middleware {
  return async function concretePathsWin(ctx, next) {
    const state = ctx as { matched?: MatchedLayer[] };
    if (state.matched?.some((layer) => layer.paramNames.length === 0)) {
      state.matched = state.matched.filter((layer) => layer.paramNames.length === 0);
    }
    await next();
  };
}
