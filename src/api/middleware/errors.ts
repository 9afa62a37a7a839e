import { STATUS_CODES } from 'node:http';
import type Koa from 'koa';
import type { ErrorCode } from '../../domain/errors';
import { isDatabaseUnreachable } from '../../db/pool';
import { AppError } from '../errors';
import { isTemporalUnreachable } from '../workflow-starts';
import { redactHeaders, redactUrl, type Logger } from '../../observability/logger';

/**
 * First in the chain: every failure becomes `{"detail": ...}` with its status. An expected
 * failure (AppError) shows its message; anything else is a 500 that shows nothing internal.
 * It also writes the one access-log line of each request.
 */
export function errorsAndAccessLog(logger: Logger): Koa.Middleware {
  return async function handleErrors(ctx, next) {
    const started = process.hrtime.bigint();
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new AppError('not_found', 'Not found');
      }
      if (ctx.status === 405 && ctx.body === undefined) {
        ctx.body = { detail: 'Method not allowed' };
      }
    } catch (error) {
      const { status, detail, code } = describeError(error);
      ctx.status = status;
      ctx.body = { detail };
      if (error instanceof RateLimitedError) ctx.set('Retry-After', String(error.retryAfter));
      if (code === 'unavailable') ctx.set('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      if (status >= 500) {
        logger.error({ err: error, method: ctx.method, path: ctx.path }, 'request failed');
      }
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      logger.info(
        {
          req: { method: ctx.method, url: redactUrl(ctx.url), headers: redactHeaders(ctx.headers) },
          status: ctx.status,
          ms: Math.round(ms * 10) / 10,
          app: (ctx.state as { caller?: { applicationId: string } }).caller?.applicationId,
        },
        'request',
      );
    }
  };
}

const CLIENT_GONE = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ECONNRESET', 'EPIPE']);

/**
 * What Koa reports on the app once a response has begun (a streamed body that failed, or a
 * client that left before its end): one log line of the engine's, in place of Koa's stack
 * trace on stderr. A client that left is no failure of the engine's.
 */
export function logLateErrors(app: Koa, logger: Logger): void {
  // Koa reports a failed body twice, from its pipeline and from the response's end.
  const reported = new WeakSet<Koa.Context>();
  app.on('error', (error: unknown, ctx?: Koa.Context) => {
    if (ctx) {
      if (reported.has(ctx)) return;
      reported.add(ctx);
    }
    const where = ctx ? { method: ctx.method, path: ctx.path } : {};
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && CLIENT_GONE.has(code)) {
      logger.info({ ...where, code }, 'client closed the connection before the response ended');
      return;
    }
    logger.error({ ...where, err: error }, 'response failed after it began');
  });
}

export class RateLimitedError extends AppError {
  constructor(readonly retryAfter: number) {
    super('rate_limited', `Rate limit exceeded, retry in ${retryAfter} seconds`);
  }
}

/** What a 503 asks the client to wait: a restarted dependency is back within seconds. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * The status and safe message of a failure: Postgres or Temporal unreachable is a 503 (retry
 * later), not a 500; errors of Koa or a library under it (http-errors) keep their 4xx status,
 * their message shown only when they mark it safe to show.
 */
function describeError(error: unknown): { status: number; detail: string; code?: ErrorCode } {
  // An answer decided already keeps its status: a 504 whose cause is Temporal lost on the way.
  const decided = error instanceof AppError;
  if (!decided && (isDatabaseUnreachable(error) || isTemporalUnreachable(error))) {
    error = new AppError('unavailable', null, { cause: error });
  }
  if (error instanceof AppError) {
    return { status: error.status, detail: error.detail, code: error.code };
  }
  const { status, expose, message } = error as {
    status?: unknown;
    expose?: unknown;
    message?: unknown;
  };
  if (typeof status === 'number' && Number.isInteger(status) && status >= 400 && status < 500) {
    const shown = expose === true && typeof message === 'string' && message.trim() !== '';
    return { status, detail: shown ? message : (STATUS_CODES[status] ?? 'Invalid request') };
  }
  return { status: 500, detail: 'Internal server error' };
}
