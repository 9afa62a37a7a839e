import {
  createWalletClient,
  type WalletClient,
  type WalletClientOptions,
} from '../../clients/typescript/src/index';
import type { Mode } from '../../src/domain/types';
import type { TestApp } from './engine';
import type { Reply } from './http';

/**
 * The typed client (clients/typescript) of `app` in `mode`, made in `beforeAll` after the
 * engine's and the app's (`useTestEngine`, `useTestApp`), filled in place as theirs. Its retries
 * are off unless asked: a test sees each answer the API gives.
 */
export function useWalletClient(
  engine: { url: string },
  app: TestApp,
  mode: Mode = 'test',
  options: Partial<WalletClientOptions> = {},
): WalletClient {
  const client = {} as WalletClient;
  beforeAll(() => {
    Object.assign(
      client,
      createWalletClient({
        baseUrl: engine.url,
        apiKey: app.credentials[mode].apiKey,
        secretKey: app.credentials[mode].secretKey,
        retry: { maxAttempts: 1 },
        ...options,
      }),
    );
  });
  return client;
}

/**
 * An answer of the client's openapi-fetch half (`client.raw`, nothing thrown) as the raw HTTP
 * helpers gave it: status, body (the 2xx answer or the API's `{"detail"}`) and headers.
 */
export async function reply(
  call: Promise<{ data?: unknown; error?: unknown; response: Response }>,
): Promise<Reply> {
  const { data, error, response } = await call;
  return { status: response.status, body: response.ok ? data : error, headers: response.headers };
}
