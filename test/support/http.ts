import type { TestApp } from './engine';
import type { Mode } from '../../domain/types';

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
