import { sql } from 'slonik';
import { z } from 'zod';
import { clientFor, createFundedWallet, createUserWithWallet, transfer } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { api, live } = useTestApp(engine);
const { api: other } = useTestApp(engine);

const LIST = '/api/v1/transactions/';
const USERS = '/api/v1/users/';
const DEPOSIT = '/api/v1/transactions/wallet/mobile-money-deposit';
const SIMULATE = '/api/v1/testing/simulate-mobile-money-webhook';
const MISSING = '00000000-0000-4000-8000-000000000000';

type Transaction = { id: string; wallet_id: string; amount: number; created_at: string };
type CursorPage = { data: Transaction[]; per_page: number; has_more: boolean };

let data: {
  a: string;
  b: string;
  c: string;
  /** Oldest first: a→b 10, a→c 20.5, b→c 5, a→b 100. */
  t: [Transaction, Transaction, Transaction, Transaction];
  paid: string;
  failed: string;
  pending: string;
  reference: string;
  foreign: Transaction;
};

const ids = (body: { data: { id: string }[] }) => body.data.map((t) => t.id);
const q = encodeURIComponent;

async function list(query: string) {
  const res = await api.get(`${LIST}?${query}`);
  expect([query, res.status, res.status === 200 || res.body]).toEqual([query, 200, true]);
  return res.body as { data: Transaction[]; total?: number; has_more?: boolean };
}

async function deposit(walletId: string, amount: number, status?: 'successful' | 'failed') {
  const res = await api.post(DEPOSIT, { wallet_id: walletId, amount });
  if (res.status !== 200) throw new Error(`deposit: ${res.status} ${JSON.stringify(res.body)}`);
  const id = res.body.transaction_id as string;
  if (status) await api.post(SIMULATE, { transaction_id: id, status });
  return id;
}

beforeAll(async () => {
  const a = (await createFundedWallet(api, engine.pool, 1_000_000n)).walletId;
  const b = (await createUserWithWallet(api)).walletId;
  const c = (await createUserWithWallet(api)).walletId;
  const t: [Transaction, Transaction, Transaction, Transaction] = [
    await transfer<Transaction>(api, a, b, 10),
    await transfer<Transaction>(api, a, c, 20.5),
    await transfer<Transaction>(api, b, c, 5),
    await transfer<Transaction>(api, a, b, 100),
  ];
  const paid = await deposit(a, 30_000, 'successful');
  const failed = await deposit(b, 2050, 'failed');
  const pending = await deposit(c, 700);
  const reference = await engine.pool.oneFirst(
    sql.type(
      z.object({ provider_reference: z.string() }),
    )`SELECT provider_reference FROM transactions WHERE id = ${paid}`,
  );
  const oa = (await createFundedWallet(other, engine.pool, 100_000n)).walletId;
  const ob = (await createUserWithWallet(other)).walletId;
  const foreign = await transfer<Transaction>(other, oa, ob, 10);
  data = { a, b, c, t, paid, failed, pending, reference, foreign };
});

describe('GET /api/v1/transactions/ filters', () => {
  it('filters by one or several statuses and types', async () => {
    const [t1, t2, t3, t4] = data.t;
    expect(ids(await list('status=pending,failed'))).toEqual([data.pending, data.failed]);
    expect(ids(await list('status=failed,pending,failed'))).toEqual([data.pending, data.failed]);
    expect(ids(await list('transaction_type=transfer'))).toEqual([t4.id, t3.id, t2.id, t1.id]);
    expect(
      ids(await list('transaction_type=transfer,mobile_money_deposit&status=completed')),
    ).toEqual([data.paid, t4.id, t3.id, t2.id, t1.id]);
    expect(ids(await list('transaction_type=escrow_hold,card_deposit'))).toEqual([]);
  });

  it('filters by creation time: created[gte] inclusive, created[lt] exclusive', async () => {
    const [t1, t2, t3, t4] = data.t;
    const from = q(t2.created_at);
    const to = q(t4.created_at);
    expect(ids(await list(`created[gte]=${from}&created[lt]=${to}`))).toEqual([t3.id, t2.id]);
    expect(ids(await list(`created[lt]=${from}`))).toEqual([t1.id]);
    expect(ids(await list(`created[gte]=${to}&transaction_type=transfer`))).toEqual([t4.id]);
    // Other spellings of ISO 8601: an offset, a date alone (its start in UTC).
    expect((await list('created[gte]=2000-01-01T01:00:00%2B01:00')).total).toBe(7);
    expect((await list('created[lt]=2000-01-01')).total).toBe(0);
    expect((await list(`created[gte]=${from}&created[lt]=${from}`)).total).toBe(0);
  });

  it('filters by amount in major units, both bounds inclusive', async () => {
    const [t1, t2, , t4] = data.t;
    expect(ids(await list('amount[gte]=20.5&amount[lte]=100'))).toEqual([
      data.failed,
      t4.id,
      t2.id,
    ]);
    expect(ids(await list('amount[gte]=20.50&amount[lte]=20.5&transaction_type=transfer'))).toEqual(
      [t2.id],
    );
    expect(ids(await list('amount[lte]=5'))).toEqual([data.t[2].id]);
    expect(ids(await list('amount[gte]=300'))).toEqual([data.paid]);
    expect(ids(await list('amount[gte]=10&amount[lte]=10'))).toEqual([t1.id]);
    expect((await list('amount[gte]=0')).total).toBe(7);
  });

  it('filters by wallet (sender or recipient) and provider reference, combined with the rest', async () => {
    const [t1, t2, t3, t4] = data.t;
    expect(ids(await list(`wallet_id=${data.b}`))).toEqual([data.failed, t4.id, t3.id, t1.id]);
    expect(
      ids(
        await list(`wallet_id=${data.b}&transaction_type=transfer&amount[gte]=10&status=completed`),
      ),
    ).toEqual([t4.id, t1.id]);
    expect(
      ids(
        await list(
          `wallet_id=${data.c}&created[gte]=${q(t2.created_at)}&created[lt]=${q(t4.created_at)}`,
        ),
      ),
    ).toEqual([t3.id, t2.id]);
    // Sent and received rows merge in order, by page and by cursor.
    const byPage = [];
    for (const page of [1, 2, 3]) {
      const res = await list(`wallet_id=${data.b}&per_page=2&page=${page}`);
      expect(res.total).toBe(4);
      byPage.push(...ids(res));
    }
    expect(byPage).toEqual([data.failed, t4.id, t3.id, t1.id]);
    const byCursor = await list(`wallet_id=${data.b}&per_page=2&starting_after=${data.failed}`);
    expect(byCursor).toMatchObject({ has_more: true });
    expect(ids(byCursor)).toEqual([t4.id, t3.id]);
    const last = await list(`wallet_id=${data.b}&per_page=2&starting_after=${t3.id}`);
    expect(last).toMatchObject({ has_more: false });
    expect(ids(last)).toEqual([t1.id]);
    expect(ids(await list(`provider_reference=${q(data.reference)}`))).toEqual([data.paid]);
    expect(ids(await list(`provider_reference=${q(data.reference)}&status=failed`))).toEqual([]);
    expect(ids(await list('provider_reference=nothing-has-this'))).toEqual([]);
  });

  it('keeps other applications’ transactions out, whatever the filter', async () => {
    expect(ids(await list('transaction_type=transfer&amount[gte]=10&amount[lte]=10'))).toEqual([
      data.t[0].id,
    ]);
    const theirs = await other.get(`${LIST}?transaction_type=transfer`);
    expect(ids(theirs.body)).toEqual([data.foreign.id]);
    // A cursor of another application's or mode's answers as one that names nothing.
    for (const client of [other, live]) {
      const cursor = await client.get(`${LIST}?starting_after=${data.t[3].id}`);
      expect(cursor.status).toBe(404);
      expect(cursor.body).toEqual({
        detail: 'starting_after: no transaction of this application and mode has this id',
      });
    }
  });

  it('answers 422 naming the parameter for every malformed filter', async () => {
    const cases: [string, string][] = [
      ['status=paid', 'status'],
      ['status=completed,', 'status'],
      ['status=completed,paid', 'status'],
      ['status=', 'status'],
      ['transaction_type=deposit', 'transaction_type'],
      ['wallet_id=nope', 'wallet_id'],
      ['created[gte]=yesterday', 'created[gte]'],
      ['created[gte]=2026-02-30T00:00:00Z', 'created[gte]'],
      ['created[lt]=2026-01-01T25:00:00Z', 'created[lt]'],
      ['created[lt]=2026-01-01T10:00:00', 'created[lt]'],
      ['created[lt]=0000-01-01', 'created[lt]'],
      ['amount[gte]=-1', 'amount[gte]'],
      ['amount[gte]=1.005', 'amount[gte]'],
      ['amount[lte]=ten', 'amount[lte]'],
      ['amount[lte]=1e3', 'amount[lte]'],
      ['amount[lte]=99999999999999999999', 'amount[lte]'],
      ['provider_reference=', 'provider_reference'],
      ['starting_after=nope', 'starting_after'],
      [`starting_after=${data.t[0].id}&page=1`, 'page'],
    ];
    for (const [query, parameter] of cases) {
      const res = await api.get(`${LIST}?${query}`);
      expect([query, res.status]).toEqual([query, 422]);
      expect(Object.keys(res.body)).toEqual(['detail']);
      const detail = res.body.detail as string;
      expect([query, detail.startsWith(`${parameter}: `) || detail]).toEqual([query, true]);
    }
    const missing = await api.get(`${LIST}?starting_after=${MISSING}`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({
      detail: 'starting_after: no transaction of this application and mode has this id',
    });
    // Unknown parameters are ignored, as before.
    expect((await list('colour=blue')).total).toBe(7);
  });
});

describe('GET /api/v1/transactions/ with starting_after', () => {
  it('walks by cursor with the filters, has_more false at the end', async () => {
    const [t1, t2, t3, t4] = data.t;
    const first = await list(`transaction_type=transfer&per_page=2&starting_after=${data.paid}`);
    expect(first).toEqual({
      data: [expect.anything(), expect.anything()],
      per_page: 2,
      has_more: true,
    });
    expect(ids(first)).toEqual([t4.id, t3.id]);
    const second = await list(`transaction_type=transfer&per_page=2&starting_after=${t3.id}`);
    expect(ids(second)).toEqual([t2.id, t1.id]);
    expect(second.has_more).toBe(false);
    const end = await list(`per_page=2&starting_after=${t1.id}`);
    expect(end).toEqual({ data: [], per_page: 2, has_more: false });
    // The page envelope is unchanged without a cursor.
    expect(Object.keys(await list('per_page=2')).sort()).toEqual([
      'data',
      'page',
      'per_page',
      'total',
      'total_pages',
    ]);
  });

  it('neither repeats nor skips a transaction while payments are made during the walk', async () => {
    const before = ids(await list('per_page=100'));
    const walked: string[] = [];
    const first = await list('per_page=2');
    walked.push(...ids(first));
    let cursor = walked.at(-1)!;
    for (;;) {
      // A new payment lands between every two pages; the walk goes on from where it was.
      await transfer(api, data.a, data.c, 1);
      const page = (await list(`per_page=2&starting_after=${cursor}`)) as CursorPage;
      walked.push(...ids(page));
      if (!page.has_more) break;
      cursor = walked.at(-1)!;
    }
    expect(walked).toEqual(before);
    expect(new Set(walked).size).toBe(walked.length);
  });
});

describe('GET /api/v1/users/ filters', () => {
  const users: Record<string, string> = {};
  beforeAll(async () => {
    const make = async (key: string, body: Record<string, unknown>) => {
      const res = await api.post('/api/v1/users/create/', body);
      expect(res.status).toBe(200);
      users[key] = res.body.id;
    };
    await make('ada', {
      app_user_id: 'ext-ada',
      name: 'Ada Lovelace',
      phone_number: '+23276111111',
      email: 'Ada@Example.com',
    });
    await make('bob', {
      app_user_id: 'ext-bob',
      name: 'Bob 100%_off',
      phone_number: '+23276222222',
      email: 'bob@example.org',
      is_active: false,
    });
    await make('cy', { app_user_id: 'cy_ADA', name: 'Cy', phone_number: '+23276111111' });
    await other.post('/api/v1/users/create/', {
      app_user_id: 'ext-ada',
      name: 'Ada Other',
      phone_number: '+23276111111',
      email: 'ada@example.com',
    });
  });

  const userIds = async (query: string) => {
    const res = await api.get(`${USERS}?${query}`);
    expect([query, res.status]).toEqual([query, 200]);
    return (res.body.data as { id: string }[])
      .map((u) => u.id)
      .filter((id) => Object.values(users).includes(id));
  };

  it('filters by is_active, email, phone number and app_user_id, combinable', async () => {
    expect(await userIds('email=ada@EXAMPLE.com')).toEqual([users.ada]);
    expect(await userIds('phone_number=%2B23276111111')).toEqual([users.ada, users.cy]);
    expect(await userIds('phone_number=%2B23276111111&app_user_id=cy_ADA')).toEqual([users.cy]);
    expect(await userIds('app_user_id=ext-bob&is_active=false')).toEqual([users.bob]);
    expect(await userIds('app_user_id=ext-bob&is_active=true')).toEqual([]);
    expect(await userIds('email=nobody@example.com')).toEqual([]);
  });

  it('searches q case-insensitively in the name, email, phone number or app_user_id', async () => {
    expect(await userIds('q=ada')).toEqual([users.ada, users.cy]);
    expect(await userIds('q=LOVELACE')).toEqual([users.ada]);
    expect(await userIds('q=example.org')).toEqual([users.bob]);
    expect(await userIds('q=76222')).toEqual([users.bob]);
    // LIKE's wildcards are taken literally.
    expect(await userIds('q=100%25_')).toEqual([users.bob]);
    expect(await userIds('q=%25')).toEqual([users.bob]);
    expect(await userIds('q=_')).toEqual([users.bob, users.cy]);
    expect(await userIds('q=ada&is_active=true&phone_number=%2B23276111111')).toEqual([
      users.ada,
      users.cy,
    ]);
    // Another application's users never appear.
    const theirs = await other.get<{ data: { name: string }[] }>(`${USERS}?q=ada`);
    expect(theirs.body.data.map((u: { name: string }) => u.name)).toEqual(['Ada Other']);
  });

  it('answers 422 naming the parameter for a malformed filter', async () => {
    for (const [query, parameter] of [
      ['is_active=maybe', 'is_active'],
      ['email=', 'email'],
      ['q=', 'q'],
      [`q=${'x'.repeat(201)}`, 'q'],
      ['phone_number=', 'phone_number'],
      ['app_user_id=', 'app_user_id'],
    ]) {
      const res = await api.get(`${USERS}?${query}`);
      expect([query, res.status]).toEqual([query, 422]);
      expect((res.body.detail as string).startsWith(`${parameter}: `)).toBe(true);
    }
    expect((await clientFor(engine.url, null).get(`${USERS}?q=a`)).status).toBe(401);
  });
});
