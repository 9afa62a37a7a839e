import { setTimeout as sleep } from 'node:timers/promises';
import type { DatabasePool } from '../../src/db/pool';
import type { Mode } from '../../src/domain/types';
import { fundWallet } from './database';
import type { TestApp } from './engine';
import { pollUntil } from './wait';

export type Reply<T = any> = { status: number; body: T; headers: Headers };

/** A small HTTP client bound to one application and mode: real requests over the loopback. */
export function clientFor(baseUrl: string, app: TestApp | null, mode: Mode = 'test') {
  async function request<T = any>(
    method: string,
    path: string,
    options: { body?: unknown; raw?: string; headers?: Record<string, string> } = {},
  ): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (app) {
      headers['api-key'] ??= app.credentials[mode].apiKey;
      headers['secret-key'] ??= app.credentials[mode].secretKey;
    }
    let payload: string | undefined;
    if (options.raw !== undefined) payload = options.raw;
    else if (options.body !== undefined) payload = JSON.stringify(options.body);
    if (payload !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(`${baseUrl}${path}`, { method, headers, body: payload });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    return { status: response.status, body: body as T, headers: response.headers };
  }
  return {
    request,
    get: <T = any>(path: string, headers?: Record<string, string>) =>
      request<T>('GET', path, { headers }),
    post: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) =>
      request<T>('POST', path, { body, headers }),
    del: <T = any>(path: string) => request<T>('DELETE', path),
  };
}

export type ApiClient = ReturnType<typeof clientFor>;

/** A user with a wallet, through the API. */
export async function createUserWithWallet(
  api: ApiClient,
  overrides: Record<string, unknown> = {},
): Promise<{ userId: string; walletId: string }> {
  const user = await api.post('/api/v1/users/create/', {
    app_user_id: `u-${Math.random().toString(36).slice(2)}`,
    name: 'Test User',
    phone_number: '+23276000000',
    ...overrides,
  });
  if (user.status !== 200)
    throw new Error(`user create: ${user.status} ${JSON.stringify(user.body)}`);
  const wallet = await api.post(`/api/v1/wallets/create/${user.body.id}/`);
  if (wallet.status !== 200)
    throw new Error(`wallet create: ${wallet.status} ${JSON.stringify(wallet.body)}`);
  return { userId: user.body.id as string, walletId: wallet.body.id as string };
}

/** A user with a wallet through the API, and `amountMinor` booked into it (`fundWallet`). */
export async function createFundedWallet(
  api: ApiClient,
  pool: DatabasePool,
  amountMinor: bigint,
  overrides: Record<string, unknown> = {},
): Promise<{ userId: string; walletId: string }> {
  const created = await createUserWithWallet(api, overrides);
  if (amountMinor > 0n) await fundWallet(pool, created.walletId, amountMinor);
  return created;
}

export const TRANSFER = '/api/v1/transactions/wallet/transfer';

/**
 * A transfer of `amount` (major units, as the API takes it) that must succeed: answers the
 * payment, and throws with the API's answer otherwise. Tests of declines post themselves.
 */
export async function transfer<T = any>(
  api: ApiClient,
  from: string,
  to: string,
  amount: number,
  headers?: Record<string, string>,
): Promise<T> {
  const reply = await api.post<T>(
    TRANSFER,
    { from_wallet_id: from, to_wallet_id: to, amount },
    headers,
  );
  if (reply.status !== 200) {
    throw new Error(`transfer: ${reply.status} ${JSON.stringify(reply.body)}`);
  }
  return reply.body;
}

/**
 * Posts `body` with its `Idempotency-Key` again and again, as a client retries a 5xx or a
 * refused connection (answered as status 0), until the answer is definitive or `timeoutMs` has
 * passed; answers the last reply.
 */
export async function postUntilDefinitive(
  api: ApiClient,
  path: string,
  body: unknown,
  key: string,
  timeoutMs = 60_000,
): Promise<Reply> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply: Reply = await api
      .post(path, body, { 'Idempotency-Key': key })
      .catch(() => ({ status: 0, body: null, headers: new Headers() }));
    if ((reply.status > 0 && reply.status < 500) || Date.now() > deadline) return reply;
    await sleep(250);
  }
}

/**
 * The status of payment `transactionId` (`GET /api/v1/transactions/{id}`), asked again until it
 * is `want` or `timeoutMs` has passed: answers the last status, for the test to assert on.
 */
export async function waitForStatus(
  api: ApiClient,
  transactionId: string,
  want: string,
  timeoutMs = 20_000,
): Promise<string> {
  return pollUntil(
    async () => (await api.get(`/api/v1/transactions/${transactionId}`)).body?.status as string,
    (status) => status === want,
    { timeoutMs, intervalMs: 200 },
  );
}

/**
 * Asserts an error reply: `status`, and a body with exactly one key, `detail`, a non-empty
 * string. Answers the detail.
 */
export function expectError(reply: Reply, status: number): string {
  expect({ status: reply.status, body: reply.body }).toEqual({
    status,
    body: { detail: expect.any(String) },
  });
  expect(Object.keys(reply.body as object)).toEqual(['detail']);
  const detail = (reply.body as { detail: string }).detail;
  expect(detail.trim()).not.toBe('');
  return detail;
}

/** Asserts a 429 with a `Retry-After` within the minute that its detail repeats; answers it. */
export function expectRateLimited(reply: Reply): number {
  const detail = expectError(reply, 429);
  const header = reply.headers.get('retry-after');
  expect(header).toMatch(/^\d+$/);
  const retryAfter = Number(header);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(detail).toBe(`Rate limit exceeded, retry in ${retryAfter} seconds`);
  return retryAfter;
}
