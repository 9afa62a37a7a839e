import { sql } from 'slonik';
import { z } from 'zod';
import { assertLedgerInvariant, balanceOf } from '../support/database';
import type { TestEngine } from '../support/engine';
import { sandboxWebhookSecret } from '../../src/crypto/secret-box';
import { signMonimeNotification } from '../../src/providers/monime';
import type { FakeMonimeServer } from '../support/fake-monime';
import { clientFor, createUserWithWallet, type ApiClient } from '../support/http';
import { startMonimeEngine } from '../support/live-monime';

const SECRET = 'live-webhook-secret-for-tests';
let monime: FakeMonimeServer;
let engine: TestEngine;
let live: ApiClient;

beforeAll(async () => {
  ({ monime, engine, live } = await startMonimeEngine(SECRET, { MONIME_TIMEOUT_MS: '300' }));
});
afterAll(async () => {
  await engine?.close();
  await monime?.close();
});

describe('Live Mode deposits through the Monime-style adapter', () => {
  it('creates one payment code despite a provider 5xx and a timeout, then settles on the signed notification', async () => {
    const { walletId } = await createUserWithWallet(live);
    monime.failNext(1, 503);
    monime.failNext(1, 'timeout');
    const res = await live.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      wallet_id: walletId,
      amount: 5_000,
    });
    expect(res.status).toBe(200);
    const codeId = res.body.payment_code.result.id as string;
    expect(monime.codesFor(`deposit-${res.body.transaction_id}`)).toHaveLength(1);
    expect(res.body.transaction).toMatchObject({
      amount: 5_000,
      provider_fee: 50,
      total_amount_paid: 5_050,
      status: 'pending',
    });

    monime.markCompleted(codeId);
    const note = monime.notificationFor(codeId);
    const bare = clientFor(engine.url, null);
    const delivered = await bare.request('POST', '/api/v1/webhooks/providers/mobile-money', {
      raw: note.rawBody,
      headers: note.headers,
    });
    expect(delivered.status).toBe(200);
    expect(delivered.body).toMatchObject({
      received: true,
      transaction_id: res.body.transaction_id,
      status: 'completed',
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(5_000n);

    const replay = await bare.request('POST', '/api/v1/webhooks/providers/mobile-money', {
      raw: note.rawBody,
      headers: note.headers,
    });
    expect(replay.status).toBe(200);
    expect(await balanceOf(engine.pool, walletId)).toBe(5_000n);
    const recorded = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM provider_notifications WHERE payment_reference = ${codeId}`);
    expect(recorded).toBe(2);
    await assertLedgerInvariant(engine.pool);
  });

  it('refuses a notification signed with another secret', async () => {
    const { walletId } = await createUserWithWallet(live);
    const res = await live.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      wallet_id: walletId,
      amount: 700,
    });
    const codeId = res.body.payment_code.result.id as string;
    monime.markCompleted(codeId);
    const forged = monime.notificationFor(codeId, { secret: 'not-the-secret' });
    const reply = await clientFor(engine.url, null).request(
      'POST',
      '/api/v1/webhooks/providers/mobile-money',
      {
        raw: forged.rawBody,
        headers: forged.headers,
      },
    );
    expect(reply.status).toBe(400);
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    // Sync asks the provider directly and completes it.
    const synced = await live.post(`/api/v1/transactions/sync/${codeId}`);
    expect(synced.body).toMatchObject({
      status: 'completed',
      transaction_id: res.body.transaction_id,
    });
    expect(await balanceOf(engine.pool, walletId)).toBe(700n);
  });
});

describe('a provider speaks for its own mode only', () => {
  it('does not let a sandbox notification settle a Live Mode deposit', async () => {
    const { walletId } = await createUserWithWallet(live);
    const res = await live.post('/api/v1/transactions/wallet/mobile-money-deposit', {
      wallet_id: walletId,
      amount: 900,
    });
    expect(res.status).toBe(200);
    // Signed with the sandbox's own (Test Mode) secret, naming the live payment code and deposit.
    const body = JSON.stringify({
      event: 'payment_code.completed',
      data: {
        id: res.body.payment_code.result.id,
        status: 'completed',
        metadata: { reference: res.body.transaction_id },
      },
    });
    const headers = {
      'sandbox-signature': signMonimeNotification(
        sandboxWebhookSecret(engine.config),
        body,
        Math.floor(Date.now() / 1000),
      ),
    };
    const reply = await clientFor(engine.url, null).request(
      'POST',
      '/api/v1/webhooks/providers/mobile-money',
      {
        raw: body,
        headers,
      },
    );
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ received: true, status: null });
    expect(await balanceOf(engine.pool, walletId)).toBe(0n);
    expect((await live.get(`/api/v1/transactions/${res.body.transaction_id}`)).body.status).toBe(
      'pending',
    );
  });
});
