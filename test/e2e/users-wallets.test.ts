import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { assertLedgerInvariant, balanceOf, fundWallet } from '../support/database';
import { createTestApp } from '../support/engine';
import { clientFor, createUserWithWallet, type ApiClient } from '../support/http';
import { reply, useWalletClient } from '../support/client';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { app, api, live: liveApi } = useTestApp(engine);
const client = useWalletClient(engine, app);
const { api: otherApi } = useTestApp(engine);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const NOT_A_UUID = 'not-a-uuid';
const anError = { detail: expect.any(String) };

type UserJson = { id: string; app_user_id: string; is_active: boolean };
type UserPage = {
  data: UserJson[];
  page: number;
  per_page: number;
  total: number;
  total_pages: number;
};
type WalletJson = { id: string; user_id: string; balance: number; is_active: boolean };

function userInput(overrides: Record<string, unknown> = {}) {
  return {
    app_user_id: `u-${randomUUID()}`,
    name: 'Aminata Sesay',
    phone_number: '+23276123456',
    ...overrides,
  };
}

/** A user through the API; fails the test unless the API answers 200. */
async function createUser(client: ApiClient, overrides: Record<string, unknown> = {}) {
  const res = await client.post('/api/v1/users/create/', userInput(overrides));
  expect(res.status).toBe(200);
  return res.body as UserJson;
}

/** A fresh application with its own clients, for tests that count what a list returns. */
async function freshApp(currency: 'SLE' | 'USD' = 'SLE') {
  const fresh = await createTestApp(engine.pool, { currency });
  return {
    app: fresh,
    test: clientFor(engine.url, fresh),
    live: clientFor(engine.url, fresh, 'live'),
  };
}

const count = z.object({ n: z.number() });

async function usersOf(applicationId: string, mode: 'test' | 'live' = 'test'): Promise<number> {
  return engine.pool.oneFirst(sql.type(count)`
    SELECT count(*)::int AS n FROM users WHERE application_id = ${applicationId} AND mode = ${mode}`);
}

async function userRows(id: string): Promise<number> {
  return engine.pool.oneFirst(
    sql.type(count)`SELECT count(*)::int AS n FROM users WHERE id = ${id}`,
  );
}

async function walletRowsOfUser(userId: string): Promise<number> {
  return engine.pool.oneFirst(sql.type(count)`
    SELECT count(*)::int AS n FROM wallets WHERE user_id = ${userId}`);
}

async function walletRows(id: string): Promise<number> {
  return engine.pool.oneFirst(
    sql.type(count)`SELECT count(*)::int AS n FROM wallets WHERE id = ${id}`,
  );
}

async function activeFlags(userId: string) {
  return engine.pool.one(sql.type(
    z.object({ user_active: z.boolean(), wallet_active: z.boolean().nullable() }),
  )`
    SELECT u.is_active AS user_active, w.is_active AS wallet_active
    FROM users u LEFT JOIN wallets w ON w.user_id = u.id WHERE u.id = ${userId}`);
}

describe('POST /api/v1/users/create/', () => {
  it('creates an active user and returns every User field', async () => {
    const input = userInput({ email: 'aminata@example.com', username: 'aminata' });
    const res = await reply(client.raw.POST('/api/v1/users/create/', { body: input }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      app_user_id: input.app_user_id,
      name: 'Aminata Sesay',
      phone_number: '+23276123456',
      email: 'aminata@example.com',
      username: 'aminata',
      is_active: true,
      metadata: {},
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    const row = await engine.pool.one(
      sql.type(
        z.object({
          application_id: z.string(),
          mode: z.string(),
          app_user_id: z.string(),
          email: z.string().nullable(),
          is_active: z.boolean(),
        }),
      )`SELECT application_id, mode, app_user_id, email, is_active FROM users WHERE id = ${res.body.id}`,
    );
    expect(row).toEqual({
      application_id: app.id,
      mode: 'test',
      app_user_id: input.app_user_id,
      email: 'aminata@example.com',
      is_active: true,
    });
  });

  it('returns a numeric app_user_id as its string form, on creation and when read back', async () => {
    const { test } = await freshApp();
    const res = await test.post('/api/v1/users/create/', userInput({ app_user_id: 12345 }));
    expect(res.status).toBe(200);
    expect(res.body.app_user_id).toBe('12345');

    const read = await test.get(`/api/v1/users/${res.body.id}/`);
    expect(read.status).toBe(200);
    expect(read.body.app_user_id).toBe('12345');
    const list = await test.get<UserPage>('/api/v1/users/');
    expect(list.body.data.map((u) => u.app_user_id)).toEqual(['12345']);
    expect(
      await engine.pool.oneFirst(sql.type(z.object({ app_user_id: z.string() }))`
        SELECT app_user_id FROM users WHERE id = ${res.body.id}`),
    ).toBe('12345');
  });

  it('accepts any string as app_user_id, such as a UUID', async () => {
    const external = randomUUID();
    const user = await createUser(api, { app_user_id: external });
    expect(user.app_user_id).toBe(external);
  });

  it('stores is_active false when asked, and returns null for an omitted email and username', async () => {
    const res = await reply(
      client.raw.POST('/api/v1/users/create/', { body: userInput({ is_active: false }) }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ is_active: false, email: null, username: null });
    expect((await activeFlags(res.body.id)).user_active).toBe(false);
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/users/{user_id}/', {
            params: { path: { user_id: res.body.id } },
          }),
        )
      ).body.is_active,
    ).toBe(false);
  });

  it('rejects an email already used in the same application and mode with 400 and writes nothing', async () => {
    const { app: fresh, test } = await freshApp();
    await createUser(test, { email: 'dup@example.com' });
    const before = await usersOf(fresh.id);

    const again = await test.post('/api/v1/users/create/', userInput({ email: 'dup@example.com' }));
    expect(again.status).toBe(400);
    expect(again.body).toEqual(anError);
    expect(again.body.detail).toMatch(/email/i);

    const otherCase = await test.post(
      '/api/v1/users/create/',
      userInput({ email: 'DUP@Example.com' }),
    );
    expect(otherCase.status).toBe(400);
    expect(otherCase.body).toEqual(anError);

    expect(await usersOf(fresh.id)).toBe(before);
  });

  it('allows the same email in another application and in the other mode', async () => {
    const email = `shared-${randomUUID()}@example.com`;
    const { app: a, test, live } = await freshApp();
    const { app: b, test: bTest } = await freshApp();
    await createUser(test, { email });
    await createUser(live, { email });
    await createUser(bTest, { email });
    expect(await usersOf(a.id, 'test')).toBe(1);
    expect(await usersOf(a.id, 'live')).toBe(1);
    expect(await usersOf(b.id, 'test')).toBe(1);
  });

  it.each([
    ['name is missing', { name: undefined }],
    ['phone_number is missing', { phone_number: undefined }],
    ['app_user_id is missing', { app_user_id: undefined }],
    ['name is blank', { name: '   ' }],
    ['app_user_id is empty', { app_user_id: '' }],
    ['app_user_id is a boolean', { app_user_id: true }],
    ['email is not an email', { email: 'not-an-email' }],
    ['the email has a local part over 64 characters', { email: `${'a'.repeat(65)}@example.com` }],
    ['is_active is not a boolean', { is_active: 'yes' }],
  ])('answers 422 with a string detail and writes nothing when %s', async (_case, overrides) => {
    const { app: fresh, test } = await freshApp();
    const res = await test.post('/api/v1/users/create/', userInput(overrides));
    expect(res.status).toBe(422);
    expect(res.body).toEqual(anError);
    expect(await usersOf(fresh.id)).toBe(0);
  });

  it('answers 422 for a missing body and 400 for a body that is not JSON, writing nothing', async () => {
    const { app: fresh, test } = await freshApp();
    const empty = await test.post('/api/v1/users/create/');
    expect(empty.status).toBe(422);
    expect(empty.body).toEqual(anError);
    const broken = await test.request('POST', '/api/v1/users/create/', { raw: '{"name": ' });
    expect(broken.status).toBe(400);
    expect(broken.body).toEqual(anError);
    expect(await usersOf(fresh.id)).toBe(0);
  });
});

describe('GET /api/v1/users/', () => {
  it('returns the page envelope with page 1 and per_page 20 by default', async () => {
    const { test } = await freshApp();
    const created = [];
    for (let i = 0; i < 3; i += 1) {
      created.push(
        (await test.post('/api/v1/users/create/', userInput({ email: `p${i}@example.com` }))).body,
      );
    }
    const res = await test.get('/api/v1/users/');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(
      ['data', 'page', 'per_page', 'total', 'total_pages'].sort(),
    );
    expect(res.body).toMatchObject({ page: 1, per_page: 20, total: 3, total_pages: 1 });
    const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
    expect([...res.body.data].sort(byId)).toEqual([...created].sort(byId));
  });

  it('pages through 5 users two at a time', async () => {
    const { test } = await freshApp();
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await createUser(test)).id);

    const seen: string[] = [];
    for (const [page, size] of [
      [1, 2],
      [2, 2],
      [3, 1],
    ] as const) {
      const res = await test.get<UserPage>(`/api/v1/users/?per_page=2&page=${page}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ page, per_page: 2, total: 5, total_pages: 3 });
      expect(res.body.data).toHaveLength(size);
      seen.push(...res.body.data.map((u) => u.id));
    }
    expect(new Set(seen).size).toBe(5);
    expect([...seen].sort()).toEqual([...ids].sort());

    const beyond = await test.get('/api/v1/users/?per_page=2&page=4');
    expect(beyond.status).toBe(200);
    expect(beyond.body).toEqual({ data: [], page: 4, per_page: 2, total: 5, total_pages: 3 });
  });

  it('filters by is_active', async () => {
    const { test } = await freshApp();
    const active = [(await createUser(test)).id, (await createUser(test)).id];
    const createdInactive = (await createUser(test, { is_active: false })).id;
    const disabledLater = (await createUser(test)).id;
    expect((await test.post(`/api/v1/users/${disabledLater}/disable`)).status).toBe(200);

    const on = await test.get<UserPage>('/api/v1/users/?is_active=true');
    expect(on.status).toBe(200);
    expect(on.body.total).toBe(2);
    expect(on.body.data.map((u) => u.id).sort()).toEqual([...active].sort());
    expect(on.body.data.every((u) => u.is_active)).toBe(true);

    const off = await test.get<UserPage>('/api/v1/users/?is_active=false');
    expect(off.status).toBe(200);
    expect(off.body.total).toBe(2);
    expect(off.body.data.map((u) => u.id).sort()).toEqual([createdInactive, disabledLater].sort());

    expect((await test.get('/api/v1/users/')).body.total).toBe(4);
  });

  it.each([
    ['per_page=0'],
    ['per_page=101'],
    ['page=0'],
    ['page=-1'],
    ['per_page=abc'],
    ['page=1.5'],
    ['is_active=maybe'],
  ])('answers 422 for %s', async (query) => {
    const res = await api.get(`/api/v1/users/?${query}`);
    expect(res.status).toBe(422);
    expect(res.body).toEqual(anError);
  });

  it('accepts per_page=100 and per_page=1 at the edges', async () => {
    expect((await api.get('/api/v1/users/?per_page=100')).status).toBe(200);
    const one = await api.get('/api/v1/users/?per_page=1');
    expect(one.status).toBe(200);
    expect(one.body.data).toHaveLength(1);
  });

  it('lists only the users of the calling application and mode', async () => {
    const a = await freshApp();
    const b = await freshApp();
    const aTest = [(await createUser(a.test)).id, (await createUser(a.test)).id];
    const aLive = [(await createUser(a.live)).id];
    const bTest = [(await createUser(b.test)).id];

    const ids = async (client: ApiClient) => {
      const res = await client.get<UserPage>('/api/v1/users/');
      expect(res.status).toBe(200);
      return { ids: res.body.data.map((u) => u.id).sort(), total: res.body.total };
    };
    expect(await ids(a.test)).toEqual({ ids: [...aTest].sort(), total: 2 });
    expect(await ids(a.live)).toEqual({ ids: aLive, total: 1 });
    expect(await ids(b.test)).toEqual({ ids: bTest, total: 1 });
    expect(await ids(b.live)).toEqual({ ids: [], total: 0 });
  });
});

describe('GET /api/v1/users/{user_id}/', () => {
  it('returns the user with exactly the get-user fields and no updated_at', async () => {
    const created = await reply(
      client.raw.POST('/api/v1/users/create/', {
        body: userInput({ email: 'detail@example.com', username: 'detail' }),
      }),
    );
    const res = await reply(
      client.raw.GET('/api/v1/users/{user_id}/', {
        params: { path: { user_id: created.body.id } },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: created.body.id,
      app_user_id: created.body.app_user_id,
      name: created.body.name,
      email: 'detail@example.com',
      phone_number: created.body.phone_number,
      is_active: true,
      metadata: {},
      created_at: created.body.created_at,
    });
    expect(res.body).not.toHaveProperty('updated_at');
  });

  it('answers 404 for an unknown uuid, an id that is not a uuid and a wallet id', async () => {
    const { walletId } = await createUserWithWallet(api);
    for (const id of [randomUUID(), NOT_A_UUID, walletId]) {
      const res = await reply(
        client.raw.GET('/api/v1/users/{user_id}/', { params: { path: { user_id: id } } }),
      );
      expect(res.status).toBe(404);
      expect(res.body).toEqual(anError);
    }
  });

  it('answers 403 for a user of another application or of the other mode', async () => {
    const foreign = await createUser(otherApi);
    const testUser = await createUser(api);
    const liveUser = await createUser(liveApi);
    for (const res of [
      await reply(
        client.raw.GET('/api/v1/users/{user_id}/', { params: { path: { user_id: foreign.id } } }),
      ),
      await liveApi.get(`/api/v1/users/${testUser.id}/`),
      await reply(
        client.raw.GET('/api/v1/users/{user_id}/', { params: { path: { user_id: liveUser.id } } }),
      ),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual(anError);
    }
  });
});

describe('DELETE /api/v1/users/{user_id}/', () => {
  it('purges the user and the wallet but keeps the wallet’s ledger entries, balanced', async () => {
    const leaving = await createUserWithWallet(api);
    const staying = await createUserWithWallet(api);
    await fundWallet(engine.pool, leaving.walletId, 1_250n);
    const transfer = await reply(
      client.raw.POST('/api/v1/transactions/wallet/transfer', {
        body: {
          from_wallet_id: leaving.walletId,
          to_wallet_id: staying.walletId,
          amount: 12.5,
        },
      }),
    );
    expect(transfer.status).toBe(200);
    expect(await balanceOf(engine.pool, leaving.walletId)).toBe(0n);
    const entriesOf = () =>
      engine.pool.any(sql.type(z.object({ amount: z.bigint() }))`
        SELECT amount FROM ledger_entries WHERE account_id = ${leaving.walletId} ORDER BY id`);
    expect(await entriesOf()).toEqual([{ amount: 1_250n }, { amount: -1_250n }]);

    const res = await reply(
      client.raw.DELETE('/api/v1/users/{user_id}/', {
        params: { path: { user_id: leaving.userId } },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: expect.any(String) });

    expect(
      (
        await reply(
          client.raw.GET('/api/v1/users/{user_id}/', {
            params: { path: { user_id: leaving.userId } },
          }),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/wallets/{user_id}/', {
            params: { path: { user_id: leaving.userId } },
          }),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/wallets/{wallet_id}/enable', {
            params: { path: { wallet_id: leaving.walletId } },
          }),
        )
      ).status,
    ).toBe(404);
    expect(
      (
        await reply(
          client.raw.DELETE('/api/v1/users/{user_id}/', {
            params: { path: { user_id: leaving.userId } },
          }),
        )
      ).status,
    ).toBe(404);
    expect(await userRows(leaving.userId)).toBe(0);
    expect(await walletRows(leaving.walletId)).toBe(0);
    expect(await entriesOf()).toEqual([{ amount: 1_250n }, { amount: -1_250n }]);
    expect(await balanceOf(engine.pool, staying.walletId)).toBe(1_250n);
    expect(await userRows(staying.userId)).toBe(1);
    await assertLedgerInvariant(engine.pool);
  });

  it('deletes a user who has no wallet', async () => {
    const user = await createUser(api);
    const res = await reply(
      client.raw.DELETE('/api/v1/users/{user_id}/', { params: { path: { user_id: user.id } } }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: expect.any(String) });
    expect(await userRows(user.id)).toBe(0);
  });

  it('refuses with 400 to delete a user whose wallet holds money, and deletes nothing', async () => {
    const { userId, walletId } = await createUserWithWallet(api);
    await fundWallet(engine.pool, walletId, 1n);
    const res = await reply(
      client.raw.DELETE('/api/v1/users/{user_id}/', { params: { path: { user_id: userId } } }),
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual(anError);
    expect(res.body.detail).toMatch(/money/i);
    expect(await userRows(userId)).toBe(1);
    expect(await walletRows(walletId)).toBe(1);
    const wallet = await reply(
      client.raw.GET('/api/v1/wallets/{user_id}/', { params: { path: { user_id: userId } } }),
    );
    expect(wallet.status).toBe(200);
    expect(wallet.body.balance).toBe(0.01);
    await assertLedgerInvariant(engine.pool);
  });

  it.each([['pending'], ['held']])(
    'refuses with 400 to delete a user whose wallet has a %s payment open, and deletes nothing',
    async (status) => {
      const { userId, walletId } = await createUserWithWallet(api);
      await engine.pool.query(sql.unsafe`
        INSERT INTO transactions (id, application_id, mode, transaction_type, status, wallet_id, currency, amount)
        VALUES (${randomUUID()}, ${app.id}, 'test',
          ${status === 'held' ? 'escrow_hold' : 'mobile_money_deposit'}, ${status}, ${walletId}, 'SLE', 100)`);
      const res = await reply(
        client.raw.DELETE('/api/v1/users/{user_id}/', { params: { path: { user_id: userId } } }),
      );
      expect(res.status).toBe(400);
      expect(res.body).toEqual(anError);
      expect(res.body.detail).toMatch(/open/i);
      expect(await userRows(userId)).toBe(1);
      expect(await walletRows(walletId)).toBe(1);
    },
  );

  it('answers 404 for an unknown user and for an id that is not a uuid', async () => {
    for (const id of [randomUUID(), NOT_A_UUID]) {
      const res = await reply(
        client.raw.DELETE('/api/v1/users/{user_id}/', { params: { path: { user_id: id } } }),
      );
      expect(res.status).toBe(404);
      expect(res.body).toEqual(anError);
    }
  });

  it('answers 403 for a user of another application or of the other mode, deleting nothing', async () => {
    const foreign = await createUserWithWallet(otherApi);
    const own = await createUserWithWallet(api);
    for (const res of [
      await reply(
        client.raw.DELETE('/api/v1/users/{user_id}/', {
          params: { path: { user_id: foreign.userId } },
        }),
      ),
      await liveApi.del(`/api/v1/users/${own.userId}/`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual(anError);
    }
    expect(await userRows(foreign.userId)).toBe(1);
    expect(await walletRows(foreign.walletId)).toBe(1);
    expect(await userRows(own.userId)).toBe(1);
    expect(await walletRows(own.walletId)).toBe(1);
  });
});

describe('POST /api/v1/users/{user_id}/enable and /disable', () => {
  it('disables the user together with the wallet, and enables both again', async () => {
    const { userId, walletId } = await createUserWithWallet(api);

    const off = await reply(
      client.raw.POST('/api/v1/users/{user_id}/disable', { params: { path: { user_id: userId } } }),
    );
    expect(off.status).toBe(200);
    expect(off.body).toEqual({ message: expect.any(String) });
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/users/{user_id}/', { params: { path: { user_id: userId } } }),
        )
      ).body.is_active,
    ).toBe(false);
    const disabledWallet = await reply(
      client.raw.GET('/api/v1/wallets/{user_id}/', { params: { path: { user_id: userId } } }),
    );
    expect(disabledWallet.body).toMatchObject({ id: walletId, is_active: false });
    expect(await activeFlags(userId)).toEqual({ user_active: false, wallet_active: false });

    const on = await reply(
      client.raw.POST('/api/v1/users/{user_id}/enable', { params: { path: { user_id: userId } } }),
    );
    expect(on.status).toBe(200);
    expect(on.body).toEqual({ message: expect.any(String) });
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/users/{user_id}/', { params: { path: { user_id: userId } } }),
        )
      ).body.is_active,
    ).toBe(true);
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/wallets/{user_id}/', { params: { path: { user_id: userId } } }),
        )
      ).body,
    ).toMatchObject({
      id: walletId,
      is_active: true,
    });
    expect(await activeFlags(userId)).toEqual({ user_active: true, wallet_active: true });
  });

  it('enabling an active user also enables a wallet that was disabled on its own', async () => {
    const { userId, walletId } = await createUserWithWallet(api);
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/wallets/{wallet_id}/disable', {
            params: { path: { wallet_id: walletId } },
          }),
        )
      ).status,
    ).toBe(200);
    expect(await activeFlags(userId)).toEqual({ user_active: true, wallet_active: false });
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/users/{user_id}/enable', {
            params: { path: { user_id: userId } },
          }),
        )
      ).status,
    ).toBe(200);
    expect(await activeFlags(userId)).toEqual({ user_active: true, wallet_active: true });
  });

  it('disables and enables a user who has no wallet', async () => {
    const user = await createUser(api);
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/users/{user_id}/disable', {
            params: { path: { user_id: user.id } },
          }),
        )
      ).status,
    ).toBe(200);
    expect(await activeFlags(user.id)).toEqual({ user_active: false, wallet_active: null });
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/users/{user_id}/enable', {
            params: { path: { user_id: user.id } },
          }),
        )
      ).status,
    ).toBe(200);
    expect(await activeFlags(user.id)).toEqual({ user_active: true, wallet_active: null });
  });

  it.each([['enable'], ['disable']])(
    '%s answers 404 for an unknown or malformed id',
    async (action) => {
      for (const id of [randomUUID(), NOT_A_UUID]) {
        const res = await api.post(`/api/v1/users/${id}/${action}`);
        expect(res.status).toBe(404);
        expect(res.body).toEqual(anError);
      }
    },
  );

  it.each([['enable'], ['disable']])(
    '%s answers 403 for a user of another application or of the other mode, changing nothing',
    async (action) => {
      const initial = action === 'enable' ? false : true;
      const foreign = await createUserWithWallet(otherApi, { is_active: initial });
      const own = await createUserWithWallet(api, { is_active: initial });
      for (const res of [
        await api.post(`/api/v1/users/${foreign.userId}/${action}`),
        await liveApi.post(`/api/v1/users/${own.userId}/${action}`),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body).toEqual(anError);
      }
      for (const userId of [foreign.userId, own.userId]) {
        expect(await activeFlags(userId)).toEqual({ user_active: initial, wallet_active: initial });
      }
    },
  );
});

describe('POST /api/v1/wallets/create/{user_id}/', () => {
  it.each([['SLE' as const], ['USD' as const]])(
    'creates an active zero-balance wallet in the %s base currency of the application',
    async (currency) => {
      const { app: fresh, test } = await freshApp(currency);
      const user = await createUser(test);
      const res = await test.post(`/api/v1/wallets/create/${user.id}/`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        user_id: user.id,
        balance: 0,
        currency,
        is_active: true,
        metadata: {},
      });
      const account = await engine.pool.one(
        sql.type(
          z.object({
            application_id: z.string(),
            mode: z.string(),
            kind: z.string(),
            currency: z.string(),
            balance: z.bigint(),
          }),
        )`SELECT application_id, mode, kind, currency, balance FROM ledger_accounts WHERE id = ${res.body.id}`,
      );
      expect(account).toEqual({
        application_id: fresh.id,
        mode: 'test',
        kind: 'user_wallet',
        currency,
        balance: 0n,
      });
      expect(await walletRowsOfUser(user.id)).toBe(1);
    },
  );

  it('creates a disabled wallet for a disabled user', async () => {
    const user = await createUser(api, { is_active: false });
    const res = await reply(
      client.raw.POST('/api/v1/wallets/create/{user_id}/', {
        params: { path: { user_id: user.id } },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body.is_active).toBe(false);
  });

  it('rejects a second wallet for the same user with 400 and keeps one', async () => {
    const { userId, walletId } = await createUserWithWallet(api);
    const res = await reply(
      client.raw.POST('/api/v1/wallets/create/{user_id}/', {
        params: { path: { user_id: userId } },
      }),
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual(anError);
    expect(res.body.detail).toMatch(/already exists/i);
    expect(await walletRowsOfUser(userId)).toBe(1);
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/wallets/{user_id}/', { params: { path: { user_id: userId } } }),
        )
      ).body.id,
    ).toBe(walletId);
  });

  it('answers 404 for an unknown user and for an id that is not a uuid', async () => {
    for (const id of [randomUUID(), NOT_A_UUID]) {
      const res = await reply(
        client.raw.POST('/api/v1/wallets/create/{user_id}/', { params: { path: { user_id: id } } }),
      );
      expect(res.status).toBe(404);
      expect(res.body).toEqual(anError);
    }
  });

  it('answers 403 for a user of another application or of the other mode, creating nothing', async () => {
    const foreign = await createUser(otherApi);
    const own = await createUser(api);
    for (const res of [
      await reply(
        client.raw.POST('/api/v1/wallets/create/{user_id}/', {
          params: { path: { user_id: foreign.id } },
        }),
      ),
      await liveApi.post(`/api/v1/wallets/create/${own.id}/`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual(anError);
    }
    expect(await walletRowsOfUser(foreign.id)).toBe(0);
    expect(await walletRowsOfUser(own.id)).toBe(0);
  });
});

describe('GET /api/v1/wallets/', () => {
  /** The `<url>` of each rel of an RFC 8288 Link header. */
  function links(header: string | null): Record<string, string> {
    const out: Record<string, string> = {};
    for (const part of (header ?? '').split(',')) {
      const match = /<([^>]+)>\s*;\s*rel="([^"]+)"/.exec(part.trim());
      if (match) out[match[2]!] = match[1]!;
    }
    return out;
  }
  /** A Link target as a path and query on the API's host. */
  const pathOf = (target: string) => {
    const url = new URL(target, engine.url);
    return `${url.pathname}${url.search}`;
  };

  it('returns a bare array of the caller’s wallets with X-Total-Count and no Link on one page', async () => {
    const { test } = await freshApp();
    const created = [];
    for (let i = 0; i < 3; i += 1) {
      const { userId } = await createUserWithWallet(test);
      created.push((await test.get(`/api/v1/wallets/${userId}/`)).body);
    }
    const res = await test.get('/api/v1/wallets/');
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
    expect([...res.body].sort(byId)).toEqual([...created].sort(byId));
    for (const wallet of res.body) {
      expect(Object.keys(wallet).sort()).toEqual(
        ['balance', 'currency', 'id', 'is_active', 'metadata', 'user_id'].sort(),
      );
    }
    expect(res.headers.get('x-total-count')).toBe('3');
    expect(res.headers.get('link')).toBeNull();
  });

  it('walks the pages with the Link header rel="next" and rel="prev"', async () => {
    const { test } = await freshApp();
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) ids.push((await createUserWithWallet(test)).walletId);

    const first = await test.get('/api/v1/wallets/?per_page=1');
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(1);
    expect(first.headers.get('x-total-count')).toBe('3');
    const firstLinks = links(first.headers.get('link'));
    expect(Object.keys(firstLinks)).toEqual(['next']);

    const second = await test.get(pathOf(firstLinks.next!));
    expect(second.status).toBe(200);
    expect(second.body).toHaveLength(1);
    const secondLinks = links(second.headers.get('link'));
    expect(Object.keys(secondLinks).sort()).toEqual(['next', 'prev']);
    const back = await test.get(pathOf(secondLinks.prev!));
    expect(back.body).toEqual(first.body);

    const third = await test.get(pathOf(secondLinks.next!));
    expect(third.status).toBe(200);
    expect(third.body).toHaveLength(1);
    expect(third.headers.get('x-total-count')).toBe('3');
    expect(Object.keys(links(third.headers.get('link')))).toEqual(['prev']);

    const seen = [first, second, third].map((r) => (r.body as { id: string }[])[0]!.id);
    expect([...seen].sort()).toEqual([...ids].sort());
  });

  it('filters by is_active, and its Link header keeps the filter', async () => {
    const { test } = await freshApp();
    const active = [(await createUserWithWallet(test)).walletId];
    active.push((await createUserWithWallet(test)).walletId);
    const inactive = (await createUserWithWallet(test)).walletId;
    expect((await test.post(`/api/v1/wallets/${inactive}/disable`)).status).toBe(200);

    const off = await test.get<WalletJson[]>('/api/v1/wallets/?is_active=false');
    expect(off.status).toBe(200);
    expect(off.body).toEqual([expect.objectContaining({ id: inactive, is_active: false })]);
    expect(off.headers.get('x-total-count')).toBe('1');

    const on = await test.get<WalletJson[]>('/api/v1/wallets/?is_active=true');
    expect(on.body.map((w) => w.id).sort()).toEqual([...active].sort());
    expect(on.headers.get('x-total-count')).toBe('2');

    const paged = await test.get('/api/v1/wallets/?is_active=true&per_page=1');
    const next = new URL(links(paged.headers.get('link')).next!, engine.url);
    expect(next.searchParams.get('is_active')).toBe('true');
    const nextPage = await test.get(pathOf(next.toString()));
    expect(nextPage.body).toHaveLength(1);
    expect(nextPage.body[0].is_active).toBe(true);
  });

  it.each([['per_page=101'], ['per_page=0'], ['page=0'], ['is_active=maybe']])(
    'answers 422 for %s',
    async (query) => {
      const res = await api.get(`/api/v1/wallets/?${query}`);
      expect(res.status).toBe(422);
      expect(res.body).toEqual(anError);
    },
  );

  it('lists only the wallets of the calling application and mode', async () => {
    const a = await freshApp();
    const b = await freshApp();
    const aTest = (await createUserWithWallet(a.test)).walletId;
    const aLive = (await createUserWithWallet(a.live)).walletId;
    const bTest = (await createUserWithWallet(b.test)).walletId;
    const ids = async (client: ApiClient) => {
      const res = await client.get<WalletJson[]>('/api/v1/wallets/');
      expect(res.status).toBe(200);
      return res.body.map((w) => w.id);
    };
    expect(await ids(a.test)).toEqual([aTest]);
    expect(await ids(a.live)).toEqual([aLive]);
    expect(await ids(b.test)).toEqual([bTest]);
    expect(await ids(b.live)).toEqual([]);
  });
});

describe('GET /api/v1/wallets/{user_id}/', () => {
  it('returns the user’s wallet with the balance in major units', async () => {
    const { userId, walletId } = await createUserWithWallet(api);
    await fundWallet(engine.pool, walletId, 1_250n);
    const res = await reply(
      client.raw.GET('/api/v1/wallets/{user_id}/', { params: { path: { user_id: userId } } }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: walletId,
      user_id: userId,
      balance: 12.5,
      currency: 'SLE',
      is_active: true,
      metadata: {},
    });
  });

  it('answers 404 when the user has no wallet', async () => {
    const user = await createUser(api);
    const res = await reply(
      client.raw.GET('/api/v1/wallets/{user_id}/', { params: { path: { user_id: user.id } } }),
    );
    expect(res.status).toBe(404);
    expect(res.body).toEqual(anError);
  });

  it('answers 404 for an unknown user, a malformed id and a wallet id given as the user id', async () => {
    const { walletId } = await createUserWithWallet(api);
    for (const id of [randomUUID(), NOT_A_UUID, walletId]) {
      const res = await reply(
        client.raw.GET('/api/v1/wallets/{user_id}/', { params: { path: { user_id: id } } }),
      );
      expect(res.status).toBe(404);
      expect(res.body).toEqual(anError);
    }
  });

  it('answers 403 for a user of another application or of the other mode', async () => {
    const foreign = await createUserWithWallet(otherApi);
    const own = await createUserWithWallet(api);
    for (const res of [
      await reply(
        client.raw.GET('/api/v1/wallets/{user_id}/', {
          params: { path: { user_id: foreign.userId } },
        }),
      ),
      await liveApi.get(`/api/v1/wallets/${own.userId}/`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual(anError);
    }
  });
});

describe('POST /api/v1/wallets/{wallet_id}/enable and /disable', () => {
  it('disable returns the wallet inactive and enable returns it active, leaving the user alone', async () => {
    const { userId, walletId } = await createUserWithWallet(api);
    await fundWallet(engine.pool, walletId, 300n);

    const off = await reply(
      client.raw.POST('/api/v1/wallets/{wallet_id}/disable', {
        params: { path: { wallet_id: walletId } },
      }),
    );
    expect(off.status).toBe(200);
    expect(off.body).toEqual({
      id: walletId,
      user_id: userId,
      balance: 3,
      currency: 'SLE',
      is_active: false,
      metadata: {},
    });
    expect(await activeFlags(userId)).toEqual({ user_active: true, wallet_active: false });
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/wallets/{user_id}/', { params: { path: { user_id: userId } } }),
        )
      ).body.is_active,
    ).toBe(false);

    const on = await reply(
      client.raw.POST('/api/v1/wallets/{wallet_id}/enable', {
        params: { path: { wallet_id: walletId } },
      }),
    );
    expect(on.status).toBe(200);
    expect(on.body).toEqual({ ...off.body, is_active: true });
    expect(await activeFlags(userId)).toEqual({ user_active: true, wallet_active: true });
    expect(await balanceOf(engine.pool, walletId)).toBe(300n);
  });

  it('refuses with 400 to enable the wallet of a disabled user, and the wallet stays disabled', async () => {
    const { userId, walletId } = await createUserWithWallet(api);
    expect(
      (
        await reply(
          client.raw.POST('/api/v1/users/{user_id}/disable', {
            params: { path: { user_id: userId } },
          }),
        )
      ).status,
    ).toBe(200);
    const res = await reply(
      client.raw.POST('/api/v1/wallets/{wallet_id}/enable', {
        params: { path: { wallet_id: walletId } },
      }),
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual(anError);
    expect(res.body.detail).toMatch(/disabled/i);
    expect(await activeFlags(userId)).toEqual({ user_active: false, wallet_active: false });
    expect(
      (
        await reply(
          client.raw.GET('/api/v1/wallets/{user_id}/', { params: { path: { user_id: userId } } }),
        )
      ).body.is_active,
    ).toBe(false);
  });

  it.each([['enable'], ['disable']])(
    '%s answers 404 for an unknown wallet, a malformed id and a user id given as the wallet id',
    async (action) => {
      const { userId } = await createUserWithWallet(api);
      for (const id of [randomUUID(), NOT_A_UUID, userId]) {
        const res = await api.post(`/api/v1/wallets/${id}/${action}`);
        expect(res.status).toBe(404);
        expect(res.body).toEqual(anError);
      }
    },
  );

  it.each([['enable'], ['disable']])(
    '%s answers 403 for a wallet of another application or of the other mode, changing nothing',
    async (action) => {
      const foreign = await createUserWithWallet(otherApi);
      const own = await createUserWithWallet(api);
      if (action === 'enable') {
        expect((await otherApi.post(`/api/v1/wallets/${foreign.walletId}/disable`)).status).toBe(
          200,
        );
        expect(
          (
            await reply(
              client.raw.POST('/api/v1/wallets/{wallet_id}/disable', {
                params: { path: { wallet_id: own.walletId } },
              }),
            )
          ).status,
        ).toBe(200);
      }
      for (const res of [
        await api.post(`/api/v1/wallets/${foreign.walletId}/${action}`),
        await liveApi.post(`/api/v1/wallets/${own.walletId}/${action}`),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body).toEqual(anError);
      }
      const expected = action === 'disable';
      expect((await activeFlags(foreign.userId)).wallet_active).toBe(expected);
      expect((await activeFlags(own.userId)).wallet_active).toBe(expected);
    },
  );
});

describe('authentication on the Users and Wallets endpoints', () => {
  let userId: string;
  let walletId: string;
  beforeAll(async () => {
    ({ userId, walletId } = await createUserWithWallet(api));
  });

  const endpoints: [string, string][] = [
    ['POST', '/api/v1/users/create/'],
    ['GET', '/api/v1/users/'],
    ['GET', '/api/v1/users/{user_id}/'],
    ['DELETE', '/api/v1/users/{user_id}/'],
    ['POST', '/api/v1/users/{user_id}/enable'],
    ['POST', '/api/v1/users/{user_id}/disable'],
    ['POST', '/api/v1/wallets/create/{user_id}/'],
    ['GET', '/api/v1/wallets/'],
    ['GET', '/api/v1/wallets/{user_id}/'],
    ['POST', '/api/v1/wallets/{wallet_id}/enable'],
    ['POST', '/api/v1/wallets/{wallet_id}/disable'],
  ];

  it.each(endpoints)(
    '%s %s answers 401 without credentials, without the secret or with a wrong one, changing nothing',
    async (method, path) => {
      const anonymous = clientFor(engine.url, null);
      const url = path.replace('{user_id}', userId).replace('{wallet_id}', walletId);
      const body = method === 'POST' && url.endsWith('/users/create/') ? userInput() : undefined;
      const usersBefore = await usersOf(app.id);
      const attempts: Record<string, string>[] = [
        {},
        { 'api-key': app.credentials.test.apiKey },
        { 'api-key': app.credentials.test.apiKey, 'secret-key': 'wrong-secret' },
      ];
      for (const headers of attempts) {
        const res = await anonymous.request(method, url, { body, headers });
        expect(res.status).toBe(401);
        expect(res.body).toEqual(anError);
      }
      expect(await usersOf(app.id)).toBe(usersBefore);
      expect(await activeFlags(userId)).toEqual({ user_active: true, wallet_active: true });
      expect(await walletRowsOfUser(userId)).toBe(1);
    },
  );
});
