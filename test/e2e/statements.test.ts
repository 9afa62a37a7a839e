import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  allStatementEntries,
  balanceAt,
  statementPage,
  statementSummary,
} from '../../src/db/statements';
import { findWallet } from '../../src/db/wallets';
import { assertLedgerInvariant, balanceOf, fundWallet } from '../support/database';
import { createUserWithWallet, expectError, transfer, type ApiClient } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

const engine = useTestEngine();
const { api, live } = useTestApp(engine, { currency: 'USD', settings: { feeBps: { card: 150 } } });
const { api: other } = useTestApp(engine, { currency: 'USD' });

const DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const RENT = 'Rent, "May"';
const statementOf = (walletId: string, query = '') =>
  `/api/v1/wallets/${walletId}/statement${query ? `?${query}` : ''}`;
const balanceAtPath = (walletId: string, at?: string) =>
  `/api/v1/wallets/${walletId}/balance${at ? `?at=${encodeURIComponent(at)}` : ''}`;
const window = (from: string, to: string) =>
  `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;

/** The database's clock to the millisecond, away from any entry's millisecond on either side. */
async function instant(): Promise<string> {
  await sleep(3);
  const at = await engine.pool.oneFirst(sql.type(z.object({ at: z.string() }))`
    SELECT date_trunc('milliseconds', clock_timestamp()) AS at`);
  await sleep(3);
  return at;
}

const ledgerEntryRow = z.object({
  transaction_id: z.string().nullable(),
  created_at: z.string(),
  amount: z.bigint(),
});

/** The wallet's entries as the ledger holds them, in [from, to), oldest first. */
const ledgerEntries = (walletId: string, from: string, to: string) =>
  engine.pool.any(sql.type(ledgerEntryRow)`
    SELECT lt.transaction_id, e.created_at, e.amount
    FROM ledger_entries e JOIN ledger_transactions lt ON lt.id = e.ledger_transaction_id
    WHERE e.account_id = ${walletId}
      AND e.created_at >= ${from}::timestamptz AND e.created_at < ${to}::timestamptz
    ORDER BY e.created_at, e.id`);

const entryCount = () =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM ledger_entries`);

const major = (minor: bigint) => Number(minor) / 100;

async function ok(client: ApiClient, path: string, body?: unknown) {
  const reply = body === undefined ? await client.get(path) : await client.post(path, body);
  if (reply.status !== 200)
    throw new Error(`${path}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

type Entry = {
  transaction_id: string | null;
  transaction_type: string | null;
  created_at: string;
  amount: number;
  balance_after: number;
  description: string;
};

describe('statements and balances at an instant', () => {
  // The wallet's history, built once: each step's instant and what the wallet held then.
  const held: { at: string; a: bigint; b: bigint }[] = [];
  let a = '';
  let b = '';
  let transferId = '';
  let depositId = '';
  const record = async () => {
    held.push({
      at: await instant(),
      a: await balanceOf(engine.pool, a),
      b: await balanceOf(engine.pool, b),
    });
  };

  beforeAll(async () => {
    ({ walletId: a } = await createUserWithWallet(api));
    ({ walletId: b } = await createUserWithWallet(api));
    await record(); // 0: nothing yet
    depositId = (
      await ok(api, DEPOSIT, { wallet_id: a, amount: 100, payment_method_id: 'pm_card_visa' })
    ).id;
    await record(); // 1: the card deposit
    transferId = (
      await ok(api, '/api/v1/transactions/wallet/transfer', {
        from_wallet_id: a,
        to_wallet_id: b,
        amount: 30,
        description: RENT,
      })
    ).id;
    await record(); // 2: a transfer out
    const hold = await ok(api, '/api/v1/escrow/hold', {
      wallet_id: a,
      amount: 20,
      description: 'order 17',
    });
    await record(); // 3: held in escrow
    await ok(api, `/api/v1/escrow/${hold.id}/release`, { recipient_wallet_id: b });
    await record(); // 4: released to the other wallet
    await fundWallet(engine.pool, b, 10_00n);
    await transfer(api, b, a, 15.25);
    await record(); // 5: a transfer in
    await ok(api, `/api/v1/transactions/${depositId}/refund`, { amount: 10 });
    await record(); // 6: part of the deposit refunded
    const second = await ok(api, '/api/v1/escrow/hold', { wallet_id: a, amount: 5 });
    await ok(api, `/api/v1/escrow/${second.id}/refund`, {});
    await record(); // 7: held, then given back
  });

  it('answers, at every instant between the steps, what each wallet held then', async () => {
    expect(new Set(held.map((h) => h.a)).size).toBeGreaterThan(4);
    for (const h of held) {
      for (const [id, want] of [
        [a, h.a],
        [b, h.b],
      ] as const) {
        const reply = await api.get(balanceAtPath(id, h.at));
        expect({ status: reply.status, body: reply.body }).toEqual({
          status: 200,
          body: { wallet_id: id, currency: 'USD', balance: major(want), at: h.at },
        });
      }
    }
    const now = await ok(api, balanceAtPath(a));
    expect(now).toEqual({
      wallet_id: a,
      currency: 'USD',
      balance: major(await balanceOf(engine.pool, a)),
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(Math.abs(Date.parse(now.at) - Date.now())).toBeLessThan(60_000);
    // An instant to come answers what the ledger holds now; an entry's own time counts it.
    const future = await ok(api, balanceAtPath(a, '2999-01-01T00:00:00Z'));
    expect(future).toMatchObject({ balance: now.balance, at: '2999-01-01T00:00:00.000Z' });
    const last = await ok(api, balanceAtPath(a, '9999-12-31T23:59:59.999Z'));
    expect(last).toMatchObject({ balance: now.balance, at: '9999-12-31T23:59:59.999Z' });
    const epoch = await ok(api, balanceAtPath(a, '1970-01-01'));
    expect(epoch).toMatchObject({ balance: 0, at: '1970-01-01T00:00:00.000Z' });
    const [first] = await ledgerEntries(a, held[0]!.at, held[1]!.at);
    expect((await ok(api, balanceAtPath(a, first!.created_at))).balance).toBe(major(first!.amount));
    const justBefore = new Date(Date.parse(first!.created_at) - 1).toISOString();
    expect((await ok(api, balanceAtPath(a, justBefore))).balance).toBe(0);
  });

  it('reads the statement from the ledger: opening + entries = closing, a balance after each', async () => {
    for (const [i, j] of [
      [0, 7],
      [1, 6],
      [2, 5],
      [3, 4],
    ] as const) {
      const from = held[i]!.at;
      const to = held[j]!.at;
      const body = await ok(api, statementOf(a, `${window(from, to)}&per_page=100`));
      const ledger = await ledgerEntries(a, from, to);
      const credits = ledger.filter((e) => e.amount > 0n).reduce((s, e) => s + e.amount, 0n);
      const debits = ledger.filter((e) => e.amount < 0n).reduce((s, e) => s - e.amount, 0n);
      expect(body).toMatchObject({
        wallet_id: a,
        currency: 'USD',
        from,
        to,
        opening_balance: major(held[i]!.a),
        closing_balance: major(held[j]!.a),
        total_credits: major(credits),
        total_debits: major(debits),
        page: 1,
        per_page: 100,
        total: ledger.length,
        total_pages: Math.ceil(ledger.length / 100),
      });
      expect(held[i]!.a + credits - debits).toBe(held[j]!.a);
      const entries = body.entries as Entry[];
      expect(entries.map((e) => [e.transaction_id, e.created_at, e.amount])).toEqual(
        ledger.map((e) => [e.transaction_id, e.created_at, major(e.amount)]),
      );
      let running = held[i]!.a;
      for (const [k, e] of entries.entries()) {
        running += ledger[k]!.amount;
        expect(e.balance_after).toBe(major(running));
      }
      expect(running).toBe(held[j]!.a);
    }
  });

  it('shows each entry’s payment, its type and words, credits positive and debits negative', async () => {
    const body = await ok(api, statementOf(a, `${window(held[0]!.at, held[7]!.at)}&per_page=100`));
    const entries = body.entries as Entry[];
    const types = entries.map((e) => [e.transaction_type, Math.sign(e.amount)]);
    expect(types).toEqual([
      ['card_deposit', 1],
      ['transfer', -1],
      ['escrow_hold', -1],
      ['transfer', 1],
      ['card_refund', -1],
      ['escrow_hold', -1],
      ['escrow_refund', 1],
    ]);
    // The ledger's words name the step; the payment's stand in where the ledger wrote none.
    expect(entries.map((e) => e.description)).toEqual([
      'Card deposit',
      RENT,
      'order 17',
      '',
      'Card refund: reserve',
      '',
      '',
    ]);
    expect(entries.find((e) => e.transaction_id === transferId)).toMatchObject({
      amount: -30,
      description: RENT,
    });
    expect(entries.find((e) => e.transaction_type === 'transfer' && e.amount > 0)?.amount).toBe(
      15.25,
    );
    expect(entries[0]).toMatchObject({ transaction_id: depositId, amount: 100 });
    // Every entry was written by a ledger transaction of a payment of this wallet's.
    for (const e of entries) {
      expect(e.transaction_id).toEqual(expect.any(String));
      expect(e.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    // A ledger-only movement (the test funding) has no payment record.
    const funded = await ok(api, statementOf(b, window(held[4]!.at, held[5]!.at)));
    expect(funded.entries[0]).toMatchObject({
      transaction_id: null,
      transaction_type: null,
      amount: 10,
    });
  });

  it('pages the entries oldest first; the totals and balances are the whole window’s on every page', async () => {
    const query = window(held[0]!.at, held[7]!.at);
    const whole = await ok(api, statementOf(a, `${query}&per_page=100`));
    const seen: Entry[] = [];
    for (let page = 1; page <= 4; page += 1) {
      const body = await ok(api, statementOf(a, `${query}&per_page=2&page=${page}`));
      expect(body).toMatchObject({
        opening_balance: whole.opening_balance,
        closing_balance: whole.closing_balance,
        total_credits: whole.total_credits,
        total_debits: whole.total_debits,
        page,
        per_page: 2,
        total: 7,
        total_pages: 4,
      });
      seen.push(...(body.entries as Entry[]));
    }
    expect(seen).toEqual(whole.entries);
    const beyond = await ok(api, statementOf(a, `${query}&per_page=2&page=5`));
    expect(beyond).toMatchObject({ entries: [], total: 7, closing_balance: whole.closing_balance });
  });

  it('defaults to the last 30 days; the closing balance is then the balance now', async () => {
    const body = await ok(api, statementOf(a));
    const to = Date.parse(body.to);
    expect(Math.abs(to - Date.now())).toBeLessThan(60_000);
    expect(to - Date.parse(body.from)).toBe(30 * 86_400_000);
    expect(body).toMatchObject({
      opening_balance: 0,
      closing_balance: major(await balanceOf(engine.pool, a)),
      total: 7,
    });
    const empty = await ok(api, statementOf(a, window('2001-01-01', '2001-02-01')));
    expect(empty).toMatchObject({
      from: '2001-01-01T00:00:00.000Z',
      to: '2001-02-01T00:00:00.000Z',
      opening_balance: 0,
      closing_balance: 0,
      total_credits: 0,
      total_debits: 0,
      entries: [],
      total: 0,
      total_pages: 0,
    });
    // Only `from`: up to now. Only `to`: the 30 days before it.
    const since = await ok(api, statementOf(a, `from=${encodeURIComponent(held[5]!.at)}`));
    expect(since).toMatchObject({ opening_balance: major(held[5]!.a), total: 3 });
    const until = await ok(api, statementOf(a, `to=${encodeURIComponent(held[1]!.at)}`));
    expect(Date.parse(until.to) - Date.parse(until.from)).toBe(30 * 86_400_000);
    expect(until).toMatchObject({ closing_balance: major(held[1]!.a), total: 1 });
  });

  it('answers CSV with Accept: text/csv: every entry, unpaged, quoted per RFC 4180', async () => {
    const query = `${window(held[0]!.at, held[7]!.at)}&per_page=1`;
    const json = await ok(api, statementOf(a, query.replace('per_page=1', 'per_page=100')));
    const reply = await api.get(statementOf(a, query), { Accept: 'text/csv' });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^text\/csv/);
    const text = reply.body as string;
    const lines = text.split('\r\n');
    expect(lines[0]).toBe(
      'transaction_id,transaction_type,created_at,amount,balance_after,description',
    );
    expect(lines.at(-1)).toBe('');
    expect(lines).toHaveLength(json.entries.length + 2);
    const money = (n: number) => n.toFixed(2);
    const quoted = (s: string) => (/[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
    expect(lines.slice(1, -1)).toEqual(
      (json.entries as Entry[]).map((e) =>
        [
          e.transaction_id ?? '',
          e.transaction_type ?? '',
          e.created_at,
          money(e.amount),
          money(e.balance_after),
          quoted(e.description),
        ].join(','),
      ),
    );
    expect(text).toContain(`,-30.00,`);
    expect(text).toContain(`,"Rent, ""May"""\r\n`);
    const widest = await ok(api, statementOf(a, window('1970-01-01', '9999-12-31T23:59:59.999Z')));
    expect(widest).toMatchObject({
      opening_balance: 0,
      closing_balance: major(await balanceOf(engine.pool, a)),
      total: 7,
    });
    // An empty window: the header alone.
    const empty = await api.get(statementOf(a, window('2001-01-01', '2001-02-01')), {
      Accept: 'text/csv',
    });
    expect(empty.body).toBe(
      'transaction_id,transaction_type,created_at,amount,balance_after,description\r\n',
    );
  });

  it('refuses a wallet that does not exist (404) and another application’s or mode’s (403)', async () => {
    for (const path of [statementOf, (id: string) => balanceAtPath(id)]) {
      expectError(await api.get(path('00000000-0000-4000-8000-000000000000')), 404);
      expectError(await api.get(path('not-a-wallet')), 404);
      expect(expectError(await other.get(path(a)), 403)).toMatch(/permission/);
      expectError(await live.get(path(a)), 403);
    }
  });

  it('refuses a malformed from, to or at, and from not before to (422), writing nothing', async () => {
    const before = await entryCount();
    const cases: [string, RegExp][] = [
      [statementOf(a, 'from=yesterday'), /^from: must be an ISO 8601 time/],
      [statementOf(a, 'to=2026-02-30'), /^to: must be an ISO 8601 time/],
      [statementOf(a, 'from=2026-01-01T25:00:00Z'), /^from: /],
      [statementOf(a, 'to=2026-01-01T10:00:00'), /^to: /],
      [statementOf(a, window('2026-02-01', '2026-01-01')), /^from must be before to$/],
      [statementOf(a, window('2026-01-01', '2026-01-01')), /^from must be before to$/],
      [statementOf(a, 'from=2999-01-01'), /^from must be before to, which defaults to now/],
      [statementOf(a, 'per_page=0'), /per_page/],
      [balanceAtPath(a, 'soon'), /^at: must be an ISO 8601 time/],
      [balanceAtPath(a, '2026-13-01T00:00:00Z'), /^at: /],
    ];
    for (const [path, detail] of cases) {
      expect(expectError(await api.get(path), 422)).toMatch(detail);
    }
    expectError(await api.get(statementOf(a, 'from=nope'), { Accept: 'text/csv' }), 422);
    expect(await entryCount()).toBe(before);
  });

  it('reads the same from either side of an instant, and the CSV’s batches join up', async () => {
    const wallet = (await findWallet(engine.pool, a))!;
    const far = new Date('2999-01-01T00:00:00Z');
    for (const h of held) {
      const at = new Date(h.at);
      // `now` far ahead sums the entries before the instant; `now` at it, those after.
      expect(await balanceAt(engine.pool, wallet, at, far)).toBe(h.a);
      expect(await balanceAt(engine.pool, wallet, at, at)).toBe(h.a);
    }
    const window = { from: new Date(held[1]!.at), to: new Date(held[7]!.at) };
    const before = await statementSummary(engine.pool, wallet, window, far);
    const after = await statementSummary(engine.pool, wallet, window, window.to);
    expect(after).toEqual(before);
    expect(before).toMatchObject({ opening: held[1]!.a, closing: held[7]!.a, count: 6 });
    const { summary, entries: page } = await statementPage(
      engine.pool,
      wallet,
      window,
      { limit: 100, offset: 0 },
      far,
    );
    expect(summary).toEqual(before);
    expect(page).toHaveLength(6);
    const batches = [];
    for await (const batch of allStatementEntries(engine.pool, a, window, before.opening, 4)) {
      batches.push(batch);
    }
    expect(batches.map((batch) => batch.length)).toEqual([4, 2]);
    expect(batches.flat()).toEqual(page);
  });

  it('holds opening + entries = closing on every page read while payments commit', async () => {
    const { walletId: c } = await createUserWithWallet(api);
    await fundWallet(engine.pool, c, 100_00n);
    const query = `${window('2001-01-01', '2999-01-01')}&per_page=100`;
    let paying = true;
    const payments = (async () => {
      try {
        for (let i = 0; i < 12; i += 1) await transfer(api, c, i % 2 ? a : b, 1.25);
      } finally {
        paying = false;
      }
    })();
    let reads = 0;
    while (paying || reads < 4) {
      // From the start, the opening sums the entries before it; from a moment ago, it is the
      // stored balance less the entries since: both read in the page's one snapshot.
      const recent = new Date(Date.now() - 150).toISOString();
      const path = reads % 2 ? statementOf(c, query) : statementOf(c, window(recent, '2999-01-01'));
      const body = await ok(api, path);
      const entries = body.entries as Entry[];
      const sum = entries.reduce((total, e) => total + Math.round(e.amount * 100), 0);
      expect(Math.round(body.opening_balance * 100) + sum).toBe(
        Math.round(body.closing_balance * 100),
      );
      expect(entries.at(-1)?.balance_after ?? body.opening_balance).toBe(body.closing_balance);
      expect(body.total).toBe(entries.length);
      reads += 1;
    }
    await payments;
    expect(reads).toBeGreaterThan(3);
    const settled = await ok(api, statementOf(c, query));
    expect(settled).toMatchObject({ total: 13, opening_balance: 0, closing_balance: 85 });
  });

  it('keeps the ledger balanced through it all', async () => {
    await assertLedgerInvariant(engine.pool);
  });
});
