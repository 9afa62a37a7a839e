import { z } from 'zod';
import type { Route } from './route';

/** `:name` (Koa) to `{name}` (OpenAPI). */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, '{$1}');
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  return z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' });
}

function stripDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = schema;
  return rest;
}

/**
 * The OpenAPI 3.1 document, generated from the zod schemas that validate the requests and
 * describe the responses.
 */
export function buildOpenApi(routes: readonly Route[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = openApiPath(route.path);
    const parameters: unknown[] = [];
    for (const name of route.path.match(/:([A-Za-z_]+)/g) ?? []) {
      parameters.push({
        name: name.slice(1),
        in: 'path',
        required: true,
        schema: { type: 'string' },
      });
    }
    if (route.query) {
      const query = jsonSchema(route.query, 'input') as {
        properties?: Record<string, unknown>;
        required?: string[];
      };
      for (const [name, schema] of Object.entries(query.properties ?? {})) {
        parameters.push({
          name,
          in: 'query',
          required: query.required?.includes(name) ?? false,
          schema,
        });
      }
    }
    if (route.auth !== null) {
      parameters.push(
        { $ref: '#/components/parameters/ApiKey' },
        { $ref: '#/components/parameters/SecretKey' },
      );
    }
    if (route.idempotent) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
    const responses: Record<string, unknown> = {};
    for (const [status, spec] of Object.entries(route.responses)) {
      responses[status] = {
        description: spec.description,
        ...(spec.schema
          ? {
              content: {
                'application/json': { schema: stripDialect(jsonSchema(spec.schema, 'output')) },
              },
            }
          : {}),
      };
    }
    if (route.auth !== null) {
      responses['429'] ??= {
        description: 'Rate limit exceeded; Retry-After gives the seconds to wait',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    paths[path] ??= {};
    paths[path][route.method] = {
      summary: route.summary,
      tags: [route.tag],
      operationId: `${route.method}_${path.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`,
      ...(route.auth !== null ? { 'x-rate-limit-category': route.auth } : {}),
      ...(route.testModeOnly ? { 'x-test-mode-only': true } : {}),
      parameters,
      ...(route.body
        ? {
            requestBody: {
              required: true,
              content: {
                'application/json': { schema: stripDialect(jsonSchema(route.body, 'input')) },
              },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Wallet and payments engine',
      version,
      description:
        'Amounts in the base currency are JSON numbers in major units with at most 2 decimals; ' +
        'mobile-money amounts are integer SLE cents. Errors are always {"detail": string}. ' +
        'Money-moving POSTs accept Idempotency-Key; a replay carries Idempotent-Replayed: true.',
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      parameters: {
        ApiKey: { name: 'api-key', in: 'header', required: true, schema: { type: 'string' } },
        SecretKey: { name: 'secret-key', in: 'header', required: true, schema: { type: 'string' } },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
      },
      schemas: {
        Error: { type: 'object', properties: { detail: { type: 'string' } }, required: ['detail'] },
      },
    },
  };
}

export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Wallet and payments engine: API reference</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <style>
    body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; color: #1b1b1b; }
    h1 { font-size: 1.5rem; } h2 { font-size: 1.1rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
    .op { margin: .75rem 0; padding: .5rem .75rem; border-left: 4px solid #888; background: #f7f7f7; }
    .m { font-weight: 700; text-transform: uppercase; display: inline-block; width: 4.5rem; }
    .post { border-color: #2d7d46; } .get { border-color: #2458a6; } .delete { border-color: #a62424; } .patch { border-color: #a67c24; }
    code { font-size: .95em; } details pre { overflow: auto; background: #fff; padding: .5rem; }
  </style>
</head>
<body>
  <h1>Wallet and payments engine</h1>
  <p>The machine-readable document: <a href="/api/v1/openapi.json"><code>/api/v1/openapi.json</code></a> (OpenAPI 3.1).</p>
  <div id="ops">Loading…</div>
  <script>
    fetch('/api/v1/openapi.json').then(r => r.json()).then(doc => {
      const byTag = {};
      for (const [path, ops] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(ops)) {
        (byTag[op.tags[0]] ??= []).push({ path, method, op });
      }
      const esc = s => String(s).replace(/[&<>]/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' }[c]));
      document.getElementById('ops').innerHTML = Object.entries(byTag).map(([tag, ops]) =>
        '<h2>' + esc(tag) + '</h2>' + ops.map(({ path, method, op }) =>
          '<div class="op ' + method + '"><span class="m">' + method + '</span><code>' + esc(path) + '</code> ' + esc(op.summary) +
          '<details><summary>Schema</summary><pre>' + esc(JSON.stringify({ parameters: op.parameters, requestBody: op.requestBody, responses: op.responses }, null, 2)) + '</pre></details></div>'
        ).join('')).join('');
    });
  </script>
</body>
</html>`;
