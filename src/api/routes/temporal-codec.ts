import type Koa from 'koa';
import type { Payload } from '@temporalio/common';
import { z } from 'zod';
import type { Config } from '../../config';
import { PayloadCodecError } from '../../temporal/payload-codec';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';

/**
 * The Temporal UI's remote codec ("codec server"): an operator's browser sends the payloads of
 * the history it shows, encrypted as Temporal keeps them, and gets them back readable. Admins
 * only (docs/temporal-codec.md), from the UI origins the configuration allows.
 */
export const CODEC_PATH = '/api/v1/temporal-codec';

const Base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');

/** A payload in protobuf JSON: metadata values and data in base64. */
const JsonPayload = z.object({
  metadata: z.record(z.string(), Base64).default({}),
  data: Base64.default(''),
});
type JsonPayload = z.infer<typeof JsonPayload>;

export const CodecBody = z
  .object({ payloads: z.array(JsonPayload).max(1000, 'at most 1000 payloads at once') })
  .meta({ id: 'TemporalCodecPayloads' });

export const CodecResult = z
  .object({
    payloads: z.array(z.object({ metadata: z.record(z.string(), Base64), data: Base64 })),
  })
  .meta({ id: 'TemporalCodecResult' });

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
  ),
  data: Buffer.from(p.data, 'base64'),
});

const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([key, value]) => [
      key,
      Buffer.from(value ?? []).toString('base64'),
    ]),
  ),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

export function temporalCodecRoutes({ config, temporal }: ApiDeps): Route[] {
  const codecs = temporal.options.loadedDataConverter.payloadCodecs;
  const run = async (ctx: Koa.Context, payloads: JsonPayload[], way: 'encode' | 'decode') => {
    const namespace = ctx.get('x-namespace');
    if (namespace && namespace !== config.temporal.namespace) {
      throw new AppError(
        'invalid_request',
        `This codec serves the namespace ${config.temporal.namespace}, not ${namespace}`,
      );
    }
    let done = payloads.map(fromJson);
    try {
      for (const codec of way === 'encode' ? codecs : [...codecs].reverse()) {
        done = await codec[way](done);
      }
    } catch (error) {
      if (!(error instanceof PayloadCodecError)) throw error;
      throw new AppError('validation_failed', `payloads: ${error.message}`, { cause: error });
    }
    return { body: { payloads: done.map(toJson) } };
  };
  const route = (way: 'encode' | 'decode', summary: string): Route =>
    defineRoute({
      method: 'post',
      path: `${CODEC_PATH}/${way}`,
      summary,
      tag: 'Admin',
      auth: 'temporal_codec',
      admin: true,
      adminBasicAuth: true,
      body: CodecBody,
      responses: {
        200: { description: 'The payloads, in the same order', schema: CodecResult },
        400: errorResponse('X-Namespace names another namespace, or the body is not JSON'),
        401: errorResponse('Missing or invalid admin credentials'),
        403: errorResponse('Application credentials, or a browser origin that is not allowed'),
        422: errorResponse('Malformed payloads, or a payload no configured key decrypts'),
        429: errorResponse('The rate limit, or this address is locked out'),
      },
      handler: ({ ctx, body }) => run(ctx, body.payloads, way),
    });
  return [
    route(
      'decode',
      'Temporal UI codec server: decrypts payloads as Temporal keeps them. Admin credentials ' +
        '(headers, or HTTP Basic with api-key as the user and secret-key as the password)',
    ),
    route('encode', 'Temporal UI codec server: encrypts payloads with the current key. Admins'),
    defineRoute({
      method: 'get',
      path: `${CODEC_PATH}/`,
      summary:
        'Opened once in the operator’s browser: asks for the admin credentials (HTTP Basic), ' +
        'which the browser then sends with the Temporal UI’s codec calls',
      tag: 'Admin',
      auth: 'temporal_codec',
      admin: true,
      adminBasicAuth: true,
      responses: {
        200: { description: 'Signed in', schema: z.object({ message: z.string() }) },
        401: errorResponse('Missing or invalid admin credentials (with WWW-Authenticate)'),
      },
      handler: () =>
        Promise.resolve({
          body: { message: 'Signed in: the Temporal UI can now decode payloads' },
        }),
    }),
  ];
}

const PREFLIGHT_HEADERS = 'Content-Type, X-Namespace, Authorization, api-key, secret-key';

/**
 * The codec paths' edge, before the router: CORS answers for the allowed Temporal UI origins
 * (preflights answered without credentials, as browsers send them), and any other origin refused:
 * a browser always names it, so another site's page cannot use the browser's cached credentials.
 */
export function temporalCodecEdge(config: Config): Koa.Middleware {
  const allowed = new Set(config.temporal.codecAllowedOrigins);
  return async function temporalCodecEdge(ctx, next) {
    // A request in authority form (CONNECT host:port) has no path at all.
    const path = (ctx.path as string | null) ?? '';
    if (path !== CODEC_PATH && !path.startsWith(`${CODEC_PATH}/`)) {
      await next();
      return;
    }
    const origin = ctx.get('origin');
    if (origin) {
      if (!allowed.has(origin)) {
        throw new AppError(
          'forbidden',
          `The origin ${origin} may not call the codec endpoint (TEMPORAL_CODEC_ALLOWED_ORIGINS)`,
        );
      }
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Allow-Credentials', 'true');
      ctx.vary('Origin');
      if (ctx.method === 'OPTIONS' && ctx.get('access-control-request-method')) {
        ctx.set('Access-Control-Allow-Methods', 'GET, POST');
        ctx.set('Access-Control-Allow-Headers', PREFLIGHT_HEADERS);
        ctx.set('Access-Control-Max-Age', '600');
        ctx.status = 204;
        return;
      }
    }
    // JSON bodies only, so that a page of another site cannot post a form here either.
    if (ctx.method === 'POST' && ctx.get('content-type') && !ctx.is('application/json')) {
      throw new AppError('invalid_request', 'The body must be application/json');
    }
    try {
      await next();
    } catch (error) {
      if (error instanceof AppError && error.status === 401) {
        ctx.set('WWW-Authenticate', 'Basic realm="Temporal codec", charset="UTF-8"');
      }
      throw error;
    }
  };
}
