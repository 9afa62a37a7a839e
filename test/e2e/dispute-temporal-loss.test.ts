import net from 'node:net';
import { Writable } from 'node:stream';
import { startApi, type RunningApi } from '../../src/api/server';
import { createLogger } from '../../src/observability/logger';
import { balanceOf } from '../support/database';
import { clientFor, createUserWithWallet, type ApiClient } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

/**
 * Temporal lost during a simulated dispute's start: a second API reaches the shared Temporal
 * through a loopback TCP proxy that forwards the start, then drops every connection while the
 * engine's worker (connected directly) opens the dispute.
 */
jest.setTimeout(60_000);

type DroppingProxy = {
  address: string;
  /** Forwards the next request, swallows its answer, then drops every connection for `downMs`. */
  dropAfterNext: (downMs: number) => void;
  close: () => Promise<void>;
};

async function startDroppingProxy(target: string): Promise<DroppingProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.split(':').pop())];
  const sockets = new Set<net.Socket>();
  let armed: number | null = null;
  let swallowing = false;
  let downUntil = 0;
  const server = net.createServer((client) => {
    if (Date.now() < downUntil) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect({ host, port });
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      upstream.write(chunk);
      if (armed === null) return;
      const downMs = armed;
      armed = null;
      swallowing = true;
      setTimeout(() => {
        downUntil = Date.now() + downMs;
        swallowing = false;
        for (const socket of sockets) socket.destroy();
      }, 300);
    });
    upstream.on('data', (chunk) => {
      if (!swallowing) client.write(chunk);
    });
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    dropAfterNext: (downMs) => {
      armed = downMs;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const engine = useTestEngine({ requestTimeoutMs: 10_000 });
const { app, api } = useTestApp(engine, { currency: 'USD' });
let proxy: DroppingProxy;
let proxied: RunningApi;
let viaProxy: ApiClient;

beforeAll(async () => {
  proxy = await startDroppingProxy(process.env.TEST_TEMPORAL_ADDRESS!);
  const config = {
    ...engine.config,
    temporal: { ...engine.config.temporal, address: proxy.address },
  };
  const logger = createLogger('info', new Writable({ write: (_c, _e, done) => done() }));
  proxied = await startApi(config, logger, config.database.url!);
  viaProxy = clientFor(proxied.url, app);
});

afterAll(async () => {
  await proxied?.close();
  await proxy?.close();
});

it('answers 504 when Temporal is lost after the start went out; the retry answers the dispute', async () => {
  const { walletId } = await createUserWithWallet(api);
  const deposit = await api.post('/api/v1/transactions/wallet/card-deposit', {
    wallet_id: walletId,
    amount: 10,
    payment_method_id: 'pm_card_visa',
  });
  expect(deposit.body.status).toBe('completed');
  // The proxied API's connection to Temporal is up before the call that loses it.
  expect((await viaProxy.get('/readyz')).status).toBe(200);
  const body = { transaction_id: deposit.body.id, amount: 4 };
  const key = `lost-temporal-${deposit.body.id}`;

  proxy.dropAfterNext(3_000);
  const lost = await viaProxy.post('/api/v1/testing/simulate-dispute', body, {
    'Idempotency-Key': key,
  });
  expect({ status: lost.status, body: lost.body }).toEqual({
    status: 504,
    body: { detail: expect.stringMatching(/retry with the same Idempotency-Key/) },
  });

  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const retry = await viaProxy.post('/api/v1/testing/simulate-dispute', body, {
    'Idempotency-Key': key,
  });
  expect(retry.status).toBe(200);
  expect(retry.body).toMatchObject({ transaction_id: deposit.body.id, amount: 4 });
  const listed = await api.get(`/api/v1/disputes?transaction_id=${deposit.body.id}`);
  expect(listed.body.data).toEqual([expect.objectContaining({ id: retry.body.id })]);
  expect(await balanceOf(engine.pool, walletId)).toBe(6_00n);
});
