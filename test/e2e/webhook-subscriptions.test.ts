// ajv 8 validates real answers against the document's schemas (draft 2020-12).
import Ajv2020 from 'ajv/dist/2020';
import { sql } from 'slonik';
import { z } from 'zod';
import { open, webhookSecretKey } from '../../src/crypto/secret-box';
import { createTestApp } from '../support/engine';
import { clientFor, type ApiClient, type Reply } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

const PATH = '/api/v1/webhooks/subscriptions';
const REFUSED = 'Webhook URL must not point to a private or internal address';
/** Loopback targets only: the allowlist below lets 127.0.0.1 through, nothing else. */
const HOOK = 'http://127.0.0.1:9/hooks/wallet';
const INVALID_URL = 'Webhook URL must be a valid http or https URL without credentials';

const engine = useTestEngine({ env: { WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32' } });
const { app, api } = useTestApp(engine);

const storedRow = z.object({ secret_sealed: z.string(), url: z.string() });

async function stored(id: string) {
  return engine.pool.maybeOne(
    sql.type(storedRow)`SELECT secret_sealed, url FROM webhook_subscriptions WHERE id = ${id}`,
  );
}

async function count(): Promise<number> {
  return engine.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM webhook_subscriptions`,
  );
}

function patch(client: ApiClient, id: string, body: unknown) {
  return client.request('PATCH', `${PATH}/${id}`, { body });
}

async function create(client: ApiClient = api, body: Record<string, unknown> = {}) {
  const res = await client.post(PATH, { url: HOOK, events: ['escrow.held'], ...body });
  expect(res.status).toBe(201);
  return res.body as {
    id: string;
    url: string;
    events: string[];
    is_active: boolean;
    secret: string;
    created_at: string;
    updated_at: string;
  };
}

describe('POST /api/v1/webhooks/subscriptions', () => {
  it('answers 201 with the secret once, and stores it sealed, never in clear', async () => {
    const res = await api.post(PATH, {
      url: HOOK,
      events: ['escrow.held', 'deposit.completed', 'escrow.held'],
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      url: HOOK,
      events: ['escrow.held', 'deposit.completed'],
      is_active: true,
      disabled_reason: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+={0,2}$/),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const secret: string = res.body.secret;
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

    const row = await stored(res.body.id);
    expect(row).not.toBeNull();
    expect(row!.secret_sealed).not.toContain(secret.slice('whsec_'.length));
    expect(open(webhookSecretKey(engine.config), row!.secret_sealed, res.body.id)).toBe(secret);
    expect(row!.secret_sealed).toMatch(/^v2\./);

    const got = await api.get(`${PATH}/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).not.toHaveProperty('secret');
    expect(JSON.stringify(got.body)).not.toContain(secret.slice('whsec_'.length));
  });

  it('recreating a subscription for the same URL gives a new secret', async () => {
    const first = await create();
    const second = await create();
    expect(second.id).not.toBe(first.id);
    expect(second.secret).not.toBe(first.secret);
  });

  it('refuses an unknown event kind, no events, or a URL that is not http(s), with 422', async () => {
    const before = await count();
    for (const body of [
      { url: HOOK, events: ['escrow.held', 'payment.teleported'] },
      { url: HOOK, events: [] },
      { url: HOOK },
      { url: 'ftp://127.0.0.1/hook', events: ['escrow.held'] },
      { url: 'not a url', events: ['escrow.held'] },
      { events: ['escrow.held'] },
    ]) {
      const res = await api.post(PATH, body);
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      expect(res.body).toEqual({ detail: expect.any(String) });
    }
    expect(await count()).toBe(before);
  });

  it('refuses a URL it cannot use with 400: not parseable, credentials, a host that does not resolve', async () => {
    const before = await count();
    for (const [url, detail] of [
      ['http://user:pass@127.0.0.1/hook', INVALID_URL],
      ['http://', INVALID_URL],
      ['https://exa mple.com/', INVALID_URL],
      // `.invalid` (RFC 2606) never resolves: a DNS query at most, never a request.
      ['https://merchant.invalid/hook', 'Webhook URL host could not be resolved'],
    ]) {
      const res = await api.post(PATH, { url, events: ['escrow.held'] });
      // A guard that counts a name that does not resolve as refused is right too.
      const details = detail === INVALID_URL ? [detail] : [detail, REFUSED];
      expect({ url, status: res.status }).toEqual({ url, status: 400 });
      expect(details).toContain((res.body as { detail: string }).detail);
    }
    expect(await count()).toBe(before);
  });

  it('refuses a private or internal address outside the allowlist with 400, writing nothing', async () => {
    const before = await count();
    for (const url of ['http://127.0.0.2/hook', 'http://[::1]:8080/hook', 'http://0x7f000002/']) {
      const res = await api.post(PATH, { url, events: ['escrow.held'] });
      expect({ url, status: res.status, body: res.body }).toEqual({
        url,
        status: 400,
        body: { detail: REFUSED },
      });
    }
    expect(await count()).toBe(before);
  });

  it('Live Mode takes https only: http is refused with 400', async () => {
    const live = clientFor(engine.url, app, 'live');
    const before = await count();
    const res = await live.post(PATH, { url: HOOK, events: ['escrow.held'] });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'Webhook URL must use https in Live Mode' });
    expect(await count()).toBe(before);

    const https = await live.post(PATH, {
      url: 'https://127.0.0.1:9/hook',
      events: ['escrow.held'],
    });
    expect(https.status).toBe(201);
    // Test Mode sees none of Live Mode's subscriptions, and the reverse.
    const testList = await api.get<{ data: { id: string }[] }>(`${PATH}?per_page=100`);
    expect(testList.body.data.map((s) => s.id)).not.toContain(https.body.id);
    const liveList = await live.get<{ data: { id: string }[] }>(`${PATH}?per_page=100`);
    expect(liveList.body.data.map((s) => s.id)).toEqual([https.body.id]);
  });
});

describe('list, get, edit, delete', () => {
  it('lists the application and mode’s subscriptions in the page envelope, without secrets', async () => {
    const other = await createTestApp(engine.pool);
    await create(clientFor(engine.url, other));
    const mine = await create(api, { events: ['transfer.completed'], is_active: false });
    const res = await api.get(`${PATH}?per_page=100`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: expect.any(Array),
      page: 1,
      per_page: 100,
      total: res.body.data.length,
      total_pages: 1,
    });
    const { secret, ...shown } = mine;
    expect(res.body.data).toContainEqual(shown);
    for (const item of res.body.data) expect(item).not.toHaveProperty('secret');
    expect(JSON.stringify(res.body)).not.toContain(secret.slice('whsec_'.length));
    const own = await engine.pool.oneFirst(
      sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM webhook_subscriptions
        WHERE application_id = ${app.id} AND mode = 'test'`,
    );
    expect(res.body.total).toBe(own);

    const paged = await api.get(`${PATH}?per_page=1&page=2`);
    expect(paged.status).toBe(200);
    expect(paged.body.data).toHaveLength(1);
    expect((await api.get(`${PATH}?per_page=101`)).status).toBe(422);
  });

  it('PATCH edits in place and keeps the secret', async () => {
    const created = await create();
    const sealedBefore = (await stored(created.id))!.secret_sealed;
    const res = await patch(api, created.id, {
      url: 'http://127.0.0.1:10/elsewhere',
      events: ['escrow.released', 'escrow.refunded'],
      is_active: false,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: created.id,
      url: 'http://127.0.0.1:10/elsewhere',
      events: ['escrow.released', 'escrow.refunded'],
      is_active: false,
      disabled_reason: null,
      created_at: created.created_at,
      updated_at: expect.any(String),
    });
    expect(new Date(res.body.updated_at).getTime()).toBeGreaterThanOrEqual(
      new Date(created.updated_at).getTime(),
    );
    const row = (await stored(created.id))!;
    expect(row.secret_sealed).toBe(sealedBefore);
    expect(open(webhookSecretKey(engine.config), row.secret_sealed, created.id)).toBe(
      created.secret,
    );

    // A partial edit changes only what it names.
    const partial = await patch(api, created.id, { is_active: true });
    expect(partial.body).toMatchObject({
      url: 'http://127.0.0.1:10/elsewhere',
      events: ['escrow.released', 'escrow.refunded'],
      is_active: true,
    });
    expect((await api.get(`${PATH}/${created.id}`)).body).toEqual(partial.body);
  });

  it('PATCH refuses a forbidden URL (400) or an unknown event (422) and changes nothing', async () => {
    const created = await create();
    const refused = await patch(api, created.id, { url: 'http://127.0.0.2/latest' });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ detail: REFUSED });
    const unknown = await patch(api, created.id, { events: ['nope'] });
    expect(unknown.status).toBe(422);
    const { secret: _secret, ...shown } = created;
    expect((await api.get(`${PATH}/${created.id}`)).body).toEqual(shown);
  });

  it('DELETE answers 200 with a message; the subscription is gone', async () => {
    const created = await create();
    const res = await api.del(`${PATH}/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: expect.any(String) });
    expect(await stored(created.id)).toBeNull();
    expect((await api.get(`${PATH}/${created.id}`)).status).toBe(404);
    expect((await api.del(`${PATH}/${created.id}`)).status).toBe(404);
    expect((await patch(api, created.id, { is_active: false })).status).toBe(404);
  });

  it('another application, or the other mode, gets 403; an id that names nothing 404', async () => {
    const created = await create();
    const other = clientFor(engine.url, await createTestApp(engine.pool));
    const live = clientFor(engine.url, app, 'live');
    for (const client of [other, live]) {
      expect((await client.get(`${PATH}/${created.id}`)).status).toBe(403);
      expect((await patch(client, created.id, { is_active: false })).status).toBe(403);
      expect((await client.del(`${PATH}/${created.id}`)).status).toBe(403);
    }
    expect((await api.get(`${PATH}/${created.id}`)).body.is_active).toBe(true);
    expect((await api.get(`${PATH}/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await api.get(`${PATH}/not-a-uuid`)).status).toBe(404);
    expect((await clientFor(engine.url, null).get(PATH)).status).toBe(401);
  });

  it('no secret reaches the logs', async () => {
    const created = await create();
    const all = engine.logs.join('\n');
    expect(all.length).toBeGreaterThan(0);
    expect(all).not.toContain(created.secret.slice('whsec_'.length));
    expect(all).not.toContain('whsec_');
  });
});

describe('the OpenAPI document', () => {
  it('documents every answer of these routes, with its schema', async () => {
    const doc = (await clientFor(engine.url, null).get('/api/v1/openapi.json')).body as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      components: unknown;
    };
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    const one = `${PATH}/{subscription_id}`;
    const conforms = (method: string, path: string, reply: Reply) => {
      const response = doc.paths[path]?.[method]?.responses[String(reply.status)] as
        { content?: { 'application/json'?: { schema?: object } } } | undefined;
      const schema = response?.content?.['application/json']?.schema;
      const validate = ajv.compile({ ...schema, components: doc.components });
      expect({ method, path, status: reply.status, documented: Boolean(schema) }).toEqual({
        method,
        path,
        status: reply.status,
        documented: true,
      });
      expect({
        method,
        path,
        valid: validate(reply.body),
        errors: validate.errors ?? null,
      }).toEqual({ method, path, valid: true, errors: null });
    };
    const created = await api.post(PATH, { url: HOOK, events: ['escrow.held'] });
    conforms('post', PATH, created);
    const id = (created.body as { id: string }).id;
    conforms(
      'post',
      PATH,
      await api.post(PATH, { url: 'http://127.0.0.2/', events: ['escrow.held'] }),
    );
    conforms('post', PATH, await api.post(PATH, { url: HOOK, events: ['nope'] }));
    conforms('get', PATH, await api.get(PATH));
    conforms('get', one, await api.get(`${PATH}/${id}`));
    conforms('patch', one, await patch(api, id, { is_active: false }));
    const other = clientFor(engine.url, await createTestApp(engine.pool));
    conforms('get', one, await other.get(`${PATH}/${id}`));
    conforms('delete', one, await api.del(`${PATH}/${id}`));
    conforms('get', one, await api.get(`${PATH}/${id}`));
  });
});

describe('without WEBHOOK_PRIVATE_ALLOWLIST', () => {
  const bare = useTestEngine();

  it('a loopback URL is refused with 400 and nothing is written', async () => {
    const client = clientFor(bare.url, await createTestApp(bare.pool));
    for (const url of [HOOK, 'http://localhost:9/hook', 'http://127.1/', 'http://[::1]/']) {
      const res = await client.post(PATH, { url, events: ['escrow.held'] });
      expect({ url, status: res.status, body: res.body }).toEqual({
        url,
        status: 400,
        body: { detail: REFUSED },
      });
    }
    const n = await bare.pool.oneFirst(
      sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM webhook_subscriptions`,
    );
    expect(n).toBe(0);
  });
});
