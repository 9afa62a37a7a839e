import type Koa from 'koa';
import type { z } from 'zod';
import type { Caller, RateLimitCategory } from '../domain/types';
import type { EarlyAnswer } from './access';

export type ResponseSpec = {
  description: string;
  schema?: z.ZodType;
  /** Media types answered besides JSON (by the request's Accept), as OpenAPI media objects. */
  otherContent?: Record<string, Record<string, unknown>>;
  /** Response headers the handler sets, as OpenAPI header objects (the edge's are added). */
  headers?: Record<string, Record<string, unknown>>;
};

export type HandlerResult = {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
  /** The payment's step stored this answer under the request's Idempotency-Key already. */
  answered?: boolean;
};

export type RouteContext<B, Q, P> = {
  ctx: Koa.Context;
  caller: Caller;
  body: B;
  query: Q;
  params: P;
  /** Set on routes that accept an Idempotency-Key: the key and when this use of it began. */
  /** `fresh`: this request claimed the key (false: an earlier attempt with it never finished). */
  idempotency: { key: string; claimedAt: string; fresh: boolean } | null;
  /**
   * A money step's early answer (src/api/access.ts), bound to this request and its key: a retry
   * whose first attempt made the payment skips it, and that payment answers.
   */
  answerEarly: EarlyAnswer;
};

/** A limit of requests a minute for callers that no credential names (src/db/rate-limit.ts). */
export type Throttle = { category: string; perMinute: number };

/**
 * One route: its validation schemas, documentation and handler together, so that the OpenAPI
 * document is generated from the very schemas that validate the requests.
 */
export type Route<B = unknown, Q = unknown, P = unknown> = {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** Koa style, with `:name` parameters. */
  path: string;
  summary: string;
  tag: string;
  /** A rate-limit category, for authenticated routes; `null` marks an unauthenticated route. */
  auth: RateLimitCategory | null;
  /**
   * An admin endpoint: admin credentials only (application credentials: 403), behind the
   * per-address lockout; `auth` is then the admin's rate-limit category. `caller` is not set.
   */
  admin?: boolean;
  /**
   * An admin endpoint that also takes the admin's credentials as HTTP Basic (`api-key` as the
   * user, `secret-key` as the password): what a browser can send (the Temporal UI's codec calls).
   */
  adminBasicAuth?: boolean;
  /**
   * An application endpoint that admin credentials may call too (an admin's `api-key` opens
   * with `pk_admin_`): behind the admin lockout and rate limit; `caller` is then not set.
   */
  adminToo?: boolean;
  /** An unauthenticated route's limit, counted per client address (its /64 for IPv6). */
  throttle?: Throttle;
  testModeOnly?: boolean;
  /**
   * An unauthenticated route's caller found otherwise (the dashboard's session), so that its
   * Idempotency-Key is honoured under that application and mode.
   */
  sessionCaller?: (ctx: Koa.Context) => Caller;
  /**
   * The rate-limit category a session caller's request counts against: its API route's, so
   * that the dashboard is no way around that route's limit.
   */
  sessionCategory?: RateLimitCategory;
  /**
   * Runs before anything else of the route, even its rate limit: the dashboard's check of the
   * session's role and of a fresh sign-in (src/api/dashboard/guard.ts).
   */
  guard?: (ctx: Koa.Context) => void;
  /** Accepts `Idempotency-Key` (every POST that moves money). */
  idempotent?: boolean;
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  params?: z.ZodType<P>;
  /** Path parameters that are not UUIDs (by default every `..._id` parameter must be one). */
  opaqueParams?: readonly string[];
  responses: Record<number, ResponseSpec>;
  handler: (input: RouteContext<B, Q, P>) => Promise<HandlerResult>;
};

/** Keeps the generic parameters of one route while collecting routes of different shapes. */
export function defineRoute<B, Q, P>(route: Route<B, Q, P>): Route {
  return route as unknown as Route;
}
