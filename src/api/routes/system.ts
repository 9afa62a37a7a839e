import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { AppError } from '../errors';
import { databaseAnswers } from '../../db/pool';
import type { ApiDeps } from '../deps';
import { buildOpenApi } from '../openapi';
import { defineRoute, type Route } from '../route';
import { ErrorBody } from '../schemas';

export const API_VERSION = '0.3.0';

/** How long readiness waits for each dependency: a probe must answer, even when they do not. */
const READINESS_TIMEOUT_MS = 1_500;

/** True when `check` answers true within the readiness bound; false on failure or silence. */
async function withinReadiness(check: Promise<boolean>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const silence = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), READINESS_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check.catch(() => false), silence]);
  } finally {
    clearTimeout(timer);
  }
}

/** Health, readiness and the API's own documentation: no credentials. */
export function systemRoutes(deps: ApiDeps, allRoutes: () => readonly Route[]): Route[] {
  let document: Record<string, unknown> | undefined;
  return [
    defineRoute({
      method: 'get',
      path: '/healthz',
      summary: 'Liveness: the process answers',
      tag: 'System',
      auth: null,
      responses: { 200: { description: 'Alive', schema: z.object({ status: z.literal('ok') }) } },
      handler: () => Promise.resolve({ body: { status: 'ok' } }),
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      summary: 'Readiness: Postgres and Temporal answer, and the process is not stopping',
      tag: 'System',
      auth: null,
      responses: {
        200: { description: 'Ready', schema: z.object({ status: z.literal('ready') }) },
        503: {
          description: 'A dependency does not answer, or the process is stopping',
          schema: ErrorBody,
        },
      },
      handler: async () => {
        if (deps.draining?.()) {
          return { status: 503, body: { detail: 'Not ready: shutting down' } };
        }
        // Both asked at once, each bounded: the answer comes within READINESS_TIMEOUT_MS.
        const [postgres, temporal] = await Promise.all([
          withinReadiness(databaseAnswers(deps.pool)),
          withinReadiness(
            deps.temporal.connection
              .withDeadline(Date.now() + READINESS_TIMEOUT_MS, () =>
                deps.temporal.workflowService.getSystemInfo({}),
              )
              .then(() => true),
          ),
        ]);
        const failures = [...(postgres ? [] : ['postgres']), ...(temporal ? [] : ['temporal'])];
        if (failures.length) {
          return {
            status: 503,
            body: { detail: `Not ready: ${failures.join(', ')} did not answer` },
          };
        }
        return { body: { status: 'ready' } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/openapi.json',
      summary: 'This OpenAPI 3.1 document',
      tag: 'System',
      auth: null,
      responses: { 200: { description: 'The document' } },
      handler: () => {
        document ??= buildOpenApi(allRoutes(), API_VERSION);
        return Promise.resolve({ body: document });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/docs',
      summary: 'The API reference, rendered',
      tag: 'System',
      auth: null,
      responses: { 200: { description: 'An HTML page' } },
      handler: () =>
        Promise.resolve({
          body: DOCS_HTML,
          headers: {
            'Content-Type': 'text/html; charset=utf-8',
            'Content-Security-Policy': DOCS_POLICY,
            'Cache-Control': 'no-cache',
          },
        }),
    }),
    defineRoute({
      method: 'get',
      path: '/docs/assets/:file',
      summary: 'A static file of the API reference page (Swagger UI, served from npm, offline)',
      tag: 'System',
      auth: null,
      params: z.object({ file: z.string().meta({ example: 'swagger-ui-bundle.js' }) }),
      responses: {
        200: { description: 'The file' },
        304: { description: 'Not modified since the ETag sent in If-None-Match' },
        404: { description: 'No such file', schema: ErrorBody },
      },
      handler: ({ ctx }) => {
        const name = (ctx.params as { file: string }).file;
        const asset = DOCS_ASSETS[name];
        if (!asset) throw new AppError('not_found', 'File not found');
        const etag = `"swagger-ui-dist-${swaggerUiVersion()}-${name}"`;
        const headers = { ETag: etag, 'Cache-Control': 'public, max-age=86400' };
        if (ctx.get('if-none-match') === etag)
          return Promise.resolve({ status: 304, body: null, headers });
        return Promise.resolve({
          body: asset.read(),
          headers: { ...headers, 'Content-Type': asset.type },
        });
      },
    }),
  ];
}

const swaggerUiDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** Read once, on first use, and kept: the bundle is large and never changes while running. */
function fileOnce(file: string): () => Buffer {
  let content: Buffer | undefined;
  return () => (content ??= readFileSync(path.join(swaggerUiDir, file)));
}

const swaggerUiPackage = fileOnce('package.json');
const swaggerUiVersion = () =>
  (JSON.parse(swaggerUiPackage().toString('utf8')) as { version: string }).version;

/** The start-up script of the page: a file, so that the page's policy can refuse inline scripts. */
const DOCS_INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/api/v1/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    tryItOutEnabled: true,
    displayRequestDuration: true,
    persistAuthorization: false,
    // The default sends the document to validator.swagger.io: the page stays on this server.
    validatorUrl: null,
  });
});
`;

/** The only files served under /docs/assets/, with their content types. */
const DOCS_ASSETS: Record<string, { type: string; read: () => Buffer }> = {
  'swagger-ui.css': { type: 'text/css; charset=utf-8', read: fileOnce('swagger-ui.css') },
  'swagger-ui-bundle.js': {
    type: 'text/javascript; charset=utf-8',
    read: fileOnce('swagger-ui-bundle.js'),
  },
  'favicon-32x32.png': { type: 'image/png', read: fileOnce('favicon-32x32.png') },
  'favicon-16x16.png': { type: 'image/png', read: fileOnce('favicon-16x16.png') },
  'docs-init.js': {
    type: 'text/javascript; charset=utf-8',
    read: () => Buffer.from(DOCS_INIT, 'utf8'),
  },
};

/** Everything the page loads comes from this server; try-it calls go to this server only. */
const DOCS_POLICY = [
  "default-src 'self'",
  "img-src 'self' data:",
  "style-src 'self' 'unsafe-inline'",
  "script-src 'self'",
  "connect-src 'self'",
  "frame-ancestors 'none'",
].join('; ');

const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Wallet and payments engine: API reference</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png" sizes="32x32">
  <link rel="icon" type="image/png" href="/docs/assets/favicon-16x16.png" sizes="16x16">
</head>
<body>
  <noscript>The reference needs JavaScript; the document itself is at <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>.</noscript>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/docs-init.js"></script>
</body>
</html>
`;
