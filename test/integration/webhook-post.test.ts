import dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret } from '../../src/crypto/secret-box';
import {
  failureCategory,
  postWebhook,
  REFUSED_ADDRESS_ERROR,
  signedDelivery,
  WEBHOOK_FAILURES,
  type PostOptions,
} from '../../src/outbound/webhook-post';

/**
 * One delivery POST against real servers on loopback: what counts as delivered, what is never
 * followed or read without bound, and what the guard refuses before connecting.
 */

type Server = { url: string; requests: number; connections: number; close: () => Promise<void> };

async function serve(host: string, handler: http.RequestListener): Promise<Server> {
  const state = { requests: 0, connections: 0 };
  const server = http.createServer((request, response) => {
    state.requests += 1;
    handler(request, response);
  });
  server.on('connection', () => {
    state.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/hook`,
    get requests() {
      return state.requests;
    },
    get connections() {
      return state.connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const options: PostOptions = {
  allowlist: ['127.0.0.1/32'],
  httpsOnly: false,
  timeoutMs: 10_000,
  maxBodyBytes: 64 * 1024,
};
const payload = {
  id: 'a0000000-0000-4000-8000-00000000000e',
  type: 'transfer.completed',
  created_at: '2026-11-22T10:00:00.000Z',
  mode: 'test' as const,
  data: { id: 'tx', amount: 12.5 },
};

describe('signedDelivery', () => {
  it('signs the exact body so that standardwebhooks verifies it, and nothing else', () => {
    const secret = newWebhookSecret();
    const { body, headers } = signedDelivery(payload, secret);
    expect(JSON.parse(body)).toEqual(payload);
    expect(new Webhook(secret).verify(body, headers)).toEqual(payload);
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body.replace('12.5', '125'), headers)).toThrow();
  });
});

describe('postWebhook', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
  });
  const delivery = () => signedDelivery(payload, newWebhookSecret());

  it('counts a 2xx as delivered and anything else as an http_status failure with its status', async () => {
    let status = 204;
    const server = await serve('127.0.0.1', (_q, r) => {
      r.statusCode = status;
      r.end();
    });
    servers.push(server);
    expect(await postWebhook(server.url, delivery(), options)).toMatchObject({
      statusCode: 204,
      error: null,
    });
    status = 500;
    expect(await postWebhook(server.url, delivery(), options)).toMatchObject({
      statusCode: 500,
      error: 'http_status',
    });
  });

  it('never follows a redirect: 3xx is a failure, and its target is not contacted', async () => {
    const target = await serve('127.0.0.1', (_q, r) => r.end('ok'));
    const redirecting = await serve('127.0.0.1', (_q, r) => {
      r.writeHead(307, { location: target.url });
      r.end();
    });
    servers.push(target, redirecting);
    expect(await postWebhook(redirecting.url, delivery(), options)).toMatchObject({
      statusCode: 307,
      error: 'http_status',
    });
    expect(target.connections).toBe(0);
  });

  it('reads at most maxBodyBytes of an answer, then drops the connection', async () => {
    let written = 0;
    let closed = false;
    const server = await serve('127.0.0.1', (_q, r) => {
      r.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = () => {
        while (!closed && written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!r.write(chunk)) return void r.once('drain', pump);
        }
        r.end();
      };
      r.on('close', () => {
        closed = true;
      });
      pump();
    });
    servers.push(server);
    const outcome = await postWebhook(server.url, delivery(), options);
    expect(outcome).toMatchObject({ statusCode: 200, error: null });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(closed).toBe(true);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('gives up on an endpoint that does not answer in time', async () => {
    const server = await serve('127.0.0.1', () => undefined);
    servers.push(server);
    const outcome = await postWebhook(server.url, delivery(), { ...options, timeoutMs: 300 });
    expect(outcome).toMatchObject({ statusCode: null, error: 'timeout' });
    expect(server.requests).toBe(1);
  });

  it('answers a category for a network failure, never the socket’s or TLS library’s message', async () => {
    const closed = await serve('127.0.0.1', () => undefined);
    await closed.close();
    const plain = await serve('127.0.0.1', (_q, r) => r.end('ok'));
    const hangUp = await serve('127.0.0.1', (q) => q.socket.destroy());
    servers.push(plain, hangUp);
    const https = plain.url.replace('http:', 'https:');
    // Every name is unknown to this resolver (the other URLs are literals, never looked up),
    // so that nothing leaves loopback.
    const lookup = jest.spyOn(dns, 'lookup').mockImplementation((host: string, ...rest) => {
      const callback = rest.at(-1) as (error: NodeJS.ErrnoException) => void;
      const gone = Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), {
        code: 'ENOTFOUND',
        syscall: 'getaddrinfo',
      });
      callback(gone);
    });
    try {
      const cases: [string, string][] = [
        [closed.url, 'connection_refused'],
        [https, 'tls_error'],
        [`http://gone.test:${new URL(plain.url).port}/hook`, 'dns_error'],
        [hangUp.url, 'connection_error'],
      ];
      for (const [url, error] of cases) {
        expect({ url, ...(await postWebhook(url, delivery(), options)) }).toMatchObject({
          url,
          statusCode: null,
          error,
        });
      }
    } finally {
      lookup.mockRestore();
    }
    expect(WEBHOOK_FAILURES).toEqual([
      'connection_refused',
      'connection_error',
      'timeout',
      'tls_error',
      'dns_error',
      'http_status',
    ]);
  });

  it.each([
    ['ETIMEDOUT', undefined, 'timeout'],
    ['EAI_AGAIN', 'getaddrinfo', 'dns_error'],
    [undefined, 'getaddrinfo', 'dns_error'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', undefined, 'tls_error'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', undefined, 'tls_error'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', undefined, 'tls_error'],
    ['EHOSTUNREACH', 'connect', 'connection_error'],
    [undefined, undefined, 'connection_error'],
  ])('maps the error code %s (syscall %s) to %s', (code, syscall, category) => {
    const error = Object.assign(new Error('connect 10.0.0.5:8443'), { code, syscall });
    expect(failureCategory(error)).toBe(category);
  });

  it('refuses an internal address before connecting, in any notation', async () => {
    const internal = await serve('127.0.0.2', (_q, r) => r.end('ok'));
    servers.push(internal);
    const port = new URL(internal.url).port;
    for (const url of [
      internal.url,
      `http://0x7f000002:${port}/hook`,
      `http://2130706434:${port}/hook`,
      `http://[::ffff:127.0.0.2]:${port}/hook`,
    ]) {
      expect({ url, ...(await postWebhook(url, delivery(), options)) }).toMatchObject({
        url,
        statusCode: null,
        error: REFUSED_ADDRESS_ERROR,
      });
    }
    expect(internal.connections).toBe(0);
  });

  it('refuses http in Live Mode without connecting', async () => {
    const server = await serve('127.0.0.1', (_q, r) => r.end('ok'));
    servers.push(server);
    expect(
      await postWebhook(server.url, delivery(), { ...options, httpsOnly: true }),
    ).toMatchObject({ statusCode: null, error: 'Webhook URL scheme http: is not allowed' });
    expect(server.connections).toBe(0);
  });
});
