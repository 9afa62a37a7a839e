import { randomBytes } from 'node:crypto';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { sql } from 'slonik';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import {
  createWalletClient,
  verifyWebhook,
  WalletApiError,
  WebhookVerificationError,
  type WalletClient,
} from '../../clients/typescript/src/index';
import { assertLedgerInvariant, balanceOf, fundWallet } from '../support/database';
import { useTestApp, useTestEngine } from '../support/hooks';
import { startReceiver, type Receiver } from '../support/webhook-receiver';

const engine = useTestEngine({
  env: { WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32', EXPORT_BATCH_ROWS: '2' },
});
const { app } = useTestApp(engine);

const TRANSFER = '/api/v1/transactions/wallet/transfer';
const EXPORT_HEADER =
  'id,created_at,transaction_type,status,amount,currency,application_fee,provider_fee,' +
  'wallet_id,recipient_wallet_id,description,provider_reference,metadata';

/** The client as a merchant makes it: the base URL and a Test Mode credential. */
function clientAt(baseUrl = engine.url): WalletClient {
  return createWalletClient({
    baseUrl,
    apiKey: app.credentials.test.apiKey,
    secretKey: app.credentials.test.secretKey,
    retry: { baseDelayMs: 50 },
  });
}

async function userWithWallet(client: WalletClient, name = 'Client User') {
  const user = await client.post('/api/v1/users/create/', {
    body: {
      app_user_id: `client-${randomBytes(6).toString('hex')}`,
      name,
      phone_number: '+23276000000',
    },
  });
  const wallet = await client.post('/api/v1/wallets/create/{user_id}/', {
    params: { path: { user_id: user.id } },
  });
  return { user, wallet };
}

const ledgerTransactionsOf = (walletId: string) =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(DISTINCT ledger_transaction_id)::int AS n FROM ledger_entries
    WHERE account_id = ${walletId}`);

describe('the TypeScript client against the real API', () => {
  it('takes a first payment: a user, a wallet and a sandbox mobile-money deposit credited', async () => {
    const client = clientAt();
    const { user, wallet } = await userWithWallet(client, 'Aminata Kamara');
    expect(user).toMatchObject({ name: 'Aminata Kamara', is_active: true });
    expect(wallet).toMatchObject({ user_id: user.id, balance: 0 });

    const deposit = await client.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      body: { wallet_id: wallet.id, amount: 10_000 },
    });
    expect(deposit.transaction).toMatchObject({ wallet_id: wallet.id, status: 'pending' });
    const paid = await client.post('/api/v1/testing/simulate-mobile-money-webhook', {
      body: { transaction_id: deposit.transaction_id, status: 'successful' },
    });
    expect(paid).toMatchObject({ transaction_id: deposit.transaction_id, status: 'completed' });
    expect(await balanceOf(engine.pool, wallet.id)).toBe(10_000n);
    const read = await client.get('/api/v1/wallets/{wallet_id}/balance', {
      params: { path: { wallet_id: wallet.id } },
    });
    expect(read).toMatchObject({ wallet_id: wallet.id, balance: 100 });
    await assertLedgerInvariant(engine.pool);
  });

  it('transfers between wallets, with a generated Idempotency-Key the API records', async () => {
    const client = clientAt();
    const a = await userWithWallet(client);
    const b = await userWithWallet(client);
    await fundWallet(engine.pool, a.wallet.id, 5_000n);
    const sent = await client.post(TRANSFER, {
      body: { from_wallet_id: a.wallet.id, to_wallet_id: b.wallet.id, amount: 12.5 },
    });
    expect(sent).toMatchObject({
      transaction_type: 'transfer',
      status: 'completed',
      amount: 12.5,
      wallet_id: a.wallet.id,
      recipient_wallet_id: b.wallet.id,
    });
    expect(await balanceOf(engine.pool, a.wallet.id)).toBe(3_750n);
    expect(await balanceOf(engine.pool, b.wallet.id)).toBe(1_250n);
    const keys = await engine.pool.anyFirst(sql.type(z.object({ key: z.string() }))`
      SELECT key FROM idempotency_keys WHERE response_body->>'id' = ${sent.id}`);
    expect(keys).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/)]);

    // The caller's own key is sent as given: a second call with it replays, moving nothing.
    const body = { from_wallet_id: a.wallet.id, to_wallet_id: b.wallet.id, amount: 1 };
    const headers = { 'Idempotency-Key': `order-${randomBytes(4).toString('hex')}` };
    const first = await client.raw.POST(TRANSFER, { body, params: { header: headers } });
    const again = await client.raw.POST(TRANSFER, { body, params: { header: headers } });
    expect(again.data).toEqual(first.data);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(await balanceOf(engine.pool, a.wallet.id)).toBe(3_650n);
    await assertLedgerInvariant(engine.pool);
  });

  it('walks a page list and a cursor list to their ends, each item once', async () => {
    const client = clientAt();
    const source = await userWithWallet(client);
    const sink = await userWithWallet(client);
    await fundWallet(engine.pool, source.wallet.id, 10_000n);
    for (let i = 1; i <= 5; i += 1) {
      await client.post(TRANSFER, {
        body: { from_wallet_id: source.wallet.id, to_wallet_id: sink.wallet.id, amount: i },
      });
    }
    const users = [];
    for await (const user of client.paginate('/api/v1/users/', {
      params: { query: { per_page: 2 } },
    })) {
      users.push(user.id);
    }
    const count = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM users WHERE application_id = ${app.id} AND mode = 'test'`);
    expect(users).toHaveLength(count);
    expect(new Set(users).size).toBe(count);
    // The wallet list is a bare array: its Link header leads from page to page.
    const wallets = [];
    for await (const w of client.paginate('/api/v1/wallets/', {
      params: { query: { per_page: 2 } },
    })) {
      wallets.push(w.id);
    }
    const walletCount = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM wallets WHERE application_id = ${app.id} AND mode = 'test'`);
    expect(walletCount).toBeGreaterThan(2);
    expect(new Set(wallets).size).toBe(walletCount);
    expect(wallets).toContain(sink.wallet.id);

    const query = { wallet_id: sink.wallet.id, per_page: 2 };
    const paged = [];
    for await (const t of client.paginate('/api/v1/transactions/', { params: { query } })) {
      paged.push(t.amount);
    }
    const cursor = [];
    for await (const t of client.paginateCursor('/api/v1/transactions/', {
      params: { query },
    })) {
      cursor.push(t.amount);
    }
    // Newest first, every transfer once, whichever way the list is walked.
    expect(paged).toEqual([5, 4, 3, 2, 1]);
    expect(cursor).toEqual(paged);
  });

  it('streams the CSV export chunk by chunk, header first, one row per transaction', async () => {
    const client = clientAt();
    const a = await userWithWallet(client);
    const b = await userWithWallet(client);
    await fundWallet(engine.pool, a.wallet.id, 1_000n);
    for (let i = 1; i <= 3; i += 1) {
      await client.post(TRANSFER, {
        body: {
          from_wallet_id: a.wallet.id,
          to_wallet_id: b.wallet.id,
          amount: i,
          description: `part ${i}`,
        },
      });
    }
    const stream = await client.exportTransactions({ wallet_id: b.wallet.id });
    expect(stream).toBeInstanceOf(ReadableStream);
    const decoder = new TextDecoder();
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      expect(chunk).toBeInstanceOf(Uint8Array);
      chunks += 1;
      text += decoder.decode(chunk, { stream: true });
    }
    expect(chunks).toBeGreaterThan(0);
    const lines = text.trimEnd().split(/\r?\n/);
    expect(lines[0]).toBe(EXPORT_HEADER);
    expect(lines.slice(1).map((line) => line.split(',')[10])).toEqual([
      'part 3',
      'part 2',
      'part 1',
    ]);
  });

  it('throws one error class: 422 with the detail naming the field, 404, and nothing moved', async () => {
    const client = clientAt();
    const a = await userWithWallet(client);
    const b = await userWithWallet(client);
    await fundWallet(engine.pool, a.wallet.id, 1_000n);
    const invalid = await client
      .post(TRANSFER, {
        body: { from_wallet_id: a.wallet.id, to_wallet_id: b.wallet.id, amount: 1.005 },
      })
      .catch((error: unknown) => error);
    expect(invalid).toBeInstanceOf(WalletApiError);
    expect(invalid).toMatchObject({ status: 422, detail: expect.stringContaining('amount') });
    expect(await balanceOf(engine.pool, a.wallet.id)).toBe(1_000n);

    const missing = await client
      .get('/api/v1/transactions/{transaction_id}', {
        params: { path: { transaction_id: '00000000-0000-4000-8000-000000000000' } },
      })
      .catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(WalletApiError);
    expect(missing).toMatchObject({ status: 404, detail: expect.stringMatching(/not found/i) });

    const unauthenticated = await createWalletClient({ baseUrl: engine.url })
      .get('/api/v1/users/')
      .catch((error: unknown) => error);
    expect(unauthenticated).toMatchObject({ status: 401, detail: expect.any(String) });
  });

  describe('behind a connection that drops the first answer', () => {
    let proxy: DroppingProxy;
    beforeAll(async () => {
      proxy = await startDroppingProxy(new URL(engine.url));
    });
    afterAll(() => proxy.close());

    it('retries with the same Idempotency-Key, gets the first answer replayed and moves money once', async () => {
      const direct = clientAt();
      const a = await userWithWallet(direct);
      const b = await userWithWallet(direct);
      await fundWallet(engine.pool, a.wallet.id, 10_000n);

      proxy.dropNext();
      const client = clientAt(proxy.url);
      const { data, response } = await client.raw.POST(TRANSFER, {
        body: { from_wallet_id: a.wallet.id, to_wallet_id: b.wallet.id, amount: 25 },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('idempotent-replayed')).toBe('true');
      expect(data).toMatchObject({ transaction_type: 'transfer', status: 'completed', amount: 25 });

      // Two requests reached the API, the same key on both; the first one's answer was cut.
      expect(proxy.dropped()).toBe(1);
      const keys = proxy.requests().map((head) => /^idempotency-key: *(.+)$/im.exec(head)?.[1]);
      expect(keys).toHaveLength(2);
      expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
      expect(keys[1]).toBe(keys[0]);

      expect(await balanceOf(engine.pool, a.wallet.id)).toBe(7_500n);
      expect(await balanceOf(engine.pool, b.wallet.id)).toBe(2_500n);
      expect(await ledgerTransactionsOf(b.wallet.id)).toBe(1);
      const transfers = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM transactions
        WHERE wallet_id = ${a.wallet.id} AND transaction_type = 'transfer'`);
      expect(transfers).toBe(1);
      await assertLedgerInvariant(engine.pool);
    });

    it('does not send a user creation twice when its answer is lost: the caller hears of it', async () => {
      proxy.dropNext();
      const before = proxy.requests().length;
      const failure = await clientAt(proxy.url)
        .post('/api/v1/users/create/', {
          body: { app_user_id: 'lost-answer', name: 'Lost Answer', phone_number: '+23276000001' },
        })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(WalletApiError);
      expect(failure).toMatchObject({ status: 0, detail: expect.stringMatching(/No answer/) });
      expect(proxy.requests().length - before).toBe(1);
      const users = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int AS n FROM users WHERE app_user_id = 'lost-answer'`);
      expect(users).toBe(1);
    });
  });

  describe('webhook verification', () => {
    let receiver: Receiver;
    beforeAll(async () => {
      receiver = await startReceiver();
    });
    afterAll(() => receiver.close());

    it('verifies a real delivery with a list of secrets, and refuses a wrong secret or a changed body', async () => {
      const client = clientAt();
      const subscription = await client.post('/api/v1/webhooks/subscriptions', {
        body: {
          url: receiver.url('/client-hook'),
          events: ['transfer.completed'],
          is_active: true,
        },
      });
      expect(subscription.secret).toMatch(/^whsec_/);
      const a = await userWithWallet(client);
      const b = await userWithWallet(client);
      await fundWallet(engine.pool, a.wallet.id, 1_000n);
      const sent = await client.post(TRANSFER, {
        body: { from_wallet_id: a.wallet.id, to_wallet_id: b.wallet.id, amount: 2 },
      });
      const delivery = await receiver.waitFor(
        (r) => r.path === '/client-hook' && r.payload?.data?.id === sent.id,
      );
      const unrelated = `whsec_${randomBytes(24).toString('base64')}`;
      const secret = subscription.secret;

      const event = verifyWebhook(delivery.body, delivery.headers, [unrelated, secret]);
      expect(event).toMatchObject({ type: 'transfer.completed', data: { id: sent.id } });
      expect(verifyWebhook(delivery.body, new Headers(delivery.headers), secret).id).toBe(event.id);
      expect(() => verifyWebhook(delivery.body, delivery.headers, [unrelated])).toThrow(
        WebhookVerificationError,
      );
      expect(() =>
        verifyWebhook(delivery.body.replace('"amount":2', '"amount":200'), delivery.headers, [
          secret,
        ]),
      ).toThrow(WebhookVerificationError);
    });

    it('accepts a rotation’s delivery signed by both secrets with either one, as the overlap needs', () => {
      const previous = `whsec_${randomBytes(24).toString('base64')}`;
      const next = `whsec_${randomBytes(24).toString('base64')}`;
      const body = JSON.stringify({ id: 'evt_1', type: 'transfer.completed', data: {} });
      const at = new Date();
      const signature = [next, previous]
        .map((secret) => new Webhook(secret).sign('msg_1', at, body))
        .join(' ');
      const headers = {
        'webhook-id': 'msg_1',
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': signature,
      };
      expect(verifyWebhook(body, headers, [previous]).id).toBe('evt_1');
      expect(verifyWebhook(body, headers, [next, previous]).id).toBe('evt_1');
      // After the overlap the receiver keeps only the new secret; a delivery signed by the old
      // one alone is refused.
      const old = {
        ...headers,
        'webhook-signature': new Webhook(previous).sign('msg_1', at, body),
      };
      expect(() => verifyWebhook(body, old, [next])).toThrow(WebhookVerificationError);
    });
  });
});

type DroppingProxy = {
  url: string;
  /** The next request is forwarded, then its connection closes before the answer is passed on. */
  dropNext: () => void;
  dropped: () => number;
  /** The head of every request forwarded, in order. */
  requests: () => string[];
  close: () => Promise<void>;
};

/** A loopback TCP proxy to the API that can lose an answer the API did send. */
async function startDroppingProxy(target: URL): Promise<DroppingProxy> {
  let drop = false;
  let dropped = 0;
  const heads: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    // Decided per request, not per connection: the caller's pool may reuse a connection.
    let losing = false;
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => {
      // Each request here is small: its head arrives whole, in the chunk that starts it.
      const text = chunk.toString('latin1');
      if (/^[A-Z]+ \S+ HTTP\/1\.1\r\n/.test(text)) {
        heads.push(text.split('\r\n\r\n')[0]!);
        losing = drop;
        drop = false;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (losing) {
        // The API has answered (the payment is done): the answer never reaches the caller.
        if (!client.destroyed) dropped += 1;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    dropNext: () => {
      drop = true;
    },
    dropped: () => dropped,
    requests: () => [...heads],
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
