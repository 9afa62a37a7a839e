import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type Koa from 'koa';
import { AppError } from '../errors';

/**
 * Serves the dashboard's build (dashboard/dist, built at install by tools/scripts/ensure-deps.sh):
 * the hashed files under assets/ cached for a year, everything else revalidated, and any other path
 * under /dashboard answered with index.html, as the app routes on the client.
 */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
};

/** What a dashboard page may load and where it may send: this origin only, no framing. */
const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

/** The request's path; a request in authority form (`CONNECT host:port`) has none: ''. */
export function requestPath(ctx: Koa.Context): string {
  return typeof ctx.path === 'string' ? ctx.path : '';
}

/** Whether the request is one of the dashboard's JSON endpoints. */
export function isDashboardApi(ctx: Koa.Context): boolean {
  return requestPath(ctx).startsWith('/dashboard/api/');
}

async function fileAt(file: string): Promise<Buffer | null> {
  const info = await stat(file).catch(() => null);
  return info?.isFile() ? readFile(file) : null;
}

export function serveDashboard(distDir: string): Koa.Middleware {
  const root = path.resolve(distDir);
  return async function dashboardStatic(ctx, next) {
    const at = requestPath(ctx);
    const ours = at === '/dashboard' || at.startsWith('/dashboard/');
    if (!ours || at === '/dashboard/api' || isDashboardApi(ctx)) {
      await next();
      return;
    }
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      throw new AppError('invalid_request', 'The dashboard pages answer GET and HEAD only');
    }
    const relative = at.slice('/dashboard'.length).replace(/^\/+/, '');
    const wanted = path.resolve(root, relative);
    const inside = wanted.startsWith(`${root}${path.sep}`);
    let body = inside ? await fileAt(wanted) : null;
    let served = wanted;
    if (!body) {
      // A missing asset is a 404; any other path is a page of the app.
      if (relative.startsWith('assets/')) throw new AppError('not_found', 'No such dashboard file');
      served = path.join(root, 'index.html');
      body = await fileAt(served);
      if (!body) {
        throw new AppError(
          'provider_unavailable',
          'The dashboard is not built: run `bash tools/scripts/ensure-deps.sh` (npm start does)',
        );
      }
    }
    ctx.set(SECURITY_HEADERS);
    ctx.set(
      'Cache-Control',
      served.includes(`${path.sep}assets${path.sep}`)
        ? 'public, max-age=31536000, immutable'
        : 'no-cache',
    );
    ctx.type = CONTENT_TYPES[path.extname(served)] ?? 'application/octet-stream';
    ctx.body = body;
  };
}
