import { loadConfig } from '../../src/config';
import {
  ProviderRefusedError,
  type PaymentCodeRequest,
  type PayoutRequest,
} from '../../src/providers/mobile-money';
import {
  MONIME_SIGNATURE_HEADER,
  MonimeMobileMoneyProvider,
  MonimeResponseError,
  monimeFromConfig,
  signMonimeNotification,
} from '../../src/providers/monime';
import { FakeMonimeServer } from '../support/fake-monime';

/** The live Monime adapter, for real over HTTP, against a fake server speaking its wire format. */

let fake: FakeMonimeServer;
let provider: MonimeMobileMoneyProvider;
let counter = 0;

function adapter(options: { timeoutMs?: number; webhookSecret?: string } = {}) {
  return new MonimeMobileMoneyProvider({
    baseUrl: fake.baseUrl,
    accessToken: fake.accessToken,
    spaceId: fake.spaceId,
    webhookSecret: options.webhookSecret ?? fake.webhookSecret,
    timeoutMs: options.timeoutMs ?? 2_000,
  });
}

function request(overrides: Partial<PaymentCodeRequest> = {}): PaymentCodeRequest {
  counter += 1;
  return {
    idempotencyKey: `deposit-${counter}-${Date.now()}`,
    reference: `txn_${counter}`,
    amount: 10_450n,
    depositAmount: 10_000n,
    name: 'Acme Shop',
    expiresInSeconds: 1800,
    description: 'Wallet top-up',
    ...overrides,
  };
}

/** The error a promise rejects with; fails the test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    return error as Error;
  }
  throw new Error('expected the call to be rejected');
}

function postsFor(key: string) {
  return fake.requests.filter((r) => r.method === 'POST' && r.headers['idempotency-key'] === key);
}

beforeEach(async () => {
  fake = await FakeMonimeServer.start();
  provider = adapter();
});
afterEach(async () => fake.close());

describe('creating a payment code', () => {
  test('sends the Monime request and maps the answer', async () => {
    const req = request();
    const code = await provider.createPaymentCode(req);

    expect(fake.requests).toHaveLength(1);
    const sent = fake.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/payment-codes');
    expect(sent.headers.authorization).toBe(`Bearer ${fake.accessToken}`);
    expect(sent.headers['monime-space-id']).toBe(fake.spaceId);
    expect(sent.headers['idempotency-key']).toBe(req.idempotencyKey);
    expect(sent.headers['content-type']).toBe('application/json');
    expect(sent.json).toEqual({
      name: 'Acme Shop',
      mode: 'one_time',
      amount: { currency: 'SLE', value: 10450 },
      duration: '1800s',
      metadata: {
        reference: req.reference,
        deposit_amount: '10000',
        description: 'Wallet top-up',
      },
    });
    // Integer minor units on the wire, never a decimal.
    expect(sent.body).toContain('"value":10450}');

    const stored = fake.codesFor(req.idempotencyKey);
    expect(stored).toHaveLength(1);
    expect(code).toEqual({
      id: stored[0]!.id,
      code: stored[0]!.ussdCode,
      amount: 10_450n,
      currency: 'SLE',
      instructions: `Dial ${stored[0]!.ussdCode} on your phone and approve the payment of SLE 104.50 to Acme Shop.`,
      status: 'pending',
      expiresAt: stored[0]!.expireTime,
      reference: req.reference,
    });
    const expiresIn = Date.parse(code.expiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(1790_000);
    expect(expiresIn).toBeLessThanOrEqual(1800_000);
  });

  test('the same idempotency key answers the same code, never a second one', async () => {
    const req = request();
    const first = await provider.createPaymentCode(req);
    const second = await provider.createPaymentCode(req);
    expect(second).toEqual(first);
    expect(fake.codesFor(req.idempotencyKey)).toHaveLength(1);
    expect(fake.codes).toHaveLength(1);
  });
});

describe('reading a payment code', () => {
  test.each([
    ['pending', 'pending'],
    ['processing', 'pending'],
    ['completed', 'completed'],
    ['failed', 'failed'],
    ['cancelled', 'failed'],
    ['expired', 'expired'],
  ] as const)('Monime status %s reads as %s', async (wire, expected) => {
    const req = request();
    const created = await provider.createPaymentCode(req);
    fake.setStatus(created.id, wire);
    const read = await provider.getPaymentCode(created.id);
    expect(read).toEqual({ ...created, status: expected });

    const get = fake.requests.at(-1)!;
    expect(get.method).toBe('GET');
    expect(get.path).toBe(`/v1/payment-codes/${created.id}`);
    expect(get.headers.authorization).toBe(`Bearer ${fake.accessToken}`);
    expect(get.headers['monime-space-id']).toBe(fake.spaceId);
  });

  test('markCompleted and markFailed drive the status', async () => {
    const a = await provider.createPaymentCode(request());
    const b = await provider.createPaymentCode(request());
    fake.markCompleted(a.id);
    fake.markFailed(b.id);
    expect((await provider.getPaymentCode(a.id)).status).toBe('completed');
    expect((await provider.getPaymentCode(b.id)).status).toBe('failed');
  });

  test('an unknown code is a refusal', async () => {
    const error = await rejection(provider.getPaymentCode('pmc-missing'));
    expect(error).toBeInstanceOf(ProviderRefusedError);
    expect(error.message).toBe('Payment code pmc-missing was not found');
  });
});

describe('refusals are business errors, never retried', () => {
  test('a 4xx refusal throws ProviderRefusedError with the provider message', async () => {
    fake.refuseAmount(4040, 'Amount not allowed for this space');
    const req = request({ amount: 4040n, depositAmount: 4000n });
    const error = await rejection(provider.createPaymentCode(req));
    expect(error).toBeInstanceOf(ProviderRefusedError);
    expect(error.message).toBe('Amount not allowed for this space');
    expect(error.cause).toMatchObject({ status: 400, code: 'payment_code_refused' });
    expect(fake.codes).toHaveLength(0);
  });

  test('bad credentials are refused too', async () => {
    const wrong = new MonimeMobileMoneyProvider({
      baseUrl: fake.baseUrl,
      accessToken: 'not-the-token',
      spaceId: fake.spaceId,
      webhookSecret: fake.webhookSecret,
    });
    const error = await rejection(wrong.createPaymentCode(request()));
    expect(error).toBeInstanceOf(ProviderRefusedError);
    expect(error.message).toBe('Invalid or missing access token');
  });

  test('an amount that cannot be sent as integer minor units is refused before any request', async () => {
    const error = await rejection(provider.createPaymentCode(request({ amount: 0n })));
    expect(error).toBeInstanceOf(ProviderRefusedError);
    const huge = await rejection(provider.createPaymentCode(request({ amount: 2n ** 53n })));
    expect(huge).toBeInstanceOf(ProviderRefusedError);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('transient failures are plain errors, and a retry with the same key is safe', () => {
  test.each([500, 503, 429, 408, 409])('HTTP %s', async (status) => {
    fake.failNext(1, status);
    const req = request();
    const error = await rejection(provider.createPaymentCode(req));
    expect(error).not.toBeInstanceOf(ProviderRefusedError);
    expect(error).not.toBeInstanceOf(MonimeResponseError);
    expect(error.constructor).toBe(Error);
    expect(error.message).toBe(
      `Monime POST /v1/payment-codes answered HTTP ${status}: Scripted fault: HTTP ${status}`,
    );
    expect(error.cause).toMatchObject({ status });

    const retried = await provider.createPaymentCode(req);
    expect(retried.status).toBe('pending');
    expect(fake.codesFor(req.idempotencyKey)).toHaveLength(1);
    expect(postsFor(req.idempotencyKey)).toHaveLength(2);
  });

  test('a 500 after the code was made: the retry answers that same code', async () => {
    fake.failNext(1, 500, { afterProcessing: true });
    const req = request();
    await rejection(provider.createPaymentCode(req));
    expect(fake.codesFor(req.idempotencyKey)).toHaveLength(1);
    const stored = fake.codesFor(req.idempotencyKey)[0]!;

    const retried = await provider.createPaymentCode(req);
    expect(retried.id).toBe(stored.id);
    expect(fake.codesFor(req.idempotencyKey)).toHaveLength(1);
  });

  test('a timeout (the answer is lost): the retry answers the same code, no duplicate', async () => {
    const quick = adapter({ timeoutMs: 200 });
    fake.failNext(1, 'timeout');
    const req = request();
    const started = Date.now();
    const error = await rejection(quick.createPaymentCode(req));
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(error.constructor).toBe(Error);
    expect(error.message).toBe('Monime POST /v1/payment-codes timed out after 200 ms');
    expect((error.cause as Error).name).toBe('TimeoutError');
    // The fake made the code before it went silent.
    const stored = fake.codesFor(req.idempotencyKey);
    expect(stored).toHaveLength(1);

    const retried = await quick.createPaymentCode(req);
    expect(retried.id).toBe(stored[0]!.id);
    expect(retried.code).toBe(stored[0]!.ussdCode);
    expect(fake.codesFor(req.idempotencyKey)).toHaveLength(1);
    expect(fake.codes).toHaveLength(1);
    expect(postsFor(req.idempotencyKey)).toHaveLength(2);
  });

  test('a timeout on reading a code is transient too', async () => {
    const quick = adapter({ timeoutMs: 200 });
    const created = await quick.createPaymentCode(request());
    fake.failNext(1, 'timeout');
    const error = await rejection(quick.getPaymentCode(created.id));
    expect(error.constructor).toBe(Error);
    expect(error.message).toMatch(/timed out after 200 ms/);
    expect((await quick.getPaymentCode(created.id)).id).toBe(created.id);
  });

  test('a dropped connection is a network error', async () => {
    fake.failNext(1, 'reset');
    const req = request();
    const error = await rejection(provider.createPaymentCode(req));
    expect(error.constructor).toBe(Error);
    expect(error.message).toMatch(/^Monime POST \/v1\/payment-codes failed: /);
    expect(error.cause).toBeDefined();
    await provider.createPaymentCode(req);
    expect(fake.codesFor(req.idempotencyKey)).toHaveLength(1);
  });

  test('nothing listening is a network error', async () => {
    const url = fake.baseUrl;
    await fake.close();
    const closed = new MonimeMobileMoneyProvider({
      baseUrl: url,
      accessToken: 't',
      spaceId: 's',
      webhookSecret: 'w',
    });
    const error = await rejection(closed.getPaymentCode('pmc-1'));
    expect(error.constructor).toBe(Error);
    expect(error.message).toMatch(/^Monime GET \/v1\/payment-codes\/pmc-1 failed: .*ECONNREFUSED/);
    fake = await FakeMonimeServer.start();
  });
});

describe('answers that break the wire format are rejected', () => {
  test.each([
    ['a decimal amount', 104.5],
    ['an amount as a string', '10450'],
    ['a negative amount', -10450],
    ['an amount beyond 2^53', 2 ** 53 + 2],
  ])('%s in a creation answer', async (_label, value) => {
    fake.tamperNextResponse((body) => {
      body.result.amount.value = value;
    });
    const error = await rejection(provider.createPaymentCode(request()));
    expect(error).toBeInstanceOf(MonimeResponseError);
    expect(error).not.toBeInstanceOf(ProviderRefusedError);
    expect(error.message).toMatch(/amount/);
  });

  test('a decimal amount in a read answer', async () => {
    const created = await provider.createPaymentCode(request());
    fake.tamperNextResponse((body) => {
      body.result.amount.value = 104.5;
    });
    const error = await rejection(provider.getPaymentCode(created.id));
    expect(error).toBeInstanceOf(MonimeResponseError);
  });

  test('an amount other than the one asked for', async () => {
    fake.tamperNextResponse((body) => {
      body.result.amount.value = 1045;
    });
    const error = await rejection(provider.createPaymentCode(request()));
    expect(error).toBeInstanceOf(MonimeResponseError);
    expect(error.message).toMatch(/1045 SLE cents, not 10450/);
  });

  test('an unknown status, or a body without the success envelope', async () => {
    const created = await provider.createPaymentCode(request());
    fake.tamperNextResponse((body) => {
      body.result.status = 'on_hold';
    });
    expect(await rejection(provider.getPaymentCode(created.id))).toBeInstanceOf(
      MonimeResponseError,
    );
    fake.tamperNextResponse((body) => {
      delete body.success;
    });
    expect(await rejection(provider.getPaymentCode(created.id))).toBeInstanceOf(
      MonimeResponseError,
    );
  });
});

describe('notifications', () => {
  async function completedCode() {
    const created = await provider.createPaymentCode(request());
    fake.markCompleted(created.id);
    return created;
  }

  test('a valid signature is accepted and read', async () => {
    const created = await completedCode();
    const { rawBody, headers } = fake.notificationFor(created.id);
    expect(provider.parseNotification(rawBody, headers)).toEqual({
      paymentCodeId: created.id,
      status: 'completed',
      reference: created.reference,
    });
  });

  test.each([
    ['payment_code.completed', 'completed'],
    ['payment_code.failed', 'failed'],
    ['payment_code.expired', 'expired'],
  ] as const)('event %s reads as %s', (event, status) => {
    const rawBody = JSON.stringify({
      event,
      data: { id: 'pmc-1', status, metadata: { reference: 'txn_9' } },
    });
    // Header names may come in any case.
    const headers = { 'Monime-Signature': signMonimeNotification(fake.webhookSecret, rawBody) };
    expect(provider.parseNotification(rawBody, headers)).toEqual({
      paymentCodeId: 'pmc-1',
      status,
      reference: 'txn_9',
    });
  });

  test('a notification without a reference reads with reference null', () => {
    const rawBody = JSON.stringify({
      event: 'payment_code.failed',
      data: { id: 'pmc-2', status: 'failed' },
    });
    const headers = {
      [MONIME_SIGNATURE_HEADER]: signMonimeNotification(fake.webhookSecret, rawBody),
    };
    expect(provider.parseNotification(rawBody, headers)).toEqual({
      paymentCodeId: 'pmc-2',
      status: 'failed',
      reference: null,
    });
  });

  test('a tampered body is rejected', async () => {
    const created = await completedCode();
    const { rawBody, headers } = fake.notificationFor(created.id);
    const tampered = rawBody.replace(created.reference, 'txn_someone_else');
    expect(tampered).not.toBe(rawBody);
    expect(provider.parseNotification(tampered, headers)).toBeNull();
  });

  test('a signature made with another secret is rejected', async () => {
    const created = await completedCode();
    const { rawBody, headers } = fake.notificationFor(created.id, { secret: 'not-the-secret' });
    expect(provider.parseNotification(rawBody, headers)).toBeNull();
    // And an adapter holding another secret rejects the fake's genuine notification.
    const genuine = fake.notificationFor(created.id);
    expect(
      adapter({ webhookSecret: 'other' }).parseNotification(genuine.rawBody, genuine.headers),
    ).toBeNull();
  });

  test('a signature older than 5 minutes is rejected; within 5 minutes accepted', async () => {
    const created = await completedCode();
    const now = Math.floor(Date.now() / 1000);
    const stale = fake.notificationFor(created.id, { timestamp: now - 301 });
    expect(provider.parseNotification(stale.rawBody, stale.headers)).toBeNull();
    const future = fake.notificationFor(created.id, { timestamp: now + 301 });
    expect(provider.parseNotification(future.rawBody, future.headers)).toBeNull();
    const recent = fake.notificationFor(created.id, { timestamp: now - 240 });
    expect(provider.parseNotification(recent.rawBody, recent.headers)).not.toBeNull();
  });

  test('a missing or malformed signature header is rejected', async () => {
    const created = await completedCode();
    const { rawBody, headers } = fake.notificationFor(created.id);
    const signature = headers[MONIME_SIGNATURE_HEADER]!;
    const t = /t=(\d+)/.exec(signature)![1]!;
    const v1 = /v1=([0-9a-f]+)/.exec(signature)![1]!;
    for (const header of [
      undefined,
      '',
      'garbage',
      `t=${t}`,
      `v1=${v1}`,
      `t=${t},v1=${v1.slice(0, 63)}`,
      `t=${t},v1=${v1.slice(0, 62)}zz`,
      `t=${Number(t) + 1},v1=${v1}`,
      `t=abc,v1=${v1}`,
    ]) {
      expect(provider.parseNotification(rawBody, { [MONIME_SIGNATURE_HEADER]: header })).toBeNull();
    }
    // Several v1 entries (a secret being rotated): one match is enough.
    const rotated = `t=${t},v1=${'0'.repeat(64)},v1=${v1}`;
    expect(
      provider.parseNotification(rawBody, { [MONIME_SIGNATURE_HEADER]: rotated }),
    ).not.toBeNull();
  });

  test('a correctly signed body that is not a payment code notification is rejected', () => {
    for (const rawBody of [
      'not json',
      JSON.stringify({ event: 'payment_code.completed', data: {} }),
      JSON.stringify({ event: 'payout.completed', data: { id: 'po-1', status: 'completed' } }),
    ]) {
      const headers = {
        [MONIME_SIGNATURE_HEADER]: signMonimeNotification(fake.webhookSecret, rawBody),
      };
      expect(provider.parseNotification(rawBody, headers)).toBeNull();
    }
  });
});

describe('configuration', () => {
  test('defaults and the factory', () => {
    const bare = loadConfig({});
    expect(bare.providers.monime).toEqual({
      baseUrl: 'https://api.monime.io',
      accessToken: undefined,
      spaceId: undefined,
      webhookSecret: undefined,
      timeoutMs: 10_000,
    });
    expect(monimeFromConfig(bare)).toBeNull();
    expect(
      monimeFromConfig(
        loadConfig({
          MONIME_ACCESS_TOKEN: 'tok',
          MONIME_SPACE_ID: 'spc',
          MONIME_WEBHOOK_SECRET: '',
        }),
      ),
    ).toBeNull();

    const full = loadConfig({
      MONIME_API_URL: 'http://127.0.0.1:9/',
      MONIME_ACCESS_TOKEN: 'tok',
      MONIME_SPACE_ID: 'spc',
      MONIME_WEBHOOK_SECRET: 'whsec',
      MONIME_TIMEOUT_MS: '2500',
    });
    expect(full.providers.monime.timeoutMs).toBe(2500);
    const live = monimeFromConfig(full);
    expect(live).toBeInstanceOf(MonimeMobileMoneyProvider);
    expect(live?.name).toBe('monime');
  });

  test('the factory builds an adapter that talks to the configured server', async () => {
    const live = monimeFromConfig(
      loadConfig({
        MONIME_API_URL: `${fake.baseUrl}/`,
        MONIME_ACCESS_TOKEN: fake.accessToken,
        MONIME_SPACE_ID: fake.spaceId,
        MONIME_WEBHOOK_SECRET: fake.webhookSecret,
      }),
    )!;
    const created = await live.createPaymentCode(request());
    expect(fake.code(created.id).status).toBe('pending');
  });
});

function payoutRequest(overrides: Partial<PayoutRequest> = {}): PayoutRequest {
  counter += 1;
  return {
    idempotencyKey: `cashout-${counter}-${Date.now()}`,
    reference: `txn_${counter}`,
    amount: 10_000n,
    phoneNumber: '+23276123456',
    description: 'Cashout from wallet w1',
    ...overrides,
  };
}

describe('payouts to a mobile-money destination (cashouts)', () => {
  test('sends the Monime payout request with its idempotency key and maps the answer', async () => {
    const req = payoutRequest();
    const payout = await provider.createPayout(req);
    expect(fake.requests).toHaveLength(1);
    const sent = fake.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/payouts');
    expect(sent.headers.authorization).toBe(`Bearer ${fake.accessToken}`);
    expect(sent.headers['monime-space-id']).toBe(fake.spaceId);
    expect(sent.headers['idempotency-key']).toBe(req.idempotencyKey);
    expect(sent.json).toEqual({
      amount: { currency: 'SLE', value: 10000 },
      destination: { type: 'momo', phoneNumber: '+23276123456' },
      metadata: { reference: req.reference, description: 'Cashout from wallet w1' },
    });
    const stored = fake.payoutsFor(req.idempotencyKey);
    expect(stored).toHaveLength(1);
    expect(payout).toEqual({
      id: stored[0]!.id,
      amount: 10_000n,
      currency: 'SLE',
      status: 'pending',
      reference: req.reference,
    });
  });

  test('reads a payout’s status, mapping processing to pending and cancelled to failed', async () => {
    const created = await provider.createPayout(payoutRequest());
    fake.setPayoutStatus(created.id, 'processing');
    expect((await provider.getPayout(created.id)).status).toBe('pending');
    fake.setPayoutStatus(created.id, 'completed');
    expect(await provider.getPayout(created.id)).toMatchObject({
      id: created.id,
      status: 'completed',
    });
    fake.setPayoutStatus(created.id, 'cancelled');
    expect((await provider.getPayout(created.id)).status).toBe('failed');
    const missing = await rejection(provider.getPayout('pyt-missing'));
    expect(missing).toBeInstanceOf(ProviderRefusedError);
  });

  test('a refused payout is a ProviderRefusedError; nothing is created', async () => {
    fake.refuseAmount(4040, 'The payout was refused');
    const error = await rejection(provider.createPayout(payoutRequest({ amount: 4040n })));
    expect(error).toBeInstanceOf(ProviderRefusedError);
    expect(error.message).toBe('The payout was refused');
    expect(fake.payouts).toHaveLength(0);
  });

  test('a timeout after the payout was made: the retry with the same key gets the same payout', async () => {
    const quick = adapter({ timeoutMs: 200 });
    fake.failNext(1, 'timeout');
    const req = payoutRequest();
    const error = await rejection(quick.createPayout(req));
    expect(error.constructor).toBe(Error);
    expect(error.message).toBe('Monime POST /v1/payouts timed out after 200 ms');
    const retried = await quick.createPayout(req);
    expect(fake.payoutsFor(req.idempotencyKey)).toHaveLength(1);
    expect(retried.id).toBe(fake.payoutsFor(req.idempotencyKey)[0]!.id);
    expect(postsFor(req.idempotencyKey)).toHaveLength(2);
  });

  test('a 503 is transient and a payout of another amount than asked is a wire-format error', async () => {
    fake.failNext(1, 503);
    const req = payoutRequest();
    const transient = await rejection(provider.createPayout(req));
    expect(transient.constructor).toBe(Error);
    expect(fake.payouts).toHaveLength(0);
    fake.tamperNextResponse((body) => {
      body.result.amount.value = 1;
    });
    const tampered = await rejection(provider.createPayout(req));
    expect(tampered).toBeInstanceOf(MonimeResponseError);
  });

  test('verifies and reads signed payout notifications; a payment-code reader ignores them', async () => {
    const req = payoutRequest();
    const created = await provider.createPayout(req);
    fake.setPayoutStatus(created.id, 'failed');
    const signed = fake.payoutNotificationFor(created.id);
    expect(provider.parsePayoutNotification(signed.rawBody, signed.headers)).toEqual({
      payoutId: created.id,
      status: 'failed',
      reference: req.reference,
    });
    expect(provider.parseNotification(signed.rawBody, signed.headers)).toBeNull();
    const forged = fake.payoutNotificationFor(created.id, { secret: 'not-the-secret' });
    expect(provider.parsePayoutNotification(forged.rawBody, forged.headers)).toBeNull();
    const stale = fake.payoutNotificationFor(created.id, {
      timestamp: Math.floor(Date.now() / 1000) - 3600,
    });
    expect(provider.parsePayoutNotification(stale.rawBody, stale.headers)).toBeNull();
    const code = await provider.createPaymentCode(request());
    fake.markCompleted(code.id);
    const codeNotice = fake.notificationFor(code.id);
    expect(provider.parsePayoutNotification(codeNotice.rawBody, codeNotice.headers)).toBeNull();
  });
});
