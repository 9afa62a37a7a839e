import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import {
  assertPublicUrl,
  ForbiddenAddressError,
  guardedAgent,
  guardedLookup,
} from '../../src/outbound/address-guard';
import { mockLookup } from '../support/dns';
import { startReceiver, type Receiver } from '../support/webhook-receiver';

/**
 * The guard on the connection path, against a real server on loopback: a refused request must
 * never open a connection (the server's connection count proves it). Only loopback is ever
 * contacted here.
 */

let receiver: Receiver;
let port: number;
/** The receiver's counts when the test began: a test reads only its own. */
let before = { connections: 0, requests: 0 };
const connections = () => receiver.connections() - before.connections;
const requests = () => receiver.received.length - before.requests;

beforeAll(async () => {
  receiver = await startReceiver();
  port = receiver.port;
});

afterAll(async () => receiver?.close());

beforeEach(() => {
  before = { connections: receiver.connections(), requests: receiver.received.length };
});

function get(url: string, agent: http.Agent): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { agent }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
  });
}

describe('guardedAgent', () => {
  test.each([
    'http://127.0.0.1:PORT/hook',
    'http://127.1:PORT/hook',
    'http://0x7f000001:PORT/hook',
    'http://2130706433:PORT/hook',
    'http://0177.0.0.1:PORT/hook',
    'http://127.0.0.1.:PORT/hook',
    'http://[::ffff:127.0.0.1]:PORT/hook',
    'http://[::1]:PORT/hook',
    'http://localhost:PORT/hook',
  ])('refuses %s before connecting', async (template) => {
    const url = (p: number) => template.replace('PORT', String(p));
    const agent = guardedAgent({ allowlist: [] }).http;
    await expect(get(url(port), agent)).rejects.toBeInstanceOf(ForbiddenAddressError);
    // Give a stray connection, if one were made, the time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(connections()).toBe(0);
    expect(requests()).toBe(0);
  });

  test.each(['127.1', '0x7f000001', '2130706433', '0177.0.0.1', '127.0.0.1.'])(
    'refuses the raw host %s (not normalised by URL) before connecting',
    async (host) => {
      const agent = guardedAgent({ allowlist: [] }).http;
      const refused = new Promise((resolve, reject) => {
        http.get({ host, port, path: '/hook', agent }, resolve).on('error', reject);
      });
      await expect(refused).rejects.toBeInstanceOf(ForbiddenAddressError);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(connections()).toBe(0);
    },
  );

  test('connects when 127.0.0.1/32 is allowlisted, by literal and by name', async () => {
    const agent = guardedAgent({ allowlist: ['127.0.0.1/32', '::1'] }).http;
    await expect(get(`http://127.0.0.1:${port}/hook`, agent)).resolves.toEqual({
      status: 200,
      body: 'ok',
    });
    await expect(get(`http://localhost:${port}/hook`, agent)).resolves.toEqual({
      status: 200,
      body: 'ok',
    });
    expect(requests()).toBe(2);
    expect(connections()).toBe(2);
  });

  test.each(['https://127.0.0.1:PORT/hook', 'https://localhost:PORT/hook'])(
    'the https agent refuses %s before connecting',
    async (template) => {
      const agent = guardedAgent({ allowlist: [] }).https;
      const refused = new Promise((resolve, reject) => {
        https.get(template.replace('PORT', String(port)), { agent }, resolve).on('error', reject);
      });
      await expect(refused).rejects.toBeInstanceOf(ForbiddenAddressError);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(connections()).toBe(0);
    },
  );
});

describe('guardedLookup', () => {
  test('refuses localhost, and hands the checked address on when allowlisted', async () => {
    const refuse = guardedLookup({ allowlist: [] });
    await expect(
      new Promise((resolve, reject) =>
        refuse('localhost', { all: true }, (error, addresses) =>
          error ? reject(error) : resolve(addresses),
        ),
      ),
    ).rejects.toBeInstanceOf(ForbiddenAddressError);

    const allow = guardedLookup({ allowlist: ['127.0.0.0/8', '::1'] });
    const single = await new Promise((resolve, reject) =>
      allow('localhost', { family: 4 }, (error, address, family) =>
        error ? reject(error) : resolve({ address, family }),
      ),
    );
    expect(single).toEqual({ address: '127.0.0.1', family: 4 });
  });
});

describe('guardedLookup resolves once and hands on exactly what it checked', () => {
  afterEach(() => jest.restoreAllMocks());

  const answer = (addresses: dns.LookupAddress[]) => mockLookup(() => addresses);

  function lookup(all: boolean) {
    return new Promise((resolve, reject) =>
      guardedLookup({ allowlist: [] })('rebind.test', { all }, (error, address, family) =>
        error ? reject(error) : resolve(all ? address : { address, family }),
      ),
    );
  }

  test('a public answer is passed on as resolved, once', async () => {
    const spy = answer([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ]);
    await expect(lookup(true)).resolves.toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ]);
    await expect(lookup(false)).resolves.toEqual({ address: '93.184.216.34', family: 4 });
    expect(spy).toHaveBeenCalledTimes(2);
  });

  test('one forbidden address among the answers refuses the host', async () => {
    answer([
      { address: '93.184.216.34', family: 4 },
      { address: '::ffff:169.254.169.254', family: 6 },
    ]);
    await expect(lookup(true)).rejects.toBeInstanceOf(ForbiddenAddressError);
    await expect(lookup(false)).rejects.toBeInstanceOf(ForbiddenAddressError);
  });
});

describe('guardedAgent and Unix sockets', () => {
  test('a socketPath is refused', async () => {
    const agent = guardedAgent({ allowlist: [] }).http;
    const refused = new Promise((resolve, reject) => {
      http
        .get({ socketPath: '/nonexistent.sock', path: '/hook', agent }, resolve)
        .on('error', reject);
    });
    await expect(refused).rejects.toBeInstanceOf(ForbiddenAddressError);
  });
});

describe('assertPublicUrl with the system resolver', () => {
  test('localhost is refused', async () => {
    await expect(
      assertPublicUrl(`http://localhost:${port}/hook`, { allowlist: [], httpsOnly: false }),
    ).rejects.toBeInstanceOf(ForbiddenAddressError);
    expect(connections()).toBe(0);
  });
});
