import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createWalletClient,
  IDEMPOTENT_OPERATIONS,
  retryAfterMs,
  WalletApiError,
} from '../../clients/typescript/src/index';

type Seen = { method: string; path: string; key: string | undefined; at: number };
type Answer = { status: number; headers?: Record<string, string>; body: unknown };

/** A loopback HTTP server that answers from a script and keeps every request it got. */
async function fakeApi(answers: (seen: Seen[]) => Answer) {
  const seen: Seen[] = [];
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      seen.push({
        method: request.method ?? '',
        path: request.url ?? '',
        key: request.headers['idempotency-key'] as string | undefined,
        at: Date.now(),
      });
      const answer = answers(seen);
      response.writeHead(answer.status, {
        'content-type': 'application/json',
        ...answer.headers,
      });
      response.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    seen,
    client: (retry = {}) =>
      createWalletClient({
        baseUrl: `http://127.0.0.1:${port}`,
        apiKey: 'pk_test_x',
        secretKey: 'sk_test_x',
        retry: { baseDelayMs: 10, ...retry },
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const TRANSFER = '/api/v1/transactions/wallet/transfer';
const transfer = {
  from_wallet_id: '0b6f3c2e-8d1a-4f5b-9c7e-2a4d6e8f1b3c',
  to_wallet_id: '5e9a7c1b-3f2d-4e6a-8b0c-9d1e2f3a4b5c',
  amount: 12.5,
};
const done = { id: 't1', status: 'completed' };
const limited = (seconds: string): Answer => ({
  status: 429,
  headers: { 'retry-after': seconds },
  body: { detail: `Rate limit exceeded, retry in ${seconds} seconds` },
});

describe('the client’s retries', () => {
  let api: Awaited<ReturnType<typeof fakeApi>> | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  it('waits the seconds a 429 gives in Retry-After, then sends the same payment again with the same key', async () => {
    api = await fakeApi((seen) => (seen.length === 1 ? limited('1') : { status: 200, body: done }));
    const answer = await api.client().post(TRANSFER, { body: transfer });
    expect(answer).toEqual(done);
    expect(api.seen).toHaveLength(2);
    expect(api.seen[1]!.at - api.seen[0]!.at).toBeGreaterThanOrEqual(950);
    expect(api.seen[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(api.seen[1]!.key).toBe(api.seen[0]!.key);
  });

  it('answers the 429 at once, as a WalletApiError, when Retry-After is longer than it waits', async () => {
    api = await fakeApi(() => limited('120'));
    const started = Date.now();
    const error = await api
      .client({ maxRetryAfterMs: 5_000 })
      .post(TRANSFER, { body: transfer })
      .catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(error).toBeInstanceOf(WalletApiError);
    expect(error).toMatchObject({
      status: 429,
      detail: 'Rate limit exceeded, retry in 120 seconds',
    });
    expect((error as WalletApiError).headers?.get('retry-after')).toBe('120');
    expect(api.seen).toHaveLength(1);
  });

  it('retries a payment’s 5xx a bounded number of times, every attempt with the caller’s key', async () => {
    api = await fakeApi(() => ({ status: 503, body: { detail: 'Postgres is not answering' } }));
    const error = await api
      .client({ maxAttempts: 3 })
      .post(TRANSFER, { body: transfer, params: { header: { 'Idempotency-Key': 'order-42' } } })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 503, detail: 'Postgres is not answering' });
    expect(api.seen.map((s) => s.key)).toEqual(['order-42', 'order-42', 'order-42']);
  });

  it('makes a new key per call, not per client', async () => {
    api = await fakeApi(() => ({ status: 200, body: done }));
    const client = api.client();
    await client.post(TRANSFER, { body: transfer });
    await client.post(TRANSFER, { body: transfer });
    expect(api.seen[0]!.key).not.toBe(api.seen[1]!.key);
  });

  it('does not resend a POST that moves no money on a 5xx, but does on a 429 (nothing was done)', async () => {
    api = await fakeApi((seen) =>
      seen.length === 2 ? limited('0') : { status: 500, body: { detail: 'Internal error' } },
    );
    const client = api.client();
    const body = { app_user_id: 'u1', name: 'A', phone_number: '+23276000000' };
    const failed = await client.post('/api/v1/users/create/', { body }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ status: 500, detail: 'Internal error' });
    expect(api.seen).toHaveLength(1);
    expect(api.seen[0]!.key).toBeUndefined();

    await client.post('/api/v1/users/create/', { body }).catch((e: unknown) => e);
    // The 429 (second request) was retried; the retry met a 500 again and was not.
    expect(api.seen).toHaveLength(3);
  });

  it('retries a GET on a 5xx, and reports a server that never answers as status 0', async () => {
    api = await fakeApi((seen) =>
      seen.length < 3
        ? { status: 502, body: { detail: 'Bad gateway' } }
        : { status: 200, body: done },
    );
    const found = await api.client().get('/api/v1/transactions/{transaction_id}', {
      params: { path: { transaction_id: 't1' } },
    });
    expect(found).toEqual(done);
    expect(api.seen.map((s) => s.method)).toEqual(['GET', 'GET', 'GET']);

    const nowhere = createWalletClient({
      baseUrl: 'http://127.0.0.1:9',
      retry: { maxAttempts: 2, baseDelayMs: 1 },
    });
    const error = await nowhere.get('/healthz').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WalletApiError);
    expect(error).toMatchObject({ status: 0 });
    expect(String((error as WalletApiError).cause)).toMatch(/fetch failed/);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    const answer = (value: string) => new Response(null, { headers: { 'retry-after': value } });
    expect(retryAfterMs(answer('3'), now)).toBe(3_000);
    expect(retryAfterMs(answer('Thu, 01 Jan 2026 00:00:05 GMT'), now)).toBe(5_000);
    expect(retryAfterMs(answer('soon'), now)).toBeUndefined();
  });

  it('marks exactly the operations the document gives an Idempotency-Key as money-moving', () => {
    expect(IDEMPOTENT_OPERATIONS).toContain(`post ${TRANSFER}`);
    expect(IDEMPOTENT_OPERATIONS).toContain('post /api/v1/escrow/hold');
    expect(IDEMPOTENT_OPERATIONS.every((operation) => operation.startsWith('post '))).toBe(true);
    expect(IDEMPOTENT_OPERATIONS).not.toContain('post /api/v1/users/create/');
  });
});
