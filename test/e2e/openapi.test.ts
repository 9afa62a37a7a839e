import { randomUUID } from 'node:crypto';
// ajv 8 validates real answers against the document's schemas (draft 2020-12).
import Ajv2020 from 'ajv/dist/2020';
import { apiRoutes } from '../../src/api/app';
import { createAdmin } from '../../src/db/admins';
import { createLogger } from '../../src/observability/logger';
import { openApiPath, REQUEST_EXAMPLES } from '../../src/api/openapi';
import { createProviders } from '../../src/providers';
import { fundWallet } from '../support/database';
import { clientFor, createUserWithWallet, expectError, type Reply } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

// Trusts X-Forwarded-For: each unauthenticated call to an admin endpoint comes from its own address.
const engine = useTestEngine({ env: { TRUST_PROXY: 'true' } });
const { api } = useTestApp(engine);
let doc: any;

beforeAll(async () => {
  const reply = await bare().get('/api/v1/openapi.json');
  expect(reply.status).toBe(200);
  doc = reply.body;
});

const TRANSFER = '/api/v1/transactions/wallet/transfer';

/** A client without credentials. */
const bare = () => clientFor(engine.url, null);

/** The route table the running engine serves, as the router and the document read it. */
function engineRoutes() {
  return apiRoutes({
    config: engine.config,
    pool: engine.pool,
    temporal: engine.temporal,
    logger: createLogger('silent'),
    providers: createProviders({ config: engine.config, pool: engine.pool }),
  });
}

type Operation = { method: string; path: string; op: any };

function operations(): Operation[] {
  return Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ method, path, op })),
  );
}

/** Every `$ref` string anywhere in the document, with where it sits. */
function refsIn(value: unknown, at = '#'): { at: string; ref: string }[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => refsIn(item, `${at}/${i}`));
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) =>
    key === '$ref' && typeof item === 'string' ? [{ at, ref: item }] : refsIn(item, `${at}/${key}`),
  );
}

/** Follows a local JSON pointer (`#/components/schemas/User`) from the document root. */
function resolvePointer(ref: string): unknown {
  expect(ref.startsWith('#/')).toBe(true);
  return ref
    .slice(2)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>(
      (node, part) =>
        node && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined,
      doc,
    );
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document by a maintained validator, with every $ref resolved', async () => {
    const { Validator } = await import('@seriousme/openapi-schema-validator');
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result).toEqual({ valid: true });
    expect(validator.version).toBe('3.1');
    expect(() => validator.resolveRefs()).not.toThrow();

    const refs = refsIn(doc);
    expect(refs.length).toBeGreaterThan(20);
    for (const { at, ref } of refs) {
      expect({ at, ref, resolved: resolvePointer(ref) !== undefined }).toEqual({
        at,
        ref,
        resolved: true,
      });
    }
    expect(JSON.stringify(doc)).not.toContain('$defs');
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['Error', 'Transaction', 'User', 'Wallet']),
    );
  });

  it('documents the statuses the edge answers on every operation it applies to', () => {
    const missing: string[] = [];
    const need = (o: Operation, status: number, why: string) => {
      if (!o.op.responses[status]) missing.push(`${o.method} ${o.path}: ${status} (${why})`);
    };
    for (const o of operations()) {
      if (o.op.requestBody) {
        need(o, 400, 'invalid JSON');
        need(o, 413, 'body over 1 MiB');
        need(o, 422, 'validation');
      }
      if (o.op.security?.length) {
        need(o, 401, 'credentials');
        need(o, 429, 'rate limit');
      }
      const parameters = o.op.parameters as any[];
      if (parameters.some((p) => p.$ref === '#/components/parameters/IdempotencyKey')) {
        need(o, 422, 'malformed Idempotency-Key');
      }
      for (const p of parameters.filter((p) => p.in === 'path')) {
        if (p.schema?.format === 'uuid') need(o, 404, `${p.name} that is not a UUID`);
        else need(o, 422, `NUL in ${p.name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('declares the headers the edge and the handlers set on answers', () => {
    const missing: string[] = [];
    const need = (o: Operation, status: string, header: string) => {
      const response = o.op.responses[status];
      if (response && !response.headers?.[header]) {
        missing.push(`${o.method} ${o.path}: ${status} ${header}`);
      }
    };
    for (const o of operations()) {
      need(o, '429', 'Retry-After');
      need(o, '503', 'Retry-After');
      const parameters = o.op.parameters as any[];
      if (parameters.some((p) => p.$ref === '#/components/parameters/IdempotencyKey')) {
        need(o, '200', 'Idempotent-Replayed');
      }
    }
    expect(missing).toEqual([]);
    expect(doc.components.headers.RetryAfter.required).toBe(true);
    const wallets = doc.paths['/api/v1/wallets/'].get.responses['200'].headers;
    expect(Object.keys(wallets).sort()).toEqual(['Link', 'X-Total-Count']);
    expect(wallets['X-Total-Count'].required).toBe(true);
  });

  it('documents the lists’ filters and the transactions’ cursor page', () => {
    const names = (path: string) =>
      (doc.paths[path].get.parameters as { name: string }[]).map((p) => p.name).sort();
    expect(names('/api/v1/transactions/')).toEqual(
      [
        'amount[gte]',
        'amount[lte]',
        'created[gte]',
        'created[lt]',
        'metadata',
        'page',
        'per_page',
        'provider_reference',
        'starting_after',
        'status',
        'transaction_type',
        'wallet_id',
      ].sort(),
    );
    expect(names('/api/v1/users/')).toEqual(
      [
        'app_user_id',
        'email',
        'is_active',
        'metadata',
        'page',
        'per_page',
        'phone_number',
        'q',
      ].sort(),
    );
    // metadata[KEY]=VALUE: an object sent as a deepObject, its keys under the stored keys' rules.
    for (const path of ['/api/v1/transactions/', '/api/v1/users/', '/api/v1/transactions/export']) {
      const metadata = (
        doc.paths[path].get.parameters as { name: string; style?: string; schema: unknown }[]
      ).find((p) => p.name === 'metadata');
      expect([path, metadata]).toEqual([
        path,
        expect.objectContaining({
          in: 'query',
          style: 'deepObject',
          explode: true,
          schema: expect.objectContaining({
            type: 'object',
            propertyNames: expect.objectContaining({ maxLength: 40 }),
          }),
        }),
      ]);
    }
    const list = doc.paths['/api/v1/transactions/'].get;
    const parameters = list.parameters as { name: string; schema: unknown }[];
    const created = parameters.find((p) => p.name === 'created[gte]')!;
    expect(created.schema).toMatchObject({ type: 'string', format: 'date-time' });
    const variants = list.responses['200'].content['application/json'].schema.anyOf as {
      required: string[];
    }[];
    expect(variants.map((v) => v.required.sort())).toEqual([
      ['data', 'page', 'per_page', 'total', 'total_pages'],
      ['data', 'has_more', 'per_page'],
    ]);
    expect(Object.keys(list.responses)).toEqual(expect.arrayContaining(['404', '422']));
  });

  it('says which path ids must be UUIDs, and which operations accept an Idempotency-Key', () => {
    const user = doc.paths['/api/v1/users/{user_id}/'].get.parameters;
    expect(user).toEqual([
      { name: 'user_id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } },
    ]);
    const sync = doc.paths['/api/v1/transactions/sync/{reference_id}'].post.parameters;
    expect(sync[0].schema.format).toBeUndefined();
    const transfer = doc.paths['/api/v1/transactions/wallet/transfer'].post;
    expect(transfer.parameters).toContainEqual({ $ref: '#/components/parameters/IdempotencyKey' });
    expect(doc.components.parameters.IdempotencyKey.schema).toMatchObject({
      type: 'string',
      minLength: 1,
      maxLength: 255,
    });
  });

  it('gives amounts their bounds: > 0 with 2 decimals, and integer SLE cents of at least 1', () => {
    const body = (path: string) =>
      doc.paths[path].post.requestBody.content['application/json'].schema;
    for (const path of [
      '/api/v1/transactions/wallet/transfer',
      '/api/v1/escrow/hold',
      '/api/v1/fees/estimate/deposit',
    ]) {
      expect({ path, amount: body(path).properties.amount }).toEqual({
        path,
        amount: expect.objectContaining({
          type: 'number',
          exclusiveMinimum: 0,
          multipleOf: 0.01,
          description: expect.stringMatching(/2 decimals/),
          example: 12.5,
        }),
      });
    }
    const cents = body('/api/v1/transactions/wallet/mobile-money-deposit').properties.amount;
    expect(cents.type).toBe('integer');
    // PositiveMinorUnits says minimum 1; zod's .positive() said exclusiveMinimum 0: both mean >= 1.
    expect(cents.minimum === 1 || cents.exclusiveMinimum === 0).toBe(true);
  });

  it('lets the Authorize button of the reference page send both credential headers', () => {
    expect(doc.components.securitySchemes).toEqual({
      ApiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'api-key' }),
      SecretKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'secret-key' }),
    });
    const open = operations().filter((o) => !o.op.security?.length);
    expect(open.map((o) => o.path).sort()).toEqual(
      expect.arrayContaining(['/healthz', '/readyz', '/api/v1/openapi.json', '/docs']),
    );
  });
});

const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });

describe('links', () => {
  /** The document's operation by its operationId, as `[method, path]`. */
  function byOperationId(id: string): [string, string] {
    const found = operations().find((o) => o.op.operationId === id);
    expect(found).toBeDefined();
    return [found!.method, found!.path];
  }

  /** Follows every GET link of `reply` (an answer of `method path`): each answers 200. */
  async function followGets(method: string, path: string, reply: Reply): Promise<string[]> {
    const links = doc.paths[path][method].responses[String(reply.status)].links ?? {};
    const followed: string[] = [];
    for (const link of Object.values<any>(links)) {
      const [targetMethod, targetPath] = byOperationId(link.operationId);
      if (targetMethod !== 'get') continue;
      let url = targetPath;
      for (const [name, expression] of Object.entries<string>(link.parameters)) {
        const field = expression.replace('$response.body#/', '');
        url = url.replace(`{${name}}`, String(reply.body[field]));
      }
      const answer = await api.get(url);
      expect({ url, status: answer.status }).toEqual({ url, status: 200 });
      followed.push(targetPath);
    }
    return followed;
  }

  it('lead from a user to its wallet, from the wallet to its statement, from a payment to its record', async () => {
    const user = await api.post('/api/v1/users/create/', {
      app_user_id: `links-${randomUUID()}`,
      name: 'Linked',
      phone_number: '+23276000019',
    });
    expect(user.status).toBe(200);
    const links = doc.paths['/api/v1/users/create/'].post.responses['200'].links;
    const [method, path] = byOperationId(links.post_api_v1_wallets_create_user_id.operationId);
    expect([method, path]).toEqual(['post', '/api/v1/wallets/create/{user_id}/']);
    const wallet = await api.post(path.replace('{user_id}', user.body.id));
    expect(wallet.status).toBe(200);
    expect(await followGets('post', '/api/v1/users/create/', user)).toEqual(
      expect.arrayContaining(['/api/v1/users/{user_id}/', '/api/v1/wallets/{user_id}/']),
    );
    expect(await followGets('post', path, wallet)).toEqual(
      expect.arrayContaining([
        '/api/v1/wallets/{wallet_id}/statement',
        '/api/v1/wallets/{wallet_id}/balance',
      ]),
    );
    const other = await createUserWithWallet(api);
    await fundWallet(engine.pool, wallet.body.id, 5_000n);
    const transfer = await api.post(
      TRANSFER,
      { from_wallet_id: wallet.body.id, to_wallet_id: other.walletId, amount: 1.25 },
      { 'Idempotency-Key': `links-${randomUUID()}` },
    );
    expect(transfer.status).toBe(200);
    expect(await followGets('post', TRANSFER, transfer)).toEqual([
      '/api/v1/transactions/{transaction_id}',
      '/api/v1/transactions/{transaction_id}/timeline',
    ]);
  });
});

describe('request examples', () => {
  it('give every request body an example that its documented and its zod schema accept', () => {
    const routes = engineRoutes();
    // JSON bodies; a streamed upload (multipart/form-data) is described by its form fields.
    const withBody = operations().filter((o) => o.op.requestBody?.content['application/json']);
    expect(withBody.length).toBeGreaterThanOrEqual(7);
    expect(Object.keys(REQUEST_EXAMPLES).sort()).toEqual(
      withBody.map((o) => `${o.method} ${o.path}`).sort(),
    );
    for (const o of withBody) {
      const media = o.op.requestBody.content['application/json'];
      const example = media.example ?? media.schema.example;
      const validate = ajv.compile({ ...media.schema, components: doc.components });
      const route = routes.find((r) => r.method === o.method && openApiPath(r.path) === o.path)!;
      const parsed = route.body!.safeParse(example);
      expect({
        operation: `${o.method} ${o.path}`,
        documented: validate(example),
        zod: parsed.success,
      }).toEqual({
        operation: `${o.method} ${o.path}`,
        documented: true,
        zod: true,
      });
    }
  });
});

describe('real answers against their documented schemas', () => {
  /** Checks a reply against the schema the document gives its operation and status. */
  function conforms(method: string, path: string, reply: Reply): void {
    const response = doc.paths[path]?.[method]?.responses?.[String(reply.status)];
    expect({ method, path, status: reply.status, documented: Boolean(response) }).toEqual({
      method,
      path,
      status: reply.status,
      documented: true,
    });
    const schema = response.content?.['application/json']?.schema;
    expect(schema).toBeDefined();
    const validate = ajv.compile({ ...schema, components: doc.components });
    const valid = validate(reply.body);
    expect({ method, path, status: reply.status, errors: validate.errors ?? null, valid }).toEqual({
      method,
      path,
      status: reply.status,
      errors: null,
      valid: true,
    });
  }

  it('match for users, wallets, transfers, fees, pages and errors', async () => {
    const created = await api.post('/api/v1/users/create/', {
      app_user_id: `doc-${randomUUID()}`,
      name: 'Documented',
      phone_number: '+23276000009',
    });
    conforms('post', '/api/v1/users/create/', created);
    conforms('get', '/api/v1/users/{user_id}/', await api.get(`/api/v1/users/${created.body.id}/`));
    conforms('get', '/api/v1/users/', await api.get('/api/v1/users/?per_page=5'));
    conforms(
      'post',
      '/api/v1/wallets/create/{user_id}/',
      await api.post(`/api/v1/wallets/create/${created.body.id}/`),
    );
    conforms('get', '/api/v1/wallets/', await api.get('/api/v1/wallets/'));

    const a = await createUserWithWallet(api);
    const b = await createUserWithWallet(api);
    await fundWallet(engine.pool, a.walletId, 5_000n);
    const transfer = await api.post(
      '/api/v1/transactions/wallet/transfer',
      { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 12.5 },
      { 'Idempotency-Key': `doc-${randomUUID()}` },
    );
    expect(transfer.status).toBe(200);
    conforms('post', '/api/v1/transactions/wallet/transfer', transfer);
    conforms(
      'get',
      '/api/v1/transactions/{transaction_id}',
      await api.get(`/api/v1/transactions/${transfer.body.id}`),
    );
    conforms('get', '/api/v1/transactions/', await api.get('/api/v1/transactions/'));
    const statement = await api.get(`/api/v1/wallets/${a.walletId}/statement`);
    expect(statement.body.entries).toHaveLength(2);
    conforms('get', '/api/v1/wallets/{wallet_id}/statement', statement);
    conforms(
      'get',
      '/api/v1/wallets/{wallet_id}/balance',
      await api.get(`/api/v1/wallets/${a.walletId}/balance?at=2026-01-01`),
    );
    conforms(
      'post',
      '/api/v1/fees/estimate/deposit',
      await api.post('/api/v1/fees/estimate/deposit', { amount: 12.5, payment_method: 'card' }),
    );
    conforms('get', '/healthz', await api.get('/healthz'));
    conforms('get', '/api/v1/analytics/dashboard', await api.get('/api/v1/analytics/dashboard'));
    const admin = await createAdmin(engine.pool, 'documented');
    const asAdmin = { 'api-key': admin.api_key, 'secret-key': admin.secret_key };
    const figures = await bare().get('/api/v1/transactions/admin/analytics', asAdmin);
    expect(figures.status).toBe(200);
    conforms('get', '/api/v1/transactions/admin/analytics', figures);
    conforms(
      'get',
      '/api/v1/transactions/admin/analytics',
      await bare().get('/api/v1/transactions/admin/analytics?mode=nope', asAdmin),
    );
    conforms(
      'get',
      '/api/v1/transactions/admin/analytics',
      await api.get('/api/v1/transactions/admin/analytics'),
    );
    conforms(
      'get',
      '/api/v1/analytics/dashboard',
      await bare().get('/api/v1/analytics/dashboard', asAdmin),
    );

    // Errors, each under its documented status.
    conforms(
      'post',
      '/api/v1/transactions/wallet/transfer',
      await api.request('POST', '/api/v1/transactions/wallet/transfer', { raw: '{' }),
    );
    conforms(
      'post',
      '/api/v1/transactions/wallet/transfer',
      await api.post('/api/v1/transactions/wallet/transfer', { amount: 10.001 }),
    );
    conforms(
      'post',
      '/api/v1/transactions/wallet/transfer',
      await api.post(
        '/api/v1/transactions/wallet/transfer',
        { from_wallet_id: a.walletId, to_wallet_id: b.walletId, amount: 1 },
        { 'Idempotency-Key': '' },
      ),
    );
    conforms('get', '/api/v1/users/{user_id}/', await api.get('/api/v1/users/not-a-uuid/'));
    conforms('get', '/api/v1/users/', await bare().get('/api/v1/users/'));
    conforms(
      'post',
      '/api/v1/transactions/sync/{reference_id}',
      await api.post('/api/v1/transactions/sync/a%00b'),
    );
  });
});

describe('the routes and the document', () => {
  /** Every route of the API as `METHOD /open/api/{path}`, with whether it takes credentials. */
  function routeTable(): Map<string, { authenticated: boolean }> {
    const routes = engineRoutes();
    expect(routes.length).toBeGreaterThan(10);
    return new Map(
      routes.map((r) => [
        `${r.method.toUpperCase()} ${openApiPath(r.path)}`,
        { authenticated: r.auth !== null },
      ]),
    );
  }

  async function documentedKeys(): Promise<{ doc: any; keys: string[] }> {
    const reply = await bare().get('/api/v1/openapi.json');
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    const keys: string[] = [];
    for (const [path, operations] of Object.entries(reply.body.paths as Record<string, object>)) {
      for (const method of Object.keys(operations)) keys.push(`${method.toUpperCase()} ${path}`);
    }
    return { doc: reply.body, keys: keys.sort() };
  }

  it('serves an OpenAPI 3.1.0 document without credentials', async () => {
    const { doc } = await documentedKeys();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
  });

  it('documents every route of the API under its path and method, with its credential headers', async () => {
    const { doc, keys } = await documentedKeys();
    const routes = routeTable();
    expect(routes.has('POST /api/v1/users/create/')).toBe(true);
    expect(routes.has('GET /api/v1/users/{user_id}/')).toBe(true);
    for (const [key, { authenticated }] of routes) {
      expect(keys).toContain(key);
      const [method, path] = key.split(' ') as [string, string];
      const operation = doc.paths[path][method.toLowerCase()];
      // Both headers of one credential are required together: one security requirement.
      const security = authenticated ? [{ ApiKey: [], SecretKey: [] }] : [];
      expect({ key, security: operation.security }).toEqual({ key, security });
    }
    expect(doc.components.securitySchemes.ApiKey).toEqual(
      expect.objectContaining({ type: 'apiKey', name: 'api-key', in: 'header' }),
    );
    expect(doc.components.securitySchemes.SecretKey).toEqual(
      expect.objectContaining({ type: 'apiKey', name: 'secret-key', in: 'header' }),
    );
  });

  it('documents only operations that the server really answers', async () => {
    const { keys } = await documentedKeys();
    const routes = routeTable();
    expect(keys).toEqual([...routes.keys()].sort());
    const unanswered: string[] = [];
    for (const [i, key] of keys.entries()) {
      const [method, path] = key.split(' ') as [string, string];
      const concrete = path.replace(/\{[^}]+\}/g, () => randomUUID());
      // An address each: admin endpoints lock out an address after 5 failed authentications.
      const reply = await bare().request(method, concrete, {
        headers: { 'x-forwarded-for': `198.51.100.${i % 250}` },
      });
      // Without credentials an authenticated route says 401; an open one answers. Neither is
      // an unknown route (the router's 404) or an unsupported method (405).
      const answered = routes.get(key)!.authenticated
        ? reply.status === 401
        : reply.status < 500 &&
          reply.status !== 405 &&
          !(reply.status === 404 && reply.body?.detail === 'Not found');
      if (!answered) unanswered.push(`${key}: ${reply.status}`);
    }
    expect(unanswered).toEqual([]);
  });

  it('describes the transfer request body with its amount', async () => {
    const { doc } = await documentedKeys();
    const schema = doc.paths[TRANSFER].post.requestBody.content['application/json'].schema;
    expect(schema.properties.amount).toBeDefined();
    expect(schema.properties.amount.type).toBe('number');
    expect(schema.required).toEqual(
      expect.arrayContaining(['from_wallet_id', 'to_wallet_id', 'amount']),
    );
  });

  it('serves the rendered reference at /docs as HTML that loads only its own assets', async () => {
    const response = await fetch(`${engine.url}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    const html = await response.text();
    expect(html).toContain('/api/v1/openapi.json');
    const loaded = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(loaded).toContain('/docs/assets/swagger-ui-bundle.js');
    for (const url of loaded) expect(url.startsWith('/')).toBe(true);
  });

  it('serves the whitelisted Swagger UI files with their types and cache headers, nothing else', async () => {
    const bundle = await fetch(`${engine.url}/docs/assets/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(bundle.headers.get('cache-control')).toMatch(/max-age=\d+/);
    const etag = bundle.headers.get('etag');
    expect(etag).toMatch(/^"swagger-ui-dist-5\.35\.0-swagger-ui-bundle\.js"$/);
    expect((await bundle.text()).length).toBeGreaterThan(100_000);
    const again = await fetch(`${engine.url}/docs/assets/swagger-ui-bundle.js`, {
      headers: { 'if-none-match': etag! },
    });
    expect(again.status).toBe(304);
    const css = await fetch(`${engine.url}/docs/assets/swagger-ui.css`);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    const icon = await fetch(`${engine.url}/docs/assets/favicon-32x32.png`);
    expect(icon.headers.get('content-type')).toBe('image/png');
    for (const file of ['package.json', 'index.html', '..%2Fpackage.json', 'swagger-ui.js.map']) {
      expectError(await bare().get(`/docs/assets/${file}`), 404);
    }
  });
});

describe('identifiers in request bodies', () => {
  /** Ids of the engine's own objects; a provider's or a merchant's own ids are free text. */
  const FOREIGN = new Set(['payment_method_id', 'app_user_id', 'card_token', 'reference_id']);

  it('are typed `format: uuid` wherever a body names one of the engine’s objects', async () => {
    const reply = await bare().get('/api/v1/openapi.json');
    type Schema = { $ref?: string; properties?: Record<string, unknown> };
    const doc = reply.body as {
      paths: Record<string, Record<string, any>>;
      components: { schemas: Record<string, Schema> };
    };
    const resolve = (schema: Schema | undefined): Schema | undefined =>
      schema?.$ref ? doc.components.schemas[schema.$ref.split('/').pop() ?? ''] : schema;
    const ids: string[] = [];
    const untyped: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const body = resolve(operation.requestBody?.content?.['application/json']?.schema);
        for (const [name, property] of Object.entries(body?.properties ?? {})) {
          if (!name.endsWith('_id') || FOREIGN.has(name)) continue;
          const variants: any[] = (property as any).anyOf ?? [property];
          const typed = variants.some((v) => v.type === 'string' && v.format === 'uuid');
          (typed ? ids : untyped).push(`${method.toUpperCase()} ${path} ${name}`);
        }
      }
    }
    expect(ids.length).toBeGreaterThan(5);
    expect(untyped).toEqual([]);
  });
});
