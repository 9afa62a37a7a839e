import type Koa from 'koa';
import { AppError } from '../errors';
import { parseJsonKeepingLiterals } from './json-number';

export const MAX_BODY_BYTES = 1024 * 1024;
/** Deeper than any request or provider event nests; deeper ones would exhaust the stack. */
export const MAX_BODY_DEPTH = 64;

/** How deep the arrays and objects of a JSON text nest, counted without parsing it. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    } else if (c === '{' || c === '[') {
      depth += 1;
      if (depth > deepest) deepest = depth;
    } else if (c === '}' || c === ']') {
      depth -= 1;
    }
  }
  return deepest;
}

/**
 * Reads a JSON body (413 too large; 400 not JSON or too deep); an empty one is `undefined`. An
 * inexact number arrives as an `InexactNumber`, so amounts are judged as written. A multipart
 * upload to a path `streamed` names is left unread: its route streams it, bounded.
 */
export function jsonBody(
  options: {
    streamed?: (path: string) => boolean;
    /** The largest body a path takes, when it is not `MAX_BODY_BYTES` (a bulk payment's). */
    maxBytes?: (path: string) => number | undefined;
  } = {},
): Koa.Middleware {
  return async function readJsonBody(ctx, next) {
    const streamed =
      options.streamed?.(ctx.path) === true && Boolean(ctx.is('multipart/form-data'));
    if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method) || streamed) {
      await next();
      return;
    }
    const max = options.maxBytes?.(ctx.path) ?? MAX_BODY_BYTES;
    const tooLarge = () =>
      new AppError('payload_too_large', `Request body is larger than ${max / 1024 / 1024} MiB`);
    const declared = Number(ctx.get('content-length') || '0');
    if (declared > max) throw tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.req) {
      const buffer = chunk as Buffer;
      size += buffer.length;
      if (size > max) throw tooLarge();
      chunks.push(buffer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    // Signed provider notifications are verified over the exact bytes received.
    ctx.state.rawBody = text;
    if (text.trim() === '') {
      ctx.state.body = undefined;
    } else if (jsonDepth(text) > MAX_BODY_DEPTH) {
      throw new AppError(
        'invalid_json',
        `Request body nests arrays and objects deeper than ${MAX_BODY_DEPTH} levels`,
      );
    } else {
      try {
        ctx.state.body = parseJsonKeepingLiterals(text);
      } catch {
        throw new AppError('invalid_json', 'Request body is not valid JSON');
      }
    }
    await next();
  };
}

/**
 * Why Postgres would refuse this text, or null: a text column cannot hold the NUL character,
 * and a jsonb value (the stored idempotent response, a provider notification) cannot hold an
 * unpaired UTF-16 surrogate, which `\ud800` in a JSON string produces.
 */
function unstorable(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain the NUL character';
  if (/\p{Cs}/u.test(text)) return 'must not contain an unpaired UTF-16 surrogate';
  return null;
}

const printable = (key: string) => JSON.stringify(key).slice(1, -1);

/**
 * Refuses, with a 422 that names the field, any string or object key anywhere in `value` that
 * the database could not store: checked at the edge so that no handler or workflow ever sees
 * input that can never succeed.
 */
export function refuseUnstorableText(value: unknown, path: readonly string[], where: string): void {
  const fail = (at: readonly string[], why: string): never => {
    throw new AppError('validation_failed', `${at.length ? at.join('.') : where}: ${why}`);
  };
  if (typeof value === 'string') {
    const why = unstorable(value);
    if (why) fail(path, why);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [key, item] of Object.entries(value)) {
    const at = [...path, printable(key)];
    const why = unstorable(key);
    if (why) fail(at, `the name ${why}`);
    refuseUnstorableText(item, at, where);
  }
}
