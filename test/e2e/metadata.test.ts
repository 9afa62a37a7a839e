import { randomUUID } from 'node:crypto';
import { CheckIntegrityConstraintViolationError, sql } from 'slonik';
import { z } from 'zod';
import { createUserWithWallet, type ApiClient } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { api } = useTestApp(engine);
const { api: otherApi } = useTestApp(engine);

const stored = z.object({ metadata: z.record(z.string(), z.string()) });

async function userMetadata(id: string) {
  const row = await engine.pool.maybeOne(
    sql.type(stored)`SELECT metadata FROM users WHERE id = ${id}`,
  );
  return row?.metadata ?? null;
}

async function walletMetadata(id: string) {
  const row = await engine.pool.maybeOne(
    sql.type(stored)`SELECT metadata FROM wallets WHERE id = ${id}`,
  );
  return row?.metadata ?? null;
}

const count = z.object({ n: z.number() });

async function usersNamed(appUserId: string): Promise<number> {
  return engine.pool.oneFirst(
    sql.type(count)`SELECT count(*)::int AS n FROM users WHERE app_user_id = ${appUserId}`,
  );
}

function patch(client: ApiClient, path: string, body: unknown) {
  return client.request('PATCH', path, { body });
}

function userInput(overrides: Record<string, unknown> = {}) {
  return {
    app_user_id: `u-${randomUUID()}`,
    name: 'Aminata Sesay',
    phone_number: '+23276123456',
    ...overrides,
  };
}

const keys = (n: number, prefix = 'k') =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, 'v']));

/** Each limit, the key the detail must name, and what the limit says. */
const broken: [string, Record<string, unknown>, RegExp][] = [
  ['51 keys', keys(51), /^metadata: at most 50 keys/],
  ['a 41-character key', { ['k'.repeat(41)]: 'v' }, new RegExp(`^metadata\\.${'k'.repeat(41)}:`)],
  ['a key with [', { 'a[b': 'v' }, /^metadata\.a\[b: keys must be 1 to 40 characters/],
  ['an empty key', { '': 'v' }, /^metadata\.: keys must be 1 to 40/],
  ['a 501-character value', { order_id: 'x'.repeat(501) }, /^metadata\.order_id: at most 500/],
  ['a number value', { order_id: 6735 }, /^metadata\.order_id: must be a string/],
  ['an object value', { order_id: { a: 'b' } }, /^metadata\.order_id: must be a string/],
  ['a NUL in a value', { order_id: 'a\u0000b' }, /^metadata\.order_id: .*NUL/],
  // Parsed as a body is, so that `__proto__` is a key and not the object's prototype.
  ...['__proto__', 'constructor', 'prototype'].map(
    (key): [string, Record<string, unknown>, RegExp] => [
      `the reserved key ${key}`,
      JSON.parse(`{"${key}": "v", "order_id": "1"}`) as Record<string, unknown>,
      new RegExp(`^metadata\\.${key}: is a reserved key name`),
    ],
  ),
];

describe('metadata on creation', () => {
  it('is stored and returned on the user and the wallet, and read back by get and list', async () => {
    const user = await api.post(
      '/api/v1/users/create/',
      userInput({ metadata: { crm_id: 'C-1', tier: 'gold' } }),
    );
    expect(user.status).toBe(200);
    expect(user.body.metadata).toEqual({ crm_id: 'C-1', tier: 'gold' });
    const wallet = await api.post(`/api/v1/wallets/create/${user.body.id}/`, {
      metadata: { purpose: 'savings' },
    });
    expect(wallet.status).toBe(200);
    expect(wallet.body.metadata).toEqual({ purpose: 'savings' });
    expect(await userMetadata(user.body.id)).toEqual({ crm_id: 'C-1', tier: 'gold' });
    expect(await walletMetadata(wallet.body.id)).toEqual({ purpose: 'savings' });

    const got = await api.get(`/api/v1/users/${user.body.id}/`);
    expect(got.body.metadata).toEqual({ crm_id: 'C-1', tier: 'gold' });
    const listed = await api.get(`/api/v1/users/?app_user_id=${user.body.app_user_id}`);
    expect(listed.body.data).toEqual([
      expect.objectContaining({ id: user.body.id, metadata: { crm_id: 'C-1', tier: 'gold' } }),
    ]);
    const gotWallet = await api.get(`/api/v1/wallets/${user.body.id}/`);
    expect(gotWallet.body.metadata).toEqual({ purpose: 'savings' });
    const wallets = await api.get('/api/v1/wallets/?per_page=100');
    expect(wallets.body).toContainEqual(
      expect.objectContaining({ id: wallet.body.id, metadata: { purpose: 'savings' } }),
    );
  });

  it('is {} when none is given, the wallet body staying optional', async () => {
    const { userId, walletId } = await createUserWithWallet(api);
    expect((await api.get(`/api/v1/users/${userId}/`)).body.metadata).toEqual({});
    const wallet = await api.get(`/api/v1/wallets/${userId}/`);
    expect(wallet.body).toMatchObject({ id: walletId, metadata: {} });
    expect(await walletMetadata(walletId)).toEqual({});
  });

  it.each([
    ...broken,
    ['a null value', { order_id: null }, /^metadata\.order_id: must be a string/],
  ] as const)(
    'refuses %s with 422 naming the key, writing no user',
    async (_, metadata, detail) => {
      const input = userInput({ metadata });
      const res = await api.post('/api/v1/users/create/', input);
      expect(res.status).toBe(422);
      expect(res.body.detail).toMatch(detail);
      expect(await usersNamed(input.app_user_id)).toBe(0);
    },
  );

  it('refuses a wallet with broken metadata, writing no wallet', async () => {
    const user = await api.post('/api/v1/users/create/', userInput());
    const res = await api.post(`/api/v1/wallets/create/${user.body.id}/`, {
      metadata: { order_id: null },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/^metadata\.order_id: must be a string/);
    expect((await api.get(`/api/v1/wallets/${user.body.id}/`)).status).toBe(404);
  });

  it('takes a value of exactly 500 characters and 50 keys of 40 characters', async () => {
    const metadata = Object.fromEntries(
      Array.from({ length: 50 }, (_, i) => [String(i).padStart(40, 'k'), 'x'.repeat(500)]),
    );
    const res = await api.post('/api/v1/users/create/', userInput({ metadata }));
    expect(res.status).toBe(200);
    expect(await userMetadata(res.body.id)).toEqual(metadata);
  });

  it('counts characters, not UTF-16 units, as JSON Schema and Postgres do', async () => {
    const metadata = { ['🦁'.repeat(40)]: '🦁'.repeat(500) };
    const res = await api.post('/api/v1/users/create/', userInput({ metadata }));
    expect(res.status).toBe(200);
    expect(await userMetadata(res.body.id)).toEqual(metadata);
    const over = await api.post(
      '/api/v1/users/create/',
      userInput({ metadata: { lion: '🦁'.repeat(501) } }),
    );
    expect(over.status).toBe(422);
    expect(over.body.detail).toMatch(/^metadata\.lion: at most 500 characters/);
  });
});

describe.each([
  ['user', (ids: { userId: string }) => `/api/v1/users/${ids.userId}/`, userMetadata, 'userId'],
  [
    'wallet',
    (ids: { walletId: string }) => `/api/v1/wallets/${ids.walletId}/`,
    walletMetadata,
    'walletId',
  ],
] as const)('PATCH a %s', (what, pathOf, storedOf, idKey) => {
  async function subject(metadata?: Record<string, string>) {
    const ids = await createUserWithWallet(api);
    if (metadata) {
      const res = await patch(api, pathOf(ids), { metadata });
      expect(res.status).toBe(200);
    }
    return { ids, path: pathOf(ids), id: ids[idKey] };
  }

  it('merges: adds, changes, and removes keys set to "" or null', async () => {
    const { path, id } = await subject({ a: '1', b: '2', c: '3' });
    const res = await patch(api, path, { metadata: { a: 'one', b: '', c: null, d: '4' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, metadata: { a: 'one', d: '4' } });
    expect(await storedOf(id)).toEqual({ a: 'one', d: '4' });
    const empty = await patch(api, path, { metadata: {} });
    expect(empty.status).toBe(200);
    expect(empty.body.metadata).toEqual({ a: 'one', d: '4' });
  });

  it('refuses 51 keys once merged, writing nothing', async () => {
    const { path, id } = await subject(keys(40));
    const res = await patch(api, path, { metadata: keys(11, 'n') });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/^metadata: at most 50 keys/);
    expect(await storedOf(id)).toEqual(keys(40));
    // Removing as many as it adds keeps the merged result within the limit.
    const fits = await patch(api, path, { metadata: { ...keys(10, 'n'), k0: null, k1: '' } });
    expect(fits.status).toBe(200);
    expect(Object.keys(fits.body.metadata)).toHaveLength(48);
  });

  it.each(broken)('refuses %s with 422 naming the key, writing nothing', async (_, m, detail) => {
    const { path, id } = await subject({ kept: 'yes' });
    const res = await patch(api, path, { metadata: m });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(detail);
    expect(await storedOf(id)).toEqual({ kept: 'yes' });
  });

  it.each([
    ['another field', { metadata: { a: 'b' }, name: 'x' }, /Unrecognized key/],
    ['another field alone', { is_active: false }, /metadata|Unrecognized/],
    ['no body', undefined, /^body: /],
    ['metadata that is not an object', { metadata: 'a=b' }, /^metadata: /],
  ])('refuses %s with 422, writing nothing', async (_, body, detail) => {
    const { path, id } = await subject({ kept: 'yes' });
    const res = await patch(api, path, body);
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(detail);
    expect(await storedOf(id)).toEqual({ kept: 'yes' });
  });

  it('answers 404 for a missing one and 403 for another application’s, writing nothing', async () => {
    const missing = await patch(api, pathOf({ userId: randomUUID(), walletId: randomUUID() }), {
      metadata: { a: 'b' },
    });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: expect.any(String) });
    const { path, id } = await subject({ kept: 'yes' });
    const foreign = await patch(otherApi, path, { metadata: { a: 'b' } });
    expect(foreign.status).toBe(403);
    expect(await storedOf(id)).toEqual({ kept: 'yes' });
  });

  it('keeps the key limit under concurrent merges', async () => {
    const { path, id } = await subject();
    const results = await Promise.all(
      ['x', 'y', 'z'].map((p) => patch(api, path, { metadata: keys(30, p) })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 422, 422]);
    expect(Object.keys((await storedOf(id)) ?? {})).toHaveLength(30);
  });

  it(`changes only this ${what}`, async () => {
    const first = await subject({ a: '1' });
    const second = await subject({ a: '2' });
    await patch(api, first.path, { metadata: { a: 'changed' } });
    expect(await storedOf(second.id)).toEqual({ a: '2' });
  });
});

describe('deleting a user', () => {
  it('erases the user’s and the wallet’s metadata', async () => {
    const user = await api.post(
      '/api/v1/users/create/',
      userInput({ metadata: { national_id: 'SL-123' } }),
    );
    const wallet = await api.post(`/api/v1/wallets/create/${user.body.id}/`, {
      metadata: { note: 'personal' },
    });
    expect((await api.del(`/api/v1/users/${user.body.id}/`)).status).toBe(200);
    expect(await userMetadata(user.body.id)).toBeNull();
    expect(await walletMetadata(wallet.body.id)).toBeNull();
  });
});

/** The constraint a statement broke, or null when it went through. */
async function brokenConstraint(run: () => Promise<unknown>): Promise<string | null> {
  try {
    await run();
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(CheckIntegrityConstraintViolationError);
    return (error as CheckIntegrityConstraintViolationError).constraint;
  }
}

describe('the tables’ CHECK', () => {
  it('refuses metadata breaking a limit whatever writes it', async () => {
    const { userId, walletId } = await createUserWithWallet(api);
    for (const bad of [keys(51), { a: 1 }, { ['k'.repeat(41)]: 'v' }, { 'a]': 'v' }, []]) {
      expect(
        await brokenConstraint(() =>
          engine.pool.query(
            sql.unsafe`UPDATE users SET metadata = ${sql.jsonb(bad as never)} WHERE id = ${userId}`,
          ),
        ),
      ).toBe('users_metadata_valid');
    }
    expect(
      await brokenConstraint(() =>
        engine.pool.query(
          sql.unsafe`UPDATE wallets SET metadata = ${sql.jsonb({ v: 'x'.repeat(501) })} WHERE id = ${walletId}`,
        ),
      ),
    ).toBe('wallets_metadata_valid');
    expect(await userMetadata(userId)).toEqual({});
  });
});
