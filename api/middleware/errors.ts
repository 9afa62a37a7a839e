import type Koa from 'koa';
import { AppError } from '../errors';
import { redactHeaders, type Logger } from '../logger';

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
      const appError = toAppError(error);
      ctx.status = appError.status;
      ctx.body = { detail: appError.detail };
      if (appError.status === 429 && error instanceof AppError && 'retryAfter' in error) {
        ctx.set('Retry-After', String((error as AppError & { retryAfter: number }).retryAfter));
      }
      if (appError.status >= 500) {
        logger.error({ err: error, method: ctx.method, path: ctx.path }, 'request failed');
      }
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      logger.info(
        {
          req: { method: ctx.method, url: ctx.url, headers: redactHeaders(ctx.headers) },
          status: ctx.status,
          ms: Math.round(ms * 10) / 10,
          app: (ctx.state as { caller?: { applicationId: string } }).caller?.applicationId,
        },
        'request',
      );
    }
  };
}

export class RateLimitedError extends AppError {
  constructor(readonly retryAfter: number) {
    super('rate_limited', `Rate limit exceeded, retry in ${retryAfter} seconds`);
  }
}

function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const status = (error as { status?: unknown; expose?: unknown }).status;
  // Errors raised by Koa itself (for example a malformed URL) carry a status and a safe message.
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new AppError('invalid_request', (error as Error).message || 'Invalid request');
  }
  return new AppError('internal', 'Internal server error', { cause: error });
}
