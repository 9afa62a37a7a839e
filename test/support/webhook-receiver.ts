import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';

/** One request a receiver got, as it arrived. */
export type Received = {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The body parsed as JSON (undefined when it is not). */
  payload: { id: string; type: string; created_at: string; mode: string; data: any } | undefined;
  at: number;
};

export type Receiver = {
  /** A URL on this receiver. */
  url: (path?: string) => string;
  port: number;
  received: Received[];
  /** TCP connections accepted so far (a refused delivery must never open one). */
  connections: () => number;
  /** The status answered for a request (default 200). */
  answer: (status: (request: Received) => number) => void;
  /** The first request `match` accepts, waiting for it as long as `timeoutMs`. */
  waitFor: (match: (r: Received) => boolean, timeoutMs?: number) => Promise<Received>;
  close: () => Promise<void>;
};

/**
 * A merchant's webhook endpoint on a loopback address: a real HTTP server that keeps every
 * request so the tests verify it with the `standardwebhooks` package, as a merchant would.
 */
export async function startReceiver(host = '127.0.0.1'): Promise<Receiver> {
  const received: Received[] = [];
  let connections = 0;
  let status: (request: Received) => number = () => 200;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let payload: Received['payload'];
      try {
        payload = JSON.parse(body) as Received['payload'];
      } catch {
        payload = undefined;
      }
      const entry: Received = {
        path: request.url ?? '',
        headers: Object.fromEntries(
          Object.entries(request.headers).map(([k, v]) => [k, String(v)]),
        ),
        body,
        payload,
        at: Date.now(),
      };
      received.push(entry);
      response.statusCode = status(entry);
      response.end('ok');
    });
  });
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path = '/hook') => `http://${host}:${port}${path}`,
    port,
    received,
    connections: () => connections,
    answer: (fn) => {
      status = fn;
    },
    waitFor: async (match, timeoutMs = 30_000) => {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const found = received.find(match);
        if (found) return found;
        if (Date.now() > until) {
          throw new Error(
            `no matching webhook request; got ${JSON.stringify(received.map((r) => [r.path, r.payload?.type, r.payload?.data?.id]))}`,
          );
        }
        await delay(25);
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Verifies a request as a merchant does; throws WebhookVerificationError when it does not hold. */
export function verify(secret: string, request: Received): unknown {
  return new Webhook(secret).verify(request.body, {
    'webhook-id': request.headers['webhook-id'] ?? '',
    'webhook-timestamp': request.headers['webhook-timestamp'] ?? '',
    'webhook-signature': request.headers['webhook-signature'] ?? '',
  });
}
