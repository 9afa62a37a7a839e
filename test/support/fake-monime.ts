import { randomBytes, randomInt } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { signMonimeNotification, MONIME_SIGNATURE_HEADER } from '../../src/providers/monime';

/**
 * A fake Monime API (v1 payment codes, payouts, financial transactions) on loopback, in its wire
 * format: bearer token and `Monime-Space-Id` checked, codes keyed by `Idempotency-Key` (the same
 * key, the same code), scripted faults, signed notifications; every request recorded.
 */

export type FakeMonimeStatus =
  'pending' | 'processing' | 'completed' | 'failed' | 'cancelled' | 'expired';

export type FakePaymentCode = {
  id: string;
  idempotencyKey: string;
  /** The creation request's body, as the fake read it. */
  requestBody: string;
  name: string;
  ussdCode: string;
  amount: { currency: string; value: unknown };
  status: FakeMonimeStatus;
  createTime: string;
  expireTime: string;
  metadata: Record<string, unknown>;
};

/**
 * A movement of a financial account (`GET /v1/financial-transactions`) as Monime lists it, traced
 * to what owns it (a payment of a payment code, a payout); fees and reversals marked.
 */
export type FakeFinancialTransaction = {
  id: string;
  type: 'credit' | 'debit';
  amount: { currency: string; value: number };
  timestamp: string;
  reference: string;
  financialAccount: { id: string; balance: { after: { currency: string; value: number } } };
  originatingReversal: { originTxnId: string; originTxnRef: string } | null;
  originatingFee: { code: string } | null;
  ownershipGraph: { owner: FakeOwner | null };
  metadata: Record<string, unknown> | null;
};
export type FakeOwner = {
  id: string;
  type: string;
  metadata: Record<string, unknown> | null;
  owner?: FakeOwner | null;
};

/** A payout to a mobile-money destination (`POST /v1/payouts`), as the fake keeps it. */
export type FakePayout = {
  id: string;
  idempotencyKey: string;
  requestBody: string;
  amount: { currency: string; value: unknown };
  destination: { type: string; phoneNumber: string };
  status: 'pending' | 'processing' | 'completed' | 'failed' | 'cancelled';
  createTime: string;
  metadata: Record<string, unknown>;
};

export type RecordedRequest = {
  method: string;
  path: string;
  /** The query string's parameters. */
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: unknown;
};

/**
 * `'timeout'`: no answer; by default the work is done first, so only the answer is lost (what an
 * idempotency key is for). `'reset'`: the connection destroyed unanswered. A number: that HTTP
 * status with a Monime error body, by default without the work done.
 */
export type FakeFault = 'timeout' | 'reset' | number;

type ScriptedFault = { fault: FakeFault; afterProcessing: boolean };

export type FakeMonimeOptions = {
  accessToken?: string;
  spaceId?: string;
  webhookSecret?: string;
};

type Answer = { status: number; body: unknown };

export class FakeMonimeServer {
  readonly requests: RecordedRequest[] = [];
  readonly codes: FakePaymentCode[] = [];
  readonly payouts: FakePayout[] = [];
  /** In the order Monime lists them (newest first, as they were added last). */
  readonly financialTransactions: FakeFinancialTransaction[] = [];
  readonly accessToken: string;
  readonly spaceId: string;
  readonly webhookSecret: string;
  private readonly faults: ScriptedFault[] = [];
  private readonly refusals = new Map<string, string>();
  private readonly tamperers: Array<(body: any) => void> = [];
  private readonly hanging = new Set<http.ServerResponse>();

  private constructor(
    private readonly server: http.Server,
    options: FakeMonimeOptions,
  ) {
    this.accessToken = options.accessToken ?? 'mon_test_token';
    this.spaceId = options.spaceId ?? 'spc_test';
    this.webhookSecret = options.webhookSecret ?? 'whsec_test_monime_secret';
  }

  static async start(options: FakeMonimeOptions = {}): Promise<FakeMonimeServer> {
    const server = http.createServer();
    const fake = new FakeMonimeServer(server, options);
    server.on('request', (req, res) => fake.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return fake;
  }

  get baseUrl(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** The next `n` requests meet `fault` (see FakeFault for what is done before it). */
  failNext(n: number, fault: FakeFault, options: { afterProcessing?: boolean } = {}): void {
    const afterProcessing = options.afterProcessing ?? fault === 'timeout';
    for (let i = 0; i < n; i += 1) this.faults.push({ fault, afterProcessing });
  }

  /** Creating a code of exactly this many SLE cents is refused with a 400 (a business refusal). */
  refuseAmount(value: bigint | number, message = 'The payment code could not be created'): void {
    this.refusals.set(String(value), message);
  }

  /** Changes the JSON body of the next successful answer (to break the wire format on purpose). */
  tamperNextResponse(change: (body: any) => void): void {
    this.tamperers.push(change);
  }

  codesFor(idempotencyKey: string): FakePaymentCode[] {
    return this.codes.filter((c) => c.idempotencyKey === idempotencyKey);
  }

  code(id: string): FakePaymentCode {
    const code = this.codes.find((c) => c.id === id);
    if (!code) throw new Error(`fake Monime has no payment code ${id}`);
    return code;
  }

  setStatus(id: string, status: FakeMonimeStatus): FakePaymentCode {
    const code = this.code(id);
    code.status = status;
    return code;
  }

  markCompleted(id: string): FakePaymentCode {
    return this.setStatus(id, 'completed');
  }

  markFailed(id: string): FakePaymentCode {
    return this.setStatus(id, 'failed');
  }

  /** The notification Monime would send about a code now, signed with the fake's secret. */
  notificationFor(
    id: string,
    options: { timestamp?: number; secret?: string } = {},
  ): { rawBody: string; headers: Record<string, string> } {
    const code = this.code(id);
    const event =
      code.status === 'completed' || code.status === 'failed' || code.status === 'expired'
        ? `payment_code.${code.status}`
        : `payment_code.${code.status === 'cancelled' ? 'failed' : 'updated'}`;
    return this.signed(
      { event, data: { id: code.id, status: code.status, metadata: code.metadata } },
      options,
    );
  }

  payoutsFor(idempotencyKey: string): FakePayout[] {
    return this.payouts.filter((p) => p.idempotencyKey === idempotencyKey);
  }

  payout(id: string): FakePayout {
    const payout = this.payouts.find((p) => p.id === id);
    if (!payout) throw new Error(`fake Monime has no payout ${id}`);
    return payout;
  }

  setPayoutStatus(id: string, status: FakePayout['status']): FakePayout {
    const payout = this.payout(id);
    payout.status = status;
    return payout;
  }

  /** The notification Monime would send about a payout now (`payout.<status>`), signed. */
  payoutNotificationFor(
    id: string,
    options: { timestamp?: number; secret?: string } = {},
  ): { rawBody: string; headers: Record<string, string> } {
    const payout = this.payout(id);
    return this.signed(
      {
        event: `payout.${payout.status === 'cancelled' ? 'failed' : payout.status}`,
        data: { id: payout.id, status: payout.status, metadata: payout.metadata },
      },
      options,
    );
  }

  /** Books a movement: `amount` in minor units, `owner` what it belongs to, newest first. */
  addFinancialTransaction(input: {
    type: 'credit' | 'debit';
    amount: number;
    timestamp: string;
    owner: FakeOwner | null;
    fee?: boolean;
    reverses?: string;
  }): FakeFinancialTransaction {
    const transaction: FakeFinancialTransaction = {
      id: `txn-${randomBytes(10).toString('hex')}`,
      type: input.type,
      amount: { currency: 'SLE', value: input.amount },
      timestamp: input.timestamp,
      reference: `ref-${randomBytes(6).toString('hex')}`,
      financialAccount: {
        id: 'fac-fake-main',
        balance: { after: { currency: 'SLE', value: 0 } },
      },
      originatingReversal: input.reverses
        ? { originTxnId: input.reverses, originTxnRef: `ref-${input.reverses}` }
        : null,
      originatingFee: input.fee ? { code: 'payout_fee' } : null,
      ownershipGraph: { owner: input.owner },
      metadata: null,
    };
    this.financialTransactions.unshift(transaction);
    return transaction;
  }

  /** A notification body as Monime sends it, signed with the fake's secret (or `secret`). */
  private signed(
    message: unknown,
    options: { timestamp?: number; secret?: string },
  ): { rawBody: string; headers: Record<string, string> } {
    const rawBody = JSON.stringify(message);
    const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
    return {
      rawBody,
      headers: {
        'content-type': 'application/json',
        [MONIME_SIGNATURE_HEADER]: signMonimeNotification(
          options.secret ?? this.webhookSecret,
          rawBody,
          timestamp,
        ),
      },
    };
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = body ? JSON.parse(body) : undefined;
      } catch {
        json = undefined;
      }
      const url = new URL(req.url ?? '/', 'http://fake');
      const recorded = {
        method: req.method ?? '',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body,
        json,
      };
      this.requests.push(recorded);

      const scripted = this.faults.shift();
      if (scripted && !scripted.afterProcessing) {
        this.fault(res, scripted.fault);
        return;
      }
      const answer = this.route(recorded);
      if (scripted) {
        this.fault(res, scripted.fault);
        return;
      }
      if (answer.status < 300) {
        const change = this.tamperers.shift();
        if (change) change(answer.body);
      }
      this.send(res, answer);
    });
  }

  private fault(res: http.ServerResponse, fault: FakeFault): void {
    if (fault === 'timeout') {
      this.hanging.add(res);
      res.on('close', () => this.hanging.delete(res));
      return;
    }
    if (fault === 'reset') {
      res.socket?.destroy();
      return;
    }
    this.send(res, failure(fault, 'internal_error', `Scripted fault: HTTP ${fault}`));
  }

  private send(res: http.ServerResponse, answer: Answer): void {
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  }

  private route(req: RecordedRequest): Answer {
    if (req.headers.authorization !== `Bearer ${this.accessToken}`) {
      return failure(401, 'unauthorized', 'Invalid or missing access token');
    }
    if (req.headers['monime-space-id'] !== this.spaceId) {
      return failure(403, 'forbidden', 'Unknown space');
    }
    if (req.method === 'GET' && req.path === '/v1/financial-transactions') {
      return this.listFinancialTransactions(req);
    }
    if (req.method === 'POST' && req.path === '/v1/payment-codes') return this.create(req);
    if (req.method === 'POST' && req.path === '/v1/payouts') return this.createPayout(req);
    const payoutMatch = /^\/v1\/payouts\/([^/]+)$/.exec(req.path);
    if (req.method === 'GET' && payoutMatch) {
      const id = decodeURIComponent(payoutMatch[1] ?? '');
      const payout = this.payouts.find((p) => p.id === id);
      if (!payout) return failure(404, 'not_found', `Payout ${id} was not found`);
      return { status: 200, body: payoutEnvelope(payout) };
    }
    const match = /^\/v1\/payment-codes\/([^/]+)$/.exec(req.path);
    if (req.method === 'GET' && match) {
      const id = decodeURIComponent(match[1] ?? '');
      const code = this.codes.find((c) => c.id === id);
      if (!code) return failure(404, 'not_found', `Payment code ${id} was not found`);
      return { status: 200, body: envelope(code) };
    }
    return failure(404, 'not_found', `No route ${req.method} ${req.path}`);
  }

  /** Monime's cursor pages: `limit` 1 to 50 (10 by default), `after` the cursor it gave. */
  private listFinancialTransactions(req: RecordedRequest): Answer {
    const limit = Number(req.query.limit ?? 10);
    if (!Number.isInteger(limit) || limit < 1 || limit > 50) {
      return failure(400, 'validation_error', 'limit must be between 1 and 50');
    }
    let start = 0;
    if (req.query.after !== undefined) {
      const index = this.financialTransactions.findIndex((t) => t.id === req.query.after);
      if (index < 0) return failure(400, 'validation_error', 'Invalid pagination cursor');
      start = index + 1;
    }
    const result = this.financialTransactions.slice(start, start + limit);
    const more = start + limit < this.financialTransactions.length;
    return {
      status: 200,
      body: structuredClone({
        success: true,
        messages: [],
        result,
        pagination: { count: result.length, next: more ? result[result.length - 1]!.id : null },
      }),
    };
  }

  private createPayout(req: RecordedRequest): Answer {
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '') {
      return failure(400, 'validation_error', 'Idempotency-Key header is required');
    }
    const existing = this.payouts.find((p) => p.idempotencyKey === key);
    if (existing) {
      if (existing.requestBody !== req.body) {
        return failure(422, 'idempotency_key_reused', 'Idempotency-Key reused with another body');
      }
      return { status: 200, body: payoutEnvelope(existing) };
    }
    const body = req.json as any;
    const value = body?.amount?.value;
    if (
      req.headers['content-type'] !== 'application/json' ||
      body?.amount?.currency !== 'SLE' ||
      !Number.isSafeInteger(value) ||
      value <= 0 ||
      body?.destination?.type !== 'momo' ||
      typeof body?.destination?.phoneNumber !== 'string'
    ) {
      return failure(400, 'validation_error', 'Invalid payout request');
    }
    const refusal = this.refusals.get(String(value));
    if (refusal !== undefined) return failure(400, 'payout_refused', refusal);
    const payout: FakePayout = {
      id: `pyt-${randomBytes(10).toString('hex')}`,
      idempotencyKey: key,
      requestBody: req.body,
      amount: { currency: 'SLE', value },
      destination: { type: 'momo', phoneNumber: body.destination.phoneNumber },
      status: 'pending',
      createTime: new Date().toISOString(),
      metadata: (body.metadata ?? {}) as Record<string, unknown>,
    };
    this.payouts.push(payout);
    return { status: 201, body: payoutEnvelope(payout) };
  }

  private create(req: RecordedRequest): Answer {
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '') {
      return failure(400, 'validation_error', 'Idempotency-Key header is required');
    }
    const existing = this.codes.find((c) => c.idempotencyKey === key);
    if (existing) {
      if (existing.requestBody !== req.body) {
        return failure(422, 'idempotency_key_reused', 'Idempotency-Key reused with another body');
      }
      return { status: 200, body: envelope(existing) };
    }
    const body = req.json as any;
    const value = body?.amount?.value;
    if (
      req.headers['content-type'] !== 'application/json' ||
      typeof body?.name !== 'string' ||
      body?.mode !== 'one_time' ||
      body?.amount?.currency !== 'SLE' ||
      !Number.isSafeInteger(value) ||
      value <= 0 ||
      typeof body?.duration !== 'string'
    ) {
      return failure(400, 'validation_error', 'Invalid payment code request');
    }
    const refusal = this.refusals.get(String(value));
    if (refusal !== undefined) return failure(400, 'payment_code_refused', refusal);
    const seconds = durationSeconds(body.duration);
    if (seconds === null) return failure(400, 'validation_error', 'Invalid duration');
    const now = Date.now();
    const code: FakePaymentCode = {
      id: `pmc-${randomBytes(10).toString('hex')}`,
      idempotencyKey: key,
      requestBody: req.body,
      name: body.name,
      ussdCode: `*715*${randomInt(100_000, 1_000_000)}#`,
      amount: { currency: 'SLE', value },
      status: 'pending',
      createTime: new Date(now).toISOString(),
      expireTime: new Date(now + seconds * 1000).toISOString(),
      metadata: (body.metadata ?? {}) as Record<string, unknown>,
    };
    this.codes.push(code);
    return { status: 201, body: envelope(code) };
  }
}

function envelope(code: FakePaymentCode): unknown {
  // A copy, so that a tampered answer leaves the stored code as it was.
  return structuredClone({
    success: true,
    messages: [],
    result: {
      id: code.id,
      mode: 'one_time',
      status: code.status,
      name: code.name,
      amount: code.amount,
      enable: true,
      ussdCode: code.ussdCode,
      createTime: code.createTime,
      expireTime: code.expireTime,
      metadata: code.metadata,
    },
  });
}

function payoutEnvelope(payout: FakePayout): unknown {
  return structuredClone({
    success: true,
    messages: [],
    result: {
      id: payout.id,
      status: payout.status,
      amount: payout.amount,
      source: { financialAccountId: 'fac-fake-main' },
      destination: payout.destination,
      fees: [],
      createTime: payout.createTime,
      metadata: payout.metadata,
    },
  });
}

function failure(status: number, code: string, message: string): Answer {
  return { status, body: { success: false, messages: [], error: { code, message } } };
}

/** `"1800s"` or an ISO 8601 duration of hours, minutes and seconds (`"PT30M"`). */
function durationSeconds(text: string): number | null {
  const seconds = /^(\d+)s$/.exec(text);
  if (seconds) return Number(seconds[1]);
  const iso = /^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?$/.exec(text);
  if (!iso || text === 'PT') return null;
  return Number(iso[1] ?? 0) * 3600 + Number(iso[2] ?? 0) * 60 + Number(iso[3] ?? 0);
}
