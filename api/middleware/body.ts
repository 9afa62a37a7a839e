import type Koa from 'koa';
import { AppError } from '../errors';

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Reads a JSON body of at most 1 MiB: 413 above it, 400 when it is not JSON. An empty body is
 * `undefined`, which a route without a body schema accepts.
 */
export function jsonBody(): Koa.Middleware {
  return async function readJsonBody(ctx, next) {
    if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method)) {
      await next();
      return;
    }
    const declared = Number(ctx.get('content-length') || '0');
    if (declared > MAX_BODY_BYTES) {
      throw new AppError('payload_too_large', 'Request body is larger than 1 MiB');
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.req) {
      const buffer = chunk as Buffer;
      size += buffer.length;
      if (size > MAX_BODY_BYTES) {
        throw new AppError('payload_too_large', 'Request body is larger than 1 MiB');
      }
      chunks.push(buffer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    // Signed provider notifications are verified over the exact bytes received.
    ctx.state.rawBody = text;
    if (text.trim() === '') {
      ctx.state.body = undefined;
    } else {
      try {
        ctx.state.body = JSON.parse(text) as unknown;
      } catch {
        throw new AppError('invalid_json', 'Request body is not valid JSON');
      }
    }
    await next();
  };
}
