import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createFundedWallet,
  createUserWithWallet,
  expectError,
  TRANSFER,
  type ApiClient,
} from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { onboardForPayouts } from '../support/payouts';
import { pollUntil } from '../support/wait';

/**
 * Merchant metadata on payments (docs/api.md, Metadata):
 * accepted by every POST that moves money, written with the payment row, shown on its record,
 * in its events, merged by PATCH, and searched by the lists and the export.
 */

const engine = useTestEngine();
const { app, api } = useTestApp(engine);
const { api: other } = useTestApp(engine);

jest.setTimeout(60_000);

const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const CARD_DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const SIMULATE = '/api/v1/testing/simulate-mobile-money-webhook';
const CASHOUT = '/api/v1/transactions/wallet/mobile-money-cashout';
const PAYOUT = '/api/v1/transactions/wallet/card-payout';
const HOLD = '/api/v1/escrow/hold';
const DISPUTE = '/api/v1/testing/simulate-dispute';
const LIST = '/api/v1/transactions/';
const EXPORT = '/api/v1/transactions/export';
const USERS = '/api/v1/users/';
const MISSING = '00000000-0000-4000-8000-000000000000';

const metadataRow = z.object({ merchant_metadata: z.record(z.string(), z.string()) });

async function storedMetadata(transactionId: string) {
  const row = await engine.pool.maybeOne(
    sql.type(metadataRow)`SELECT merchant_metadata FROM transactions WHERE id = ${transactionId}`,
  );
  return row?.merchant_metadata ?? null;
}

/** The `data` of the payment's (or dispute's) event of this type, once written. */
async function eventData(id: string, type: string): Promise<Record<string, unknown> | null> {
  return pollUntil(
    () =>
      engine.pool.maybeOneFirst(sql.type(z.object({ data: z.record(z.string(), z.unknown()) }))`
        SELECT data FROM events WHERE transaction_id = ${id} AND type = ${type}`),
    (data) => data !== null,
  );
}

/** Every payment row of the application, for a check that nothing was written. */
const paymentCount = () =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM transactions WHERE application_id = ${app.id}`);

const funded = async (minor = 100_000n) =>
  (await createFundedWallet(api, engine.pool, minor)).walletId;

async function cardDeposit(metadata?: Record<string, string>, amount = 20) {
  const { walletId } = await createUserWithWallet(api);
  const res = await api.post(CARD_DEPOSIT, {
    wallet_id: walletId,
    amount,
    payment_method_id: 'pm_card_visa',
    ...(metadata && { metadata }),
  });
  expect([res.status, res.body.status]).toEqual([200, 'completed']);
  return res.body as { id: string; wallet_id: string; metadata: Record<string, string> };
}

type Made = {
  /** The answer's record (a deposit's sits in `transaction`). */
  record: Record<string, unknown>;
  /** The payment row (or dispute) and the event that must carry the metadata. */
  id: string;
  event: string;
};

/** How each POST that moves money is made with `metadata`, and which event then tells of it. */
const MONEY_POSTS: Record<string, (metadata: Record<string, string>) => Promise<Made>> = {
  transfer: async (metadata) => {
    const to = (await createUserWithWallet(api)).walletId;
    const res = await api.post(TRANSFER, {
      from_wallet_id: await funded(),
      to_wallet_id: to,
      amount: 2.5,
      metadata,
    });
    expect(res.status).toBe(200);
    return { record: res.body, id: res.body.id, event: 'transfer.completed' };
  },
  'mobile-money deposit': async (metadata) => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(DEPOSIT, { wallet_id: walletId, amount: 5_000, metadata });
    expect(res.status).toBe(200);
    const id = res.body.transaction_id as string;
    const paid = await api.post(SIMULATE, { transaction_id: id, status: 'successful' });
    expect(paid.body.status).toBe('completed');
    return { record: res.body.transaction, id, event: 'deposit.completed' };
  },
  'card deposit': async (metadata) => {
    const deposit = await cardDeposit(metadata);
    return { record: deposit, id: deposit.id, event: 'deposit.completed' };
  },
  'escrow hold': async (metadata) => {
    const res = await api.post(HOLD, { wallet_id: await funded(), amount: 30, metadata });
    expect(res.status).toBe(200);
    return { record: res.body, id: res.body.id, event: 'escrow.held' };
  },
  'escrow release': async (metadata) => {
    const hold = await api.post(HOLD, {
      wallet_id: await funded(),
      amount: 12,
      metadata: { of: 'the hold' },
    });
    const recipient = (await createUserWithWallet(api)).walletId;
    const res = await api.post(`/api/v1/escrow/${hold.body.id}/release`, {
      recipient_wallet_id: recipient,
      metadata,
    });
    expect(res.status).toBe(200);
    return { record: res.body, id: res.body.id, event: 'escrow.released' };
  },
  'escrow refund': async (metadata) => {
    const hold = await api.post(HOLD, { wallet_id: await funded(), amount: 7 });
    const res = await api.post(`/api/v1/escrow/${hold.body.id}/refund`, { metadata });
    expect(res.status).toBe(200);
    return { record: res.body, id: res.body.id, event: 'escrow.refunded' };
  },
  'mobile-money cashout': async (metadata) => {
    const res = await api.post(CASHOUT, {
      wallet_id: await funded(),
      amount: 2_000,
      phone_number: '+23276123456',
      metadata,
    });
    expect(res.status).toBe(200);
    const settled = await api.post(SIMULATE, { transaction_id: res.body.id, status: 'successful' });
    expect(settled.body.status).toBe('completed');
    return { record: res.body, id: res.body.id, event: 'cashout.completed' };
  },
  'card payout': async (metadata) => {
    const walletId = await funded();
    expect((await onboardForPayouts(api, walletId)).status).toBe(200);
    const res = await api.post(PAYOUT, { wallet_id: walletId, amount: 25, metadata });
    expect(res.status).toBe(200);
    return { record: res.body, id: res.body.id, event: 'payout.completed' };
  },
  'card refund': async (metadata) => {
    const deposit = await cardDeposit({ of: 'the deposit' });
    const res = await api.post(`/api/v1/transactions/${deposit.id}/refund`, {
      amount: 5,
      metadata,
    });
    expect(res.status).toBe(200);
    return { record: res.body, id: res.body.id, event: 'refund.completed' };
  },
};

describe('metadata on every POST that moves money', () => {
  it.each(Object.keys(MONEY_POSTS))(
    '%s: on the record, in the row, on GET and in the event',
    async (kind) => {
      const metadata = { order_id: `o-${randomUUID()}`, note: 'ünïcode ✓' };
      const made = await MONEY_POSTS[kind]!(metadata);
      expect(made.record.metadata).toEqual(metadata);
      expect(await storedMetadata(made.id)).toEqual(metadata);
      const got = await api.get(`/api/v1/transactions/${made.id}`);
      expect(got.body.metadata).toEqual(metadata);
      const data = await eventData(made.id, made.event);
      expect(data).toMatchObject({ id: made.id, metadata });
    },
  );

  it('answers {} where none was given, and a release or refund does not copy the hold’s', async () => {
    const to = (await createUserWithWallet(api)).walletId;
    const res = await api.post(TRANSFER, {
      from_wallet_id: await funded(),
      to_wallet_id: to,
      amount: 1,
    });
    expect(res.body.metadata).toEqual({});
    expect((await eventData(res.body.id, 'transfer.completed'))?.metadata).toEqual({});
    const hold = await api.post(HOLD, {
      wallet_id: await funded(),
      amount: 9,
      recipient_wallet_id: to,
      metadata: { order_id: 'held' },
    });
    const release = await api.post(`/api/v1/escrow/${hold.body.id}/release`, { amount: 4 });
    expect(release.body.metadata).toEqual({});
    const refund = await api.post(`/api/v1/escrow/${hold.body.id}/refund`);
    expect(refund.body.metadata).toEqual({});
    expect((await api.get(`/api/v1/escrow/${hold.body.id}`)).body.metadata).toEqual({
      order_id: 'held',
    });
  });

  it('a simulated dispute: on the Dispute, its reserve record and its events', async () => {
    const deposit = await cardDeposit();
    const metadata = { case_ref: 'CB-77' };
    const opened = await api.post(DISPUTE, { transaction_id: deposit.id, metadata });
    expect(opened.status).toBe(200);
    expect(opened.body.metadata).toEqual(metadata);
    expect((await api.get(`/api/v1/disputes/${opened.body.id}`)).body.metadata).toEqual(metadata);
    const stored = await engine.pool.oneFirst(
      sql.type(
        z.object({ metadata: z.record(z.string(), z.string()) }),
      )`SELECT metadata FROM disputes WHERE id = ${opened.body.id}`,
    );
    expect(stored).toEqual(metadata);
    // The reserve's record is the dispute's id.
    expect(await storedMetadata(opened.body.id)).toEqual(metadata);
    expect(await eventData(opened.body.id, 'dispute.created')).toMatchObject({ metadata });
    const closed = await api.post('/api/v1/testing/simulate-dispute-outcome', {
      dispute_id: opened.body.id,
      status: 'won',
    });
    expect(closed.body.metadata).toEqual(metadata);
    expect(await eventData(opened.body.id, 'dispute.won')).toMatchObject({ metadata });
    const plain = await api.post(DISPUTE, { transaction_id: (await cardDeposit()).id });
    expect(plain.body.metadata).toEqual({});
  });
});

describe('metadata validated at the edge', () => {
  /** Each POST with a body whose metadata breaks a rule: the key, then the whole body. */
  async function bodies(): Promise<[string, string, Record<string, unknown>][]> {
    const from = await funded();
    const to = (await createUserWithWallet(api)).walletId;
    const hold = await api.post(HOLD, { wallet_id: from, amount: 5 });
    const deposit = await cardDeposit();
    return [
      [TRANSFER, 'transfer', { from_wallet_id: from, to_wallet_id: to, amount: 1 }],
      [DEPOSIT, 'deposit', { wallet_id: to, amount: 5_000 }],
      [CARD_DEPOSIT, 'card', { wallet_id: to, amount: 5, payment_method_id: 'pm_card_visa' }],
      [HOLD, 'hold', { wallet_id: from, amount: 1 }],
      [`/api/v1/escrow/${hold.body.id}/release`, 'release', { recipient_wallet_id: to }],
      [`/api/v1/escrow/${hold.body.id}/refund`, 'refund', {}],
      [CASHOUT, 'cashout', { wallet_id: from, amount: 2_000, phone_number: '+23276123456' }],
      [PAYOUT, 'payout', { wallet_id: from, amount: 1 }],
      [`/api/v1/transactions/${deposit.id}/refund`, 'card refund', { amount: 1 }],
      [DISPUTE, 'dispute', { transaction_id: deposit.id }],
    ];
  }

  it('a null value, a bad key or a number: 422 naming the key, nothing written', async () => {
    const cases = await bodies();
    const before = await paymentCount();
    const disputes = () =>
      engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM disputes WHERE application_id = ${app.id}`);
    const disputesBefore = await disputes();
    for (const [path, what, body] of cases) {
      for (const [metadata, named] of [
        [{ order_id: null }, /^metadata\.order_id: must be a string/],
        [{ 'a[b': 'v' }, /^metadata\.a\[b: keys must be 1 to 40 characters/],
        [{ order_id: 6735 }, /^metadata\.order_id: must be a string/],
        [{ ok: 'v', long: 'x'.repeat(501) }, /^metadata\.long: at most 500 characters/],
      ] as const) {
        const res = await api.post(
          path,
          { ...body, metadata },
          { 'Idempotency-Key': randomUUID() },
        );
        expect([what, res.status]).toEqual([what, 422]);
        expect([what, expectError(res, 422)]).toEqual([what, expect.stringMatching(named)]);
      }
    }
    expect(await paymentCount()).toBe(before);
    expect(await disputes()).toBe(disputesBefore);
  });

  it('a declined transfer with metadata writes nothing', async () => {
    const from = (await createUserWithWallet(api)).walletId;
    const to = (await createUserWithWallet(api)).walletId;
    const before = await paymentCount();
    const res = await api.post(TRANSFER, {
      from_wallet_id: from,
      to_wallet_id: to,
      amount: 50,
      metadata: { order_id: 'declined' },
    });
    expectError(res, 400);
    expect(await paymentCount()).toBe(before);
    const found = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM transactions
      WHERE merchant_metadata @> ${sql.jsonb({ order_id: 'declined' })}`);
    expect(found).toBe(0);
  });

  it('a declined card keeps its failed record with the metadata it was asked with', async () => {
    const { walletId } = await createUserWithWallet(api);
    const res = await api.post(CARD_DEPOSIT, {
      wallet_id: walletId,
      amount: 5,
      payment_method_id: 'pm_card_chargeDeclined',
      metadata: { order_id: 'card-declined' },
    });
    expectError(res, 400);
    const rows = await engine.pool.any(sql.type(z.object({ id: z.string(), status: z.string() }))`
      SELECT id, status FROM transactions
      WHERE wallet_id = ${walletId} AND merchant_metadata = ${sql.jsonb({ order_id: 'card-declined' })}`);
    expect(rows.map((r) => r.status)).toEqual(['failed']);
    expect(await eventData(rows[0]!.id, 'deposit.failed')).toMatchObject({
      metadata: { order_id: 'card-declined' },
    });
  });
});

describe('metadata and a deleted user', () => {
  it('is erased from the payments their wallet made, which stay', async () => {
    const { userId, walletId } = await createFundedWallet(api, engine.pool, 100n);
    const to = (await createUserWithWallet(api)).walletId;
    const res = await api.post(TRANSFER, {
      from_wallet_id: walletId,
      to_wallet_id: to,
      amount: 1,
      metadata: { email: 'payer@example.com' },
    });
    expect(res.status).toBe(200);
    expect((await api.del(`/api/v1/users/${userId}/`)).status).toBe(200);
    expect(await storedMetadata(res.body.id)).toEqual({});
    expect((await api.get(`/api/v1/transactions/${res.body.id}`)).body).toMatchObject({
      amount: 1,
      metadata: {},
    });
  });
});

describe('metadata and Idempotency-Key', () => {
  it('a retry with the same body answers the first; with other metadata it is refused', async () => {
    const from = await funded();
    const to = (await createUserWithWallet(api)).walletId;
    const key = randomUUID();
    const body = { from_wallet_id: from, to_wallet_id: to, amount: 3, metadata: { a: '1' } };
    const first = await api.post(TRANSFER, body, { 'Idempotency-Key': key });
    expect(first.status).toBe(200);
    const again = await api.post(
      TRANSFER,
      { metadata: { a: '1' }, amount: 3, to_wallet_id: to, from_wallet_id: from },
      { 'Idempotency-Key': key },
    );
    expect(again).toMatchObject({ status: 200, body: first.body });
    const changed = await api.post(
      TRANSFER,
      { ...body, metadata: { a: '2' } },
      { 'Idempotency-Key': key },
    );
    expect(expectError(changed, 422)).toMatch(/Idempotency-Key was already used/);
    expect(await storedMetadata(first.body.id)).toEqual({ a: '1' });
  });
});

describe('PATCH /api/v1/transactions/{transaction_id}', () => {
  const patch = (client: ApiClient, id: string, body: unknown) =>
    client.request('PATCH', `/api/v1/transactions/${id}`, { body });

  async function payment(metadata: Record<string, string>) {
    const to = (await createUserWithWallet(api)).walletId;
    const res = await api.post(TRANSFER, {
      from_wallet_id: await funded(),
      to_wallet_id: to,
      amount: 1,
      metadata,
    });
    expect(res.status).toBe(200);
    return res.body as { id: string; updated_at: string; amount: number; status: string };
  }

  it('merges: new keys added, "" and null remove, and answers the record', async () => {
    const t = await payment({ keep: 'k', drop: 'd', blank: 'b' });
    const res = await patch(api, t.id, {
      metadata: { added: 'a', keep: 'k2', drop: null, blank: '', absent: null },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: t.id, amount: t.amount, status: t.status });
    expect(res.body.metadata).toEqual({ keep: 'k2', added: 'a' });
    expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(t.updated_at));
    expect(await storedMetadata(t.id)).toEqual({ keep: 'k2', added: 'a' });
    expect((await api.get(`/api/v1/transactions/${t.id}`)).body.metadata).toEqual({
      keep: 'k2',
      added: 'a',
    });
    // The engine's own facts are another column: untouched, never shown.
    expect(res.body).not.toHaveProperty('merchant_metadata');
  });

  it('limits apply to the merged result: 51 keys is 422 and nothing written', async () => {
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
    const t = await payment(fifty);
    const res = await patch(api, t.id, { metadata: { one_more: 'v' } });
    expect(expectError(res, 422)).toBe('metadata: at most 50 keys once merged');
    expect(await storedMetadata(t.id)).toEqual(fifty);
    // Replacing one keeps 50: allowed.
    const swapped = await patch(api, t.id, { metadata: { k0: null, one_more: 'v' } });
    expect(swapped.status).toBe(200);
    expect(Object.keys(swapped.body.metadata)).toHaveLength(50);
  });

  it('anything but metadata, bad metadata, or no body: 422; nothing written', async () => {
    const t = await payment({ a: '1' });
    for (const [body, named] of [
      [{ metadata: { b: '2' }, amount: 5 }, /amount/],
      [{ description: 'x' }, /description|metadata/],
      [{ metadata: { 'x]': 'v' } }, /^metadata\.x\]: keys must be/],
      [{ metadata: { b: 7 } }, /^metadata\.b: must be a string/],
      [{ metadata: 'a=1' }, /^metadata: /],
      [{}, /^metadata: /],
    ] as const) {
      expect(expectError(await patch(api, t.id, body), 422)).toMatch(named);
    }
    expect(await storedMetadata(t.id)).toEqual({ a: '1' });
  });

  it('404 for an unknown id, 403 for another application’s payment', async () => {
    expectError(await patch(api, MISSING, { metadata: { a: '1' } }), 404);
    expectError(await patch(api, 'not-an-id', { metadata: { a: '1' } }), 404);
    const t = await payment({ a: '1' });
    expectError(await patch(other, t.id, { metadata: { a: '2' } }), 403);
    expect(await storedMetadata(t.id)).toEqual({ a: '1' });
  });

  it('sends no event', async () => {
    const t = await payment({ a: '1' });
    const before = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM events WHERE transaction_id = ${t.id}`);
    expect((await patch(api, t.id, { metadata: { a: '2' } })).status).toBe(200);
    const after = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM events WHERE transaction_id = ${t.id}`);
    expect(after).toBe(before);
  });
});

describe('metadata[KEY]=VALUE filters', () => {
  const tag = `run-${randomUUID().slice(0, 8)}`;
  let data: { a: string; b: string; t: string[]; users: string[] };
  const q = encodeURIComponent;
  const ids = (body: { data: { id: string }[] }) => body.data.map((t) => t.id);

  async function list(client: ApiClient, path: string, query: string) {
    const res = await client.get(`${path}?${query}`);
    expect([query, res.status, res.status === 200 || res.body]).toEqual([query, 200, true]);
    return res.body as { data: { id: string }[]; has_more?: boolean; total?: number };
  }

  beforeAll(async () => {
    const a = await funded(1_000_000n);
    const b = (await createUserWithWallet(api)).walletId;
    const send = async (metadata: Record<string, string>, amount = 1) => {
      const res = await api.post(TRANSFER, {
        from_wallet_id: a,
        to_wallet_id: b,
        amount,
        metadata,
      });
      expect(res.status).toBe(200);
      return res.body.id as string;
    };
    // Oldest first.
    const t = [
      await send({ run: tag, order: '1', shop: 'north' }),
      await send({ run: tag, order: '2', shop: 'south' }, 7),
      await send({ run: tag, order: '3', shop: 'north' }, 7),
      await send({ run: tag, order: '4', shop: 'north' }),
      await send({ other: tag }),
    ];
    const users: string[] = [];
    for (const [i, metadata] of [
      { run: tag, tier: 'gold' },
      { run: tag, tier: 'silver' },
    ].entries()) {
      const res = await api.post('/api/v1/users/create/', {
        app_user_id: `meta-${tag}-${i}`,
        name: 'Metadata Search',
        phone_number: '+23276111111',
        metadata,
      });
      expect(res.status).toBe(200);
      users.push(res.body.id as string);
    }
    data = { a, b, t, users };
  });

  it('on the transactions list: exact, several ANDed, with the other filters', async () => {
    const [t1, t2, t3, t4, t5] = data.t;
    expect(ids(await list(api, LIST, `metadata[run]=${tag}`))).toEqual([t4, t3, t2, t1]);
    expect(ids(await list(api, LIST, `metadata[other]=${tag}`))).toEqual([t5]);
    expect(ids(await list(api, LIST, `metadata[run]=${tag}&metadata[shop]=north`))).toEqual([
      t4,
      t3,
      t1,
    ]);
    expect(
      ids(await list(api, LIST, `metadata[run]=${tag}&metadata[shop]=north&amount[gte]=5`)),
    ).toEqual([t3]);
    expect(
      ids(
        await list(
          api,
          LIST,
          `metadata[run]=${tag}&transaction_type=transfer&status=completed&wallet_id=${data.b}`,
        ),
      ),
    ).toEqual([t4, t3, t2, t1]);
    // Exact: neither a prefix nor another case matches.
    expect(ids(await list(api, LIST, `metadata[shop]=nort&metadata[run]=${tag}`))).toEqual([]);
    expect(ids(await list(api, LIST, `metadata[SHOP]=north&metadata[run]=${tag}`))).toEqual([]);
    expect(ids(await list(api, LIST, `metadata[run]=${q(`${tag} `)}`))).toEqual([]);
    // Another application's list never sees these.
    expect(ids(await list(other, LIST, `metadata[run]=${tag}`))).toEqual([]);
    const page = await list(api, LIST, `metadata[run]=${tag}&per_page=3`);
    expect(page.total).toBe(4);
  });

  it('pages by cursor with the filters', async () => {
    const [t1, t2, t3, t4] = data.t;
    const first = await list(api, LIST, `metadata[run]=${tag}&per_page=2&starting_after=${t4}`);
    expect([ids(first), first.has_more]).toEqual([[t3, t2], true]);
    const second = await list(
      api,
      LIST,
      `metadata[run]=${tag}&per_page=2&starting_after=${first.data[1]!.id}`,
    );
    expect([ids(second), second.has_more]).toEqual([[t1], false]);
    const north = await list(
      api,
      LIST,
      `metadata[run]=${tag}&metadata[shop]=north&per_page=1&starting_after=${t4}`,
    );
    expect([ids(north), north.has_more]).toEqual([[t3], true]);
  });

  it.each(['__proto__', 'constructor', 'prototype'])(
    'refuses the reserved key %s as a filter with 422 naming it, on lists and the export',
    async (key) => {
      const name = `metadata.${key}: is a reserved key name (__proto__, constructor, prototype)`;
      for (const path of [LIST, EXPORT, USERS]) {
        const res = await api.get(`${path}?metadata[${key}]=x&metadata[run]=${tag}`);
        expect({ path, status: res.status, body: res.body }).toEqual({
          path,
          status: 422,
          body: { detail: name },
        });
      }
    },
  );

  it('a PATCH is what the filter then finds', async () => {
    const t = data.t[4]!;
    const res = await api.request('PATCH', `/api/v1/transactions/${t}`, {
      body: { metadata: { patched: tag } },
    });
    expect(res.status).toBe(200);
    expect(ids(await list(api, LIST, `metadata[patched]=${tag}`))).toEqual([t]);
    await api.request('PATCH', `/api/v1/transactions/${t}`, {
      body: { metadata: { patched: '' } },
    });
    expect(ids(await list(api, LIST, `metadata[patched]=${tag}`))).toEqual([]);
  });

  it('on the export: the same filter, and the metadata column as a JSON object', async () => {
    const [t1, t2, t3, t4] = data.t;
    const res = await api.get(`${EXPORT}?metadata[run]=${tag}&metadata[shop]=north`);
    expect(res.status).toBe(200);
    const lines = (res.body as string).split('\r\n').filter((l) => l !== '');
    expect(lines).toHaveLength(4);
    const rows = lines.slice(1).map((line) => {
      // The metadata column is the last, one quoted JSON object (RFC 4180 doubles its quotes).
      const at = line.indexOf(',"{');
      return {
        id: line.slice(0, line.indexOf(',')),
        metadata: JSON.parse(line.slice(at + 2, -1).replace(/""/g, '"')) as unknown,
      };
    });
    expect(rows.map((r) => r.id)).toEqual([t4, t3, t1]);
    expect(rows[1]!.metadata).toEqual({ run: tag, order: '3', shop: 'north' });
    expect(t2).toBeDefined();
    expectError(await api.get(`${EXPORT}?metadata[]=x`), 422);
  });

  it('on the users list, with its other filters', async () => {
    const [gold, silver] = data.users;
    expect(ids(await list(api, USERS, `metadata[run]=${tag}`))).toEqual([gold, silver]);
    expect(ids(await list(api, USERS, `metadata[run]=${tag}&metadata[tier]=silver`))).toEqual([
      silver,
    ]);
    expect(ids(await list(api, USERS, `metadata[tier]=gold&q=${q(`meta-${tag}`)}`))).toEqual([
      gold,
    ]);
    expect(ids(await list(api, USERS, `metadata[tier]=gold&is_active=false`))).toEqual([]);
    expect(ids(await list(other, USERS, `metadata[run]=${tag}`))).toEqual([]);
  });

  it.each([
    ['an empty key', 'metadata[]=x', /^metadata\.: keys must be 1 to 40/],
    ['a 41-character key', `metadata[${'k'.repeat(41)}]=x`, /^metadata\.k{41}: keys must be/],
    ['a [ in the key', 'metadata[a[b]=x', /^metadata\.a\[b: keys must be/],
    ['a ] in the key', 'metadata[a]b]=x', /^metadata\.a\]b: keys must be/],
    ['no closing bracket', 'metadata[ab=x', /^metadata\.\[ab: keys must be/],
    ['a key given twice', 'metadata[a]=1&metadata[a]=2', /^metadata\.a: must be given once/],
    ['metadata without a key', 'metadata=x', /^metadata: must be given as metadata\[KEY\]=VALUE/],
  ])('%s: 422 naming it, on both lists and the export', async (_, query, named) => {
    for (const path of [LIST, USERS, EXPORT]) {
      expect([path, expectError(await api.get(`${path}?${query}`), 422)]).toEqual([
        path,
        expect.stringMatching(named),
      ]);
    }
  });
});
