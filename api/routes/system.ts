import { sql } from 'slonik';
import { z } from 'zod';
import type { ApiDeps } from '../deps';
import { buildOpenApi, DOCS_HTML } from '../openapi';
import { defineRoute, type Route } from '../route';
import { ErrorBody } from '../schemas';

export const API_VERSION = '0.3.0';

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
      summary: 'Readiness: Postgres and Temporal answer',
      tag: 'System',
      auth: null,
      responses: {
        200: { description: 'Ready', schema: z.object({ status: z.literal('ready') }) },
        503: { description: 'A dependency does not answer', schema: ErrorBody },
      },
      handler: async () => {
        const failures: string[] = [];
        await deps.pool.oneFirst(sql.unsafe`SELECT 1`).catch(() => failures.push('postgres'));
        await deps.temporal.workflowService
          .getSystemInfo({})
          .catch(() => failures.push('temporal'));
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
      handler: ({ ctx }) => {
        ctx.type = 'text/html';
        return Promise.resolve({ body: DOCS_HTML });
      },
    }),
  ];
}
