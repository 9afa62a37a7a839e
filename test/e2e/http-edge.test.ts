import { createHash, randomUUID } from 'node:crypto';
import { connect, type AddressInfo } from 'node:net';
import Koa from 'koa';
import { sql } from 'slonik';
import { z } from 'zod';
import { createLogger } from '../../src/observability/logger';
import { MAX_BODY_BYTES } from '../../src/api/middleware/body';
import { errorsAndAccessLog } from '../../src/api/middleware/errors';
import { startApi } from '../../src/api/server';
import { updateApplication } from '../../src/db/applications';
import { createCredential, revokeCredential } from '../../src/db/credentials';
import { parseJsonKeepingLiterals } from '../../src/api/middleware/json-number';
import { PositiveAmount, PositiveMinorUnits } from '../../src/api/schemas';
import { balanceOf, fundWallet } from '../support/database';
import { awaitRoomInWindow, secondsLeftInWindow } from '../support/rate-limit';
import { createTestApp, type TestApp } from '../support/engine';
import {
  clientFor,
  createUserWithWallet,
  expectError,
  expectRateLimited,
  type ApiClient,
  type Reply,
} from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { app, api } = useTestApp(engine);
/** Every api key and secret key this file sends: none may reach a log line or a column. */
const sentCredentials: string[] = [];

function remember(created: TestApp): TestApp {
  for (const mode of ['test', 'live'] as const) {
    sentCredentials.push(created.credentials[mode].apiKey, created.credentials[mode].secretKey);
  }
  return created;
}

beforeAll(() => {
  remember(app);
});

const USERS = '/api/v1/users/';
const WALLETS = '/api/v1/wallets/';
const TRANSFER = '/api/v1/transactions/wallet/transfer';

/** A client that sends no credentials, only the given headers (on `get`). */
function bare(headers: Record<string, string> = {}): ApiClient {
  const client = clientFor(engine.url, null);
  return {
    ...client,
    get: (path: string, extra?: Record<string, string>) =>
      client.get(path, { ...headers, ...(extra ?? {}) }),
  };
}

/** One credential as a TestApp whose both modes use it, for `clientFor`. */
function asTestApp(id: string, credential: { api_key: string; secret_key: string }): TestApp {
  const pair = { apiKey: credential.api_key, secretKey: credential.secret_key };
  sentCredentials.push(pair.apiKey, pair.secretKey);
  return { id, credentials: { test: pair, live: pair } };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A JSON object that nests `depth` levels: `{"a":{"a":...{"a":"x \\" ]"}...}}`. */
const deepObject = (depth: number) =>
  '{"a":'.repeat(depth - 1) + '{"a":"x \\" ]"}' + '}'.repeat(depth - 1);

const count = (query: ReturnType<typeof sql.unsafe>) =>
  engine.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM (${query}) AS q`,
  );

describe('authentication', () => {
  it('answers 401 with a detail when no credential header is sent', async () => {
    const reply = await bare().get(USERS);
    expect(expectError(reply, 401)).toMatch(/api-key|credentials/i);
  });

  it('answers 401 when only the api-key header is sent', async () => {
    expectError(await bare({ 'api-key': app.credentials.test.apiKey }).get(USERS), 401);
  });

  it('answers 401 when only the secret-key header is sent', async () => {
    expectError(await bare({ 'secret-key': app.credentials.test.secretKey }).get(USERS), 401);
  });

  it('answers 401 for a known api key with a wrong secret', async () => {
    const reply = await bare({
      'api-key': app.credentials.test.apiKey,
      'secret-key': app.credentials.live.secretKey,
    }).get(USERS);
    expect(expectError(reply, 401)).toBe('Invalid application credentials');
  });

  it('answers 401 for an api key that does not exist', async () => {
    const reply = await bare({
      'api-key': `pk_test_${randomUUID()}`,
      'secret-key': app.credentials.test.secretKey,
    }).get(USERS);
    expect(expectError(reply, 401)).toBe('Invalid application credentials');
  });

  it('answers 401 when the credentials come under other header names', async () => {
    for (const [keyHeader, secretHeader] of [
      ['x-api-key', 'x-secret-key'],
      ['api_key', 'secret_key'],
      ['apikey', 'secretkey'],
    ] as const) {
      const reply = await bare({
        [keyHeader]: app.credentials.test.apiKey,
        [secretHeader]: app.credentials.test.secretKey,
      }).get(USERS);
      expectError(reply, 401);
    }
    const bearer = await bare({
      authorization: `Bearer ${app.credentials.test.secretKey}`,
    }).get(USERS);
    expectError(bearer, 401);
  });

  it('answers 401 for a revoked credential, which worked before the revocation', async () => {
    const credential = await createCredential(engine.pool, { applicationId: app.id, mode: 'test' });
    const client = clientFor(engine.url, asTestApp(app.id, credential));
    expect((await client.get(USERS)).status).toBe(200);
    expect(await revokeCredential(engine.pool, credential.api_key)).toMatchObject({
      status: 'revoked',
    });
    expect(expectError(await client.get(USERS), 401)).toMatch(/revoked/i);
  });

  it('answers 401 for an expired credential', async () => {
    const credential = await createCredential(engine.pool, {
      applicationId: app.id,
      mode: 'test',
      expiresAt: new Date(Date.now() - 60_000).toISOString(),
    });
    const client = clientFor(engine.url, asTestApp(app.id, credential));
    expect(expectError(await client.get(USERS), 401)).toMatch(/expired/i);
  });

  it('accepts a credential that expires in the future', async () => {
    const credential = await createCredential(engine.pool, {
      applicationId: app.id,
      mode: 'live',
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const client = clientFor(engine.url, asTestApp(app.id, credential), 'live');
    expect((await client.get(USERS)).status).toBe(200);
  });

  it('serves a valid credential and records its last_used time, but not on a failed attempt', async () => {
    const credential = await createCredential(engine.pool, { applicationId: app.id, mode: 'test' });
    const lastUsed = () =>
      engine.pool.one(sql.type(z.object({ last_used: z.string().nullable(), recent: z.boolean() }))`
        SELECT last_used, coalesce(last_used > now() - interval '1 minute', false) AS recent
        FROM credentials WHERE id = ${credential.id}`);
    expect(await lastUsed()).toEqual({ last_used: null, recent: false });

    const wrong = await bare({
      'api-key': credential.api_key,
      'secret-key': `${credential.secret_key}x`,
    }).get(USERS);
    expectError(wrong, 401);
    expect((await lastUsed()).last_used).toBeNull();

    const reply = await clientFor(engine.url, asTestApp(app.id, credential)).get(USERS);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ data: [], page: 1, per_page: 20 });
    const after = await lastUsed();
    expect(after.recent).toBe(true);
    expect(after.last_used).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  });
});

describe('secrets at rest', () => {
  it('stores no api key or secret key in any column of any table, only their SHA-256', async () => {
    const extra = await createCredential(engine.pool, {
      applicationId: app.id,
      mode: 'live',
      expiresAt: '2030-01-01T00:00:00Z',
    });
    sentCredentials.push(extra.api_key, extra.secret_key);
    const other = remember(await createTestApp(engine.pool, { currency: 'USD' }));
    expect((await clientFor(engine.url, other, 'live').get(USERS)).status).toBe(200);

    const tables = await engine.pool.anyFirst(sql.type(z.object({ table_name: z.string() }))`
      SELECT table_name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`);
    expect(tables).toEqual(expect.arrayContaining(['applications', 'credentials']));
    let everything = '';
    for (const table of tables) {
      everything += await engine.pool.oneFirst(sql.type(z.object({ rows: z.string() }))`
        SELECT coalesce(string_agg(row_to_json(t)::text, E'\n'), '') AS rows
        FROM ${sql.identifier([table])} t`);
    }
    const credentialRows = await engine.pool.oneFirst(sql.type(z.object({ rows: z.string() }))`
      SELECT string_agg(concat_ws(' ', VARIADIC ARRAY[
        id::text, application_id::text, mode, encode(api_key_hash, 'hex'), encode(api_key_hash, 'escape'),
        api_key_hint, encode(secret_hash, 'hex'), encode(secret_hash, 'escape'),
        revoked_at::text, expires_at::text, last_used::text, created_at::text]), E'\n') AS rows
      FROM credentials`);
    expect(credentialRows).toContain(app.id);
    everything += `\n${credentialRows}`;
    const haystack = everything.toLowerCase();

    const secrets = [
      ...sentCredentials,
      ...Object.values(other.credentials).flatMap((c) => [c.apiKey, c.secretKey]),
    ];
    for (const secret of secrets) {
      const random = secret.replace(/^(pk|sk)_(test|live)_/, '');
      const needles = [
        secret,
        random,
        Buffer.from(secret, 'utf8').toString('hex'),
        Buffer.from(secret, 'utf8').toString('base64'),
        Buffer.from(random, 'base64url').toString('hex'),
      ];
      for (const needle of needles) {
        expect(haystack.includes(needle.toLowerCase())).toBe(false);
      }
    }

    const hashes = await engine.pool.one(sql.type(
      z.object({ key: z.string(), secret: z.string() }),
    )`
      SELECT encode(api_key_hash, 'hex') AS key, encode(secret_hash, 'hex') AS secret
      FROM credentials WHERE id = ${extra.id}`);
    const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
    expect(hashes).toEqual({ key: sha(extra.api_key), secret: sha(extra.secret_key) });
  });
});

describe('rate limits', () => {
  jest.setTimeout(120_000);

  it('answers the 11th default-category request of a minute with 429, Retry-After and a detail', async () => {
    const limited = remember(await createTestApp(engine.pool, { rateLimits: null }));
    const client = clientFor(engine.url, limited);
    await awaitRoomInWindow(engine.pool);
    for (let i = 0; i < 10; i += 1) {
      expect((await client.get(USERS)).status).toBe(200);
    }
    const reply = await client.get(USERS);
    const retryAfter = expectRateLimited(reply);
    const left = await secondsLeftInWindow(engine.pool);
    // The window ends at the next full minute: Retry-After counts the seconds up to it.
    expect(retryAfter).toBeGreaterThanOrEqual(Math.floor(left));
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil(left) + 1);
    // Still limited on the next attempt, and on another default-category route.
    expectRateLimited(await client.get(USERS));
    expectRateLimited(await client.post('/api/v1/users/create/', { name: 'x' }));
  });

  it('counts per credential: other credentials of the application and other applications are unaffected', async () => {
    const limited = remember(await createTestApp(engine.pool, { rateLimits: null }));
    const sibling = await createCredential(engine.pool, {
      applicationId: limited.id,
      mode: 'test',
    });
    const other = remember(await createTestApp(engine.pool, { rateLimits: null }));
    const client = clientFor(engine.url, limited);
    await awaitRoomInWindow(engine.pool);
    const burst = await Promise.all(Array.from({ length: 10 }, () => client.get(USERS)));
    expect(burst.map((r) => r.status)).toEqual(Array(10).fill(200));
    expectRateLimited(await client.get(USERS));

    expect((await clientFor(engine.url, limited, 'live').get(USERS)).status).toBe(200);
    expect((await clientFor(engine.url, asTestApp(limited.id, sibling)).get(USERS)).status).toBe(
      200,
    );
    expect((await clientFor(engine.url, other).get(USERS)).status).toBe(200);
    expectRateLimited(await client.get(USERS));
  });

  it('counts categories separately: users and wallets share default, transfers has its own', async () => {
    const limited = remember(await createTestApp(engine.pool, { rateLimits: null }));
    const client = clientFor(engine.url, limited);
    await awaitRoomInWindow(engine.pool);
    for (let i = 0; i < 5; i += 1) {
      expect((await client.get(USERS)).status).toBe(200);
      expect((await client.get(WALLETS)).status).toBe(200);
    }
    expectRateLimited(await client.get(WALLETS));

    const invalidTransfer = { from_wallet_id: 'a', to_wallet_id: 'b', amount: 0 };
    for (let i = 0; i < 10; i += 1) {
      // Past authentication and the rate limit: the body is what fails.
      expectError(await client.post(TRANSFER, invalidTransfer), 422);
    }
    expectRateLimited(await client.post(TRANSFER, invalidTransfer));
    expectRateLimited(await client.get(USERS));
  });

  it("applies the application's own limit when one is set", async () => {
    const limited = remember(await createTestApp(engine.pool, { rateLimits: null }));
    await updateApplication(engine.pool, limited.id, { rateLimits: { default: 3 } });
    const client = clientFor(engine.url, limited);
    await awaitRoomInWindow(engine.pool);
    for (let i = 0; i < 3; i += 1) expect((await client.get(USERS)).status).toBe(200);
    expectRateLimited(await client.get(USERS));
    // Only the overridden category changes: transfers keeps its default of 10.
    const invalidTransfer = { from_wallet_id: 'a', to_wallet_id: 'b', amount: 0 };
    for (let i = 0; i < 10; i += 1) expectError(await client.post(TRANSFER, invalidTransfer), 422);
    expectRateLimited(await client.post(TRANSFER, invalidTransfer));
  });

  it('claims the Idempotency-Key of a request within the limit, in the count, and none past it', async () => {
    const limited = remember(await createTestApp(engine.pool, { rateLimits: null }));
    await updateApplication(engine.pool, limited.id, { rateLimits: { transfers: 2 } });
    const client = clientFor(engine.url, limited);
    const keys = [randomUUID(), randomUUID(), randomUUID()];
    // Wallets that do not exist: the handler answers 404, which the key keeps.
    const transfer = { from_wallet_id: randomUUID(), to_wallet_id: randomUUID(), amount: 5 };
    const send = (key: string) => client.post(TRANSFER, transfer, { 'Idempotency-Key': key });
    const stored = () =>
      engine.pool.any(sql.type(z.object({ key: z.string(), response_status: z.number() }))`
        SELECT key, response_status FROM idempotency_keys
        WHERE application_id = ${limited.id} ORDER BY created_at, key`);
    await awaitRoomInWindow(engine.pool);
    expectError(await send(keys[0]!), 404);
    const replay = await send(keys[0]!);
    expectError(replay, 404);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expectRateLimited(await send(keys[1]!));
    expectRateLimited(await send(keys[0]!));
    expect(await stored()).toEqual([{ key: keys[0], response_status: 404 }]);
    // A request the route refuses before its handler (422) counts and claims nothing.
    const other = remember(await createTestApp(engine.pool, { rateLimits: null }));
    const fresh = clientFor(engine.url, other);
    expectError(
      await fresh.post(TRANSFER, { ...transfer, amount: 0 }, { 'Idempotency-Key': keys[2]! }),
      422,
    );
    const rows = await engine.pool.oneFirst(
      sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM idempotency_keys WHERE application_id = ${other.id}`,
    );
    expect(rows).toBe(0);
  });

  it('shares one limit between API processes on the same database', async () => {
    const second = await startApi(
      engine.config,
      createLogger('silent'),
      engine.config.database.url!,
    );
    try {
      expect(second.url).not.toBe(engine.url);
      const limited = remember(await createTestApp(engine.pool, { rateLimits: null }));
      const one = clientFor(engine.url, limited);
      const two = clientFor(second.url, limited);
      await awaitRoomInWindow(engine.pool);
      for (let i = 0; i < 5; i += 1) {
        expect((await one.get(USERS)).status).toBe(200);
        expect((await two.get(USERS)).status).toBe(200);
      }
      expectRateLimited(await one.get(USERS));
      expectRateLimited(await two.get(USERS));

      // A concurrent burst spread over both processes: exactly the limit gets through.
      const burstApp = remember(await createTestApp(engine.pool, { rateLimits: null }));
      const clients = [clientFor(engine.url, burstApp), clientFor(second.url, burstApp)];
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) => clients[i % 2]!.get(USERS)),
      );
      expect(replies.filter((r) => r.status === 200)).toHaveLength(10);
      const rejected = replies.filter((r) => r.status !== 200);
      expect(rejected).toHaveLength(10);
      for (const reply of rejected) expectRateLimited(reply);
    } finally {
      await second.close();
    }
  });
});

describe('errors', () => {
  it('answers a body that is not JSON with 400 and a detail', async () => {
    const reply = await api.request('POST', '/api/v1/users/create/', {
      raw: '{"app_user_id": "1", name: oops',
    });
    expectError(reply, 400);
  });

  it.each([
    '/api/v1/webhooks/providers/mobile-money',
    '/api/v1/webhooks/providers/card',
    '/api/v1/users/create/',
  ])(
    'answers a deeply nested body on %s with 400 and a detail, recording nothing',
    async (path) => {
      const notifications = () => count(sql.unsafe`SELECT 1 FROM provider_notifications`);
      const before = await notifications();
      for (const depth of [65, 1_500, 2_500, 30_000]) {
        for (const raw of ['['.repeat(depth) + ']'.repeat(depth), deepObject(depth)]) {
          const reply = await clientFor(engine.url, null).request('POST', path, { raw });
          expect({ depth, status: reply.status, body: reply.body }).toEqual({
            depth,
            status: 400,
            body: { detail: 'Request body nests arrays and objects deeper than 64 levels' },
          });
        }
      }
      // As deep as a body may nest is read as usual: refused here for its signature only.
      const reply = await clientFor(engine.url, null).request('POST', path, {
        raw: deepObject(64),
      });
      expect(reply.status).toBe(path.startsWith('/api/v1/users/') ? 401 : 400);
      expect(reply.body.detail).not.toMatch(/nests/);
      expect(await notifications()).toBe(before);
    },
  );

  it('answers a body over 1 MiB with 413, whether its length is declared or streamed', async () => {
    const big = JSON.stringify({
      app_user_id: 'big',
      name: 'x'.repeat(1024 * 1024),
      phone_number: '+23276000000',
    });
    const declared = await api.request('POST', '/api/v1/users/create/', { raw: big });
    expectError(declared, 413);

    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 1024 * 1024 + chunk.length) controller.close();
        else {
          controller.enqueue(chunk);
          sent += chunk.length;
        }
      },
    });
    const response = await fetch(`${engine.url}/api/v1/users/create/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'api-key': app.credentials.test.apiKey,
        'secret-key': app.credentials.test.secretKey,
      },
      body: stream,
      duplex: 'half',
    });
    const text = await response.text();
    expectError(
      { status: response.status, body: JSON.parse(text), headers: response.headers },
      413,
    );

    // A body of exactly 1 MiB is read, parsed and served.
    const base = {
      app_user_id: `full-${randomUUID()}`,
      name: 'Full',
      phone_number: '+23276000002',
    };
    const empty = JSON.stringify({ ...base, pad: '' });
    const exact = JSON.stringify({ ...base, pad: 'x'.repeat(MAX_BODY_BYTES - empty.length) });
    expect(Buffer.byteLength(exact)).toBe(MAX_BODY_BYTES);
    const full = await api.request('POST', '/api/v1/users/create/', { raw: exact });
    expect(full.status).toBe(200);
    expect(full.body).toMatchObject({ app_user_id: base.app_user_id });
  });

  it('answers an unexpected failure with 500 and exactly {"detail":"Internal server error"}', async () => {
    await engine.pool.query(sql.unsafe`ALTER TABLE users RENAME TO users_gone`);
    let reply: Reply;
    let raw: string;
    try {
      const response = await fetch(`${engine.url}${USERS}`, {
        headers: {
          'api-key': app.credentials.test.apiKey,
          'secret-key': app.credentials.test.secretKey,
        },
      });
      raw = await response.text();
      reply = { status: response.status, body: JSON.parse(raw), headers: response.headers };
    } finally {
      await engine.pool.query(sql.unsafe`ALTER TABLE users_gone RENAME TO users`);
    }
    expect(reply.status).toBe(500);
    expect(raw).toBe('{"detail":"Internal server error"}');
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    expect(raw).not.toMatch(/users|relation|select|sql|stack|\bat\b/i);
    expect((await api.get(USERS)).status).toBe(200);
  });

  it('answers an unknown route with 404 and a wrong method with 405, both with a detail', async () => {
    expectError(await api.get(`/api/v1/no-such-thing/${randomUUID()}`), 404);
    expectError(await bare().get('/nope'), 404);
    expectError(await api.request('PATCH', USERS), 405);
  });

  it('gives every error status exactly one key, detail', async () => {
    const replies: [number, Reply][] = [
      [400, await api.request('POST', '/api/v1/users/create/', { raw: 'nope' })],
      [401, await bare().get(USERS)],
      [404, await api.get(`/api/v1/users/${randomUUID()}/`)],
      [404, await api.get('/api/v1/users/not-a-uuid/')],
      [422, await api.post('/api/v1/users/create/', { name: 'no app_user_id' })],
      [422, await api.get(`${USERS}?per_page=101`)],
      [422, await api.post(TRANSFER, { from_wallet_id: 'a', to_wallet_id: 'b', amount: -1 })],
    ];
    for (const [status, reply] of replies) expectError(reply, status);
  });
});

describe('health', () => {
  it('answers /healthz and /readyz with 200 without credentials', async () => {
    const health = await bare().get('/healthz');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok' });
    const ready = await bare().get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready' });
  });
});

describe('logs', () => {
  it('writes JSON lines with one access-log line per request and credentials redacted', async () => {
    const logged = remember(await createTestApp(engine.pool));
    const before = engine.logs.length;
    const client = clientFor(engine.url, logged);
    const marker = randomUUID();
    const wrongSecret = `sk_test_wrong_${randomUUID()}`;
    sentCredentials.push(wrongSecret);
    const requests: { method: string; url: string; status: number; headers: string[] }[] = [];
    const track = async (
      method: string,
      url: string,
      reply: Promise<Reply>,
      headers = ['api-key', 'secret-key'],
    ) => {
      requests.push({ method, url, status: (await reply).status, headers });
    };
    await track(
      'GET',
      `${USERS}?per_page=7&m=${marker}`,
      client.get(`${USERS}?per_page=7&m=${marker}`),
    );
    await track(
      'POST',
      `/api/v1/users/create/?m=${marker}`,
      client.post(`/api/v1/users/create/?m=${marker}`, {
        app_user_id: marker,
        name: 'Logged',
        phone_number: '+23276000001',
        secret_key: logged.credentials.test.secretKey,
      }),
    );
    await track('GET', `/api/v1/missing/${marker}`, client.get(`/api/v1/missing/${marker}`));
    // Search filters hold personal data: their values are replaced, the other parameters kept.
    const personal = `?q=Aminata%20${marker}&email=a.${marker}%40x.com&phone_number=%2B232${marker.slice(0, 8)}&per_page=3`;
    await track(
      'GET',
      `${USERS}?q=[REDACTED]&email=[REDACTED]&phone_number=[REDACTED]&per_page=3`,
      client.get(`${USERS}${personal}`),
    );
    await track(
      'GET',
      `${WALLETS}?m=${marker}`,
      bare({ 'api-key': logged.credentials.live.apiKey, 'secret-key': wrongSecret }).get(
        `${WALLETS}?m=${marker}`,
      ),
    );
    // A client that misnames the headers still sends its real credentials: they stay out too.
    await track(
      'GET',
      `${USERS}?m=${marker}`,
      bare({
        'x-api-key': logged.credentials.live.apiKey,
        'x-secret-key': logged.credentials.live.secretKey,
      }).get(`${USERS}?m=${marker}`),
      ['x-api-key', 'x-secret-key'],
    );
    expect(requests.map((r) => r.status)).toEqual([200, 200, 404, 200, 401, 401]);

    const lines = engine.logs.map((line) => JSON.parse(line) as Record<string, any>);
    expect(lines.length).toBe(engine.logs.length);
    const mine = lines.slice(before);
    for (const { method, url, status, headers } of requests) {
      const access = mine.filter(
        (l) => l.req?.method === method && l.req?.url === url && l.status === status,
      );
      expect({ url, access: access.length }).toEqual({ url, access: 1 });
      expect(access[0]).toMatchObject({ level: expect.any(Number), time: expect.any(String) });
      for (const header of headers) expect(access[0]!.req.headers[header]).toBe('[REDACTED]');
    }
    for (const line of engine.logs) {
      for (const secret of sentCredentials) expect(line.includes(secret)).toBe(false);
    }
    for (const line of engine.logs.slice(before)) {
      expect(line.includes(`Aminata%20${marker}`) || line.includes(`a.${marker}`)).toBe(false);
      expect(line.includes(`%2B232${marker.slice(0, 8)}`)).toBe(false);
    }
    expect(engine.logs.some((line) => line.includes('[REDACTED]'))).toBe(true);
  });
});

/** One HTTP/1.1 exchange over a raw socket, for what fetch refuses to send. */
async function rawExchange(request: string | Buffer): Promise<{
  status: number;
  headers: Record<string, string>;
  body: string;
}> {
  const { port } = new URL(engine.url);
  const received = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer in 10 s')));
  });
  const text = received.toString('utf8');
  const split = text.indexOf('\r\n\r\n');
  expect(split).toBeGreaterThan(0);
  const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine ?? '')?.[1]);
  return { status, headers, body: text.slice(split + 4) };
}

/** A complete JSON error written on a raw socket: status, content type, length and detail. */
function expectRawError(
  reply: Awaited<ReturnType<typeof rawExchange>>,
  status: number,
  detail: string | RegExp,
): void {
  expect(reply.status).toBe(status);
  expect(reply.headers['content-type']).toMatch(/^application\/json/);
  expect(Number(reply.headers['content-length'])).toBe(Buffer.byteLength(reply.body));
  const body = JSON.parse(reply.body) as { detail: string };
  expect(Object.keys(body)).toEqual(['detail']);
  if (typeof detail === 'string') expect(body.detail).toBe(detail);
  else expect(body.detail).toMatch(detail);
}

describe('defects found by fuzzing', () => {
  const countRows = (table: 'users' | 'transactions' | 'idempotency_keys', appId: string) =>
    engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM ${sql.identifier([table])} WHERE application_id = ${appId}`);

  /** Workflows of the application; visibility lags, so look for a while before saying none. */
  async function workflowsOf(appId: string): Promise<string[]> {
    await sleep(1_500);
    const found: string[] = [];
    for await (const wf of engine.temporal.workflow.list({ query: `ApplicationId = "${appId}"` }))
      found.push(wf.workflowId);
    return found;
  }

  /** A fresh application with two wallets, the first funded with 100.00. */
  async function freshWallets() {
    const fresh = remember(await createTestApp(engine.pool));
    const client = clientFor(engine.url, fresh);
    const a = await createUserWithWallet(client);
    const b = await createUserWithWallet(client);
    await fundWallet(engine.pool, a.walletId, 10_000n);
    return { fresh, client, from: a.walletId, to: b.walletId };
  }

  it('refuses a NUL character in any string of a body with 422 naming the field, writing nothing', async () => {
    const fresh = remember(await createTestApp(engine.pool));
    const client = clientFor(engine.url, fresh);
    const user = { app_user_id: 'nul-1', name: 'Nul', phone_number: '+23276000003' };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...user, name: 'a\u0000b' }, 'name'],
      [{ ...user, app_user_id: '\u0000' }, 'app_user_id'],
      [{ ...user, phone_number: '+232\u000076' }, 'phone_number'],
      [{ ...user, username: 'x\u0000' }, 'username'],
    ];
    for (const [body, field] of cases) {
      const reply = await client.post('/api/v1/users/create/', body);
      expect({ field, status: reply.status, body: reply.body }).toEqual({
        field,
        status: 422,
        body: { detail: `${field}: must not contain the NUL character` },
      });
    }
    // A field whose own format a NUL breaks is refused by that format first.
    const email = await client.post('/api/v1/users/create/', { ...user, email: 'a\u0000@x.com' });
    expect({ status: email.status, body: email.body }).toEqual({
      status: 422,
      body: { detail: 'email: Invalid email address' },
    });
    // A route that reads the raw body (a provider's webhook) has all of it checked; a body that
    // is one bare string is named "body".
    const bare = await client.request('POST', '/api/v1/webhooks/providers/mobile-money', {
      raw: '"\\u0000"',
    });
    expect({ status: bare.status, body: bare.body }).toEqual({
      status: 422,
      body: { detail: 'body: must not contain the NUL character' },
    });
    expect(await countRows('users', fresh.id)).toBe(0);
    // The same request without the NUL is served.
    expect((await client.post('/api/v1/users/create/', user)).status).toBe(200);
    expect(await countRows('users', fresh.id)).toBe(1);
    // A property the schema does not know is dropped before anything is stored, NUL or not,
    // as any unknown property is (schemathesis found it refused only when its name had one).
    for (const [i, extra] of [
      { 'odd\u0000key': 1 },
      { extra: { tags: ['fine', 'bad\u0000'] } },
    ].entries()) {
      const reply = await client.post('/api/v1/users/create/', {
        ...user,
        app_user_id: `nul-extra-${i}`,
        ...extra,
      });
      expect(reply.status).toBe(200);
      expect(JSON.stringify(reply.body)).not.toContain('\\u0000');
    }
    expect(await countRows('users', fresh.id)).toBe(3);
  });

  it('lets a concrete path win over a template that also matches it (Allow, 405)', async () => {
    for (const [path, allow] of [
      ['/api/v1/users/create/', ['POST']],
      ['/api/v1/escrow/hold', ['POST']],
    ] as const) {
      const options = await api.request('OPTIONS', path);
      expect({ path, status: options.status }).toEqual({ path, status: 200 });
      expect(options.headers.get('allow')?.split(/,\s*/).sort()).toEqual([...allow]);
      const get = await api.get(path);
      expect({ path, status: get.status, body: get.body }).toEqual({
        path,
        status: 405,
        body: { detail: 'Method not allowed' },
      });
      expect(get.headers.get('allow')).toBe(allow.join(', '));
    }
    // The template still serves every other value.
    const user = await createUserWithWallet(api);
    expect((await api.get(`/api/v1/users/${user.userId}/`)).status).toBe(200);
  });

  it('refuses a NUL in a transfer or escrow description at once: no workflow, no transaction', async () => {
    const { fresh, client, from, to } = await freshWallets();
    const started = Date.now();
    const transfer = await client.post(
      TRANSFER,
      { from_wallet_id: from, to_wallet_id: to, amount: 1, description: 'rent\u0000' },
      { 'Idempotency-Key': `nul-${randomUUID()}` },
    );
    expect({ status: transfer.status, body: transfer.body }).toEqual({
      status: 422,
      body: { detail: 'description: must not contain the NUL character' },
    });
    const hold = await client.post('/api/v1/escrow/hold', {
      wallet_id: from,
      amount: 1,
      description: '\u0000',
    });
    expect({ status: hold.status, body: hold.body }).toEqual({
      status: 422,
      body: { detail: 'description: must not contain the NUL character' },
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await countRows('transactions', fresh.id)).toBe(0);
    expect(await countRows('idempotency_keys', fresh.id)).toBe(0);
    expect(await balanceOf(engine.pool, from)).toBe(10_000n);
    expect(await workflowsOf(fresh.id)).toEqual([]);
  });

  it('refuses an unpaired UTF-16 surrogate, which a jsonb column cannot hold, like a NUL', async () => {
    const { fresh, client, from, to } = await freshWallets();
    const reply = await client.request('POST', TRANSFER, {
      raw: `{"from_wallet_id":"${from}","to_wallet_id":"${to}","amount":1,"description":"a\\ud800b"}`,
    });
    expect({ status: reply.status, body: reply.body }).toEqual({
      status: 422,
      body: { detail: 'description: must not contain an unpaired UTF-16 surrogate' },
    });
    // A well-formed pair (an emoji) is fine.
    const emoji = await client.post(TRANSFER, {
      from_wallet_id: from,
      to_wallet_id: to,
      amount: 1,
      description: 'rent \u{1F3E0}',
    });
    expect(emoji.status).toBe(200);
    expect(emoji.body.description).toBe('rent \u{1F3E0}');
    expect(await countRows('transactions', fresh.id)).toBe(1);
  });

  it('refuses a NUL in a path or query parameter with 422', async () => {
    const sync = await api.post('/api/v1/transactions/sync/a%00b');
    expect({ status: sync.status, body: sync.body }).toEqual({
      status: 422,
      body: { detail: 'reference_id: must not contain the NUL character' },
    });
    const query = await api.get(`${USERS}?is_active=%00`);
    expect({ status: query.status, body: query.body }).toEqual({
      status: 422,
      body: { detail: 'is_active: must not contain the NUL character' },
    });
    const unknown = await api.get(`${USERS}?note=a%00`);
    expect({ status: unknown.status, body: unknown.body }).toEqual({
      status: 422,
      body: { detail: 'note: must not contain the NUL character' },
    });
    const asset = await bare().get('/docs/assets/a%00b');
    expect({ status: asset.status, body: asset.body }).toEqual({
      status: 422,
      body: { detail: 'file: must not contain the NUL character' },
    });
    // A UUID path id with a NUL names nothing: 404, as any other non-UUID id.
    expectError(await api.get(`/api/v1/users/${randomUUID()}%00/`), 404);
  });

  it('refuses an empty Idempotency-Key with 422 and moves nothing, however often it is sent', async () => {
    const { fresh, client, from, to } = await freshWallets();
    const transfer = { from_wallet_id: from, to_wallet_id: to, amount: 10 };
    for (const key of ['', '', '   ']) {
      const reply = await client.post(TRANSFER, transfer, { 'Idempotency-Key': key });
      expect({ key, status: reply.status, body: reply.body }).toEqual({
        key,
        status: 422,
        body: { detail: 'Idempotency-Key must be 1 to 255 printable characters' },
      });
    }
    const tooLong = await client.post(TRANSFER, transfer, { 'Idempotency-Key': 'k'.repeat(256) });
    expectError(tooLong, 422);
    expect(await balanceOf(engine.pool, from)).toBe(10_000n);
    expect(await countRows('transactions', fresh.id)).toBe(0);
    expect(await countRows('idempotency_keys', fresh.id)).toBe(0);
    expect(await workflowsOf(fresh.id)).toEqual([]);
  });

  it('judges an amount as written: more than 2 decimals is 422 even where the float rounds to 2', async () => {
    const { fresh, client, from, to } = await freshWallets();
    const raw = (amount: string) =>
      client.request('POST', TRANSFER, {
        raw: `{"from_wallet_id":"${from}","to_wallet_id":"${to}","amount":${amount}}`,
      });
    for (const amount of ['10.10000000000000001', '1.0001e1', '0.001', '10.105']) {
      const reply = await raw(amount);
      expect({ amount, status: reply.status, body: reply.body }).toEqual({
        amount,
        status: 422,
        body: {
          detail: 'amount: must be a number with at most 2 decimals, no larger than 100000000000',
        },
      });
    }
    expect(await balanceOf(engine.pool, from)).toBe(10_000n);
    expect(await countRows('transactions', fresh.id)).toBe(0);
    expect(await workflowsOf(fresh.id)).toEqual([]);

    // Exponents and trailing zeros are judged by their exact value.
    const estimate = (amount: string) =>
      client.request('POST', '/api/v1/fees/estimate/deposit', {
        raw: `{"amount":${amount},"payment_method":"wallet"}`,
      });
    for (const [amount, expected] of [
      ['12.50', '12.50'],
      ['12.500', '12.50'],
      ['1.005e1', '10.05'],
      ['1e2', '100.00'],
      ['0.07', '0.07'],
    ] as const) {
      const reply = await estimate(amount);
      expect({
        amount,
        status: reply.status,
        value: reply.body.fee_breakdown?.transaction_amount,
      }).toEqual({ amount, status: 200, value: expected });
    }
    const moved = await raw('12.50');
    expect(moved.status).toBe(200);
    expect(await balanceOf(engine.pool, from)).toBe(8_750n);
  });

  it('refuses a plain number field whose literal no double holds exactly, saying why', async () => {
    const fresh = remember(await createTestApp(engine.pool));
    const client = clientFor(engine.url, fresh);
    const create = (appUserId: string) =>
      client.request('POST', '/api/v1/users/create/', {
        raw: `{"app_user_id":${appUserId},"name":"N","phone_number":"+23276000004"}`,
      });
    const inexact = await create('12345678901234567890');
    expect({ status: inexact.status, body: inexact.body }).toEqual({
      status: 422,
      body: {
        detail:
          'app_user_id: 12345678901234567890 cannot be read exactly as a number: send at most 15 significant digits',
      },
    });
    const huge = await create('1e400');
    expect({ status: huge.status, body: huge.body }).toEqual({
      status: 422,
      body: { detail: 'app_user_id: 1e400 is out of range' },
    });
    expect(await countRows('users', fresh.id)).toBe(0);
    // An exact literal in another form is its value.
    const exact = await create('1.5e2');
    expect(exact.status).toBe(200);
    expect(exact.body.app_user_id).toBe('150');
  });

  it('reads integer counts of minor units and amounts from their literals (PositiveMinorUnits, PositiveAmount)', () => {
    const read = (literal: string) =>
      (parseJsonKeepingLiterals(`{"v":${literal}}`) as { v: unknown }).v;
    const units = (literal: string) => {
      const result = PositiveMinorUnits.safeParse(read(literal));
      return result.success ? result.data : result.error.issues.map((i) => i.message).join('; ');
    };
    expect(units('1000')).toBe(1000n);
    expect(units('100.0')).toBe(100n);
    expect(units('1e2')).toBe(100n);
    expect(units('10000000000000')).toBe(10_000_000_000_000n);
    expect(units('100.5')).toBe('must be an integer count of minor units');
    expect(units('100.00000000000000001')).toBe('must be an integer count of minor units');
    expect(units('0')).toBe('must be greater than 0');
    expect(units('-5')).toBe('must be greater than 0');
    expect(units('10000000000001')).toBe('must be at most 10000000000000');
    expect(units('"1000"')).toBe('must be an integer count of minor units');
    const amount = (literal: string) => {
      const result = PositiveAmount.safeParse(read(literal));
      return result.success ? result.data : result.error.issues.map((i) => i.message).join('; ');
    };
    expect(amount('12.5')).toBe(1250n);
    expect(amount('100000000000')).toBe(10_000_000_000_000n);
    expect(amount('100000000000.01')).toMatch(/at most 2 decimals, no larger than/);
    expect(amount('-0.5')).toBe('must be greater than 0');
    expect(amount('"12.5"')).toBe('must be a number');
  });

  it('answers an unknown method such as TRACE with 405, a detail and Allow', async () => {
    const trace = await rawExchange(
      `TRACE ${USERS} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
    );
    expectRawError(trace, 405, 'Method not allowed');
    expect(trace.headers.allow?.split(/,\s*/)).toEqual(expect.arrayContaining(['GET', 'HEAD']));
    const missing = await rawExchange(
      'TRACE /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
    );
    expectRawError(missing, 404, 'Not found');
    // CONNECT never reaches an app by default: node closes the connection without an answer.
    const tunnel = await rawExchange(`CONNECT ${USERS} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    expectRawError(tunnel, 405, 'Method not allowed');
    expect(tunnel.headers.connection).toBe('close');
    // A tunnel to a host and port (authority form) names no resource of this API.
    const authority = await rawExchange(
      'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
    );
    expectRawError(authority, 404, 'Not found');
    // A request to upgrade the connection is answered as a plain request.
    const upgrade = await rawExchange(
      'GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\n\r\n',
    );
    expectRawError(upgrade, 404, 'Not found');
    // The server still answers afterwards.
    expect((await api.get(USERS)).status).toBe(200);
  });

  it('answers what the HTTP parser refuses (a URL over 16 KiB, bad header bytes) with a JSON detail', async () => {
    const long = await rawExchange(
      `GET /api/v1/users/?q=${'x'.repeat(17 * 1024)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
    );
    expectRawError(long, 431, /16 KiB/);
    expect(long.headers.connection).toBe('close');
    const badHeader = await rawExchange(
      Buffer.concat([
        Buffer.from('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Bad'),
        Buffer.from([0x01]),
        Buffer.from(': y\r\n\r\n'),
      ]),
    );
    expectRawError(badHeader, 400, 'Malformed HTTP request');
    const garbage = await rawExchange('HELLO THERE\r\n\r\n');
    expectRawError(garbage, 400, 'Malformed HTTP request');

    // The second request of a kept-alive connection, after a complete first answer.
    const { port } = new URL(engine.url);
    const both = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'),
      );
      socket.on('data', (chunk: Buffer) => {
        const first = !text.includes('{"status":"ok"}');
        text += chunk.toString('utf8');
        if (first && text.includes('{"status":"ok"}')) {
          socket.write(
            `GET /healthz?q=${'x'.repeat(17 * 1024)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
          );
        }
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(text));
    });
    expect(both).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    const second = both.slice(both.indexOf('HTTP/1.1 431'));
    expect(second).toMatch(/^HTTP\/1\.1 431 [^\r]+\r\n/);
    expect(second.slice(second.indexOf('\r\n\r\n') + 4)).toBe(
      JSON.stringify({ detail: 'Request line and headers are too large: at most 16 KiB together' }),
    );
    expect((await bare().get('/healthz')).status).toBe(200);
  });

  it('keeps the status of a 4xx error that Koa or a library raises, with a detail', async () => {
    const koa = new Koa();
    koa.use(errorsAndAccessLog(createLogger('silent')));
    koa.use((ctx) => {
      const status = Number(ctx.query.status);
      if (ctx.query.hidden) throw Object.assign(new Error('internal words'), { status });
      ctx.throw(status, `Thrown with ${status}`);
    });
    const server = koa.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    const local = clientFor(`http://127.0.0.1:${port}`, null);
    try {
      for (const status of [400, 406, 415, 431]) {
        const reply = await local.get(`/?status=${status}`);
        expect({ status: reply.status, body: reply.body }).toEqual({
          status,
          body: { detail: `Thrown with ${status}` },
        });
      }
      // A message not marked safe to show is replaced by the status's name.
      const hidden = await local.get('/?status=415&hidden=1');
      expect({ status: hidden.status, body: hidden.body }).toEqual({
        status: 415,
        body: { detail: 'Unsupported Media Type' },
      });
      const server500 = await local.get('/?status=502');
      expect({ status: server500.status, body: server500.body }).toEqual({
        status: 500,
        body: { detail: 'Internal server error' },
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
