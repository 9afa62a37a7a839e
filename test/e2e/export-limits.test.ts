import http from 'node:http';
import { sql } from 'slonik';
import { z } from 'zod';
import type { TestApp } from '../support/engine';
import { createFundedWallet, createUserWithWallet, transfer, TRANSFER } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { pollUntil } from '../support/wait';

const TIME_LIMIT_SECONDS = 12;
const engine = useTestEngine({
  // The production pool's size, so that exports holding connections would starve everyone.
  poolSize: 20,
  env: { EXPORT_BATCH_ROWS: '50', EXPORT_TIME_LIMIT_SECONDS: String(TIME_LIMIT_SECONDS) },
});
const a = useTestApp(engine);
const b = useTestApp(engine);
const c = useTestApp(engine);
const d = useTestApp(engine);

const EXPORT = '/api/v1/transactions/export';
const COPIES = 2600;

type Opened = {
  status: number;
  retryAfter: string | undefined;
  body: string;
  response: http.IncomingMessage;
  /** Settles once the response is over: whether the client got all of it. */
  ended: Promise<boolean>;
};

/** An export whose client reads the headers and then nothing more (a 429's body is read). */
function slowExport(app: TestApp): Promise<Opened> {
  const url = new URL(`${engine.url}${EXPORT}`);
  return new Promise((resolve, reject) => {
    const request = http.get(
      url,
      {
        headers: {
          'api-key': app.credentials.test.apiKey,
          'secret-key': app.credentials.test.secretKey,
        },
        agent: false,
      },
      (response) => {
        response.on('error', () => undefined);
        const ended = new Promise<boolean>((settle) =>
          response.once('close', () => settle(response.complete)),
        );
        const opened = {
          status: response.statusCode!,
          retryAfter: response.headers['retry-after'],
          response,
          ended,
        };
        if (response.statusCode === 200) {
          response.pause();
          resolve({ ...opened, body: '' });
          return;
        }
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.once('end', () => resolve({ ...opened, body }));
      },
    );
    request.on('error', reject);
  });
}

/** Copies of one transfer with long descriptions: its CSV is far more than the sockets buffer. */
async function seedExport(app: ReturnType<typeof useTestApp>) {
  const from = (await createFundedWallet(app.api, engine.pool, 1_000_000n)).walletId;
  const to = (await createUserWithWallet(app.api)).walletId;
  const seed = await transfer<{ id: string }>(app.api, from, to, 1);
  await engine.pool.query(sql.unsafe`
    INSERT INTO transactions
    SELECT (jsonb_populate_record(NULL::transactions, to_jsonb(t) || jsonb_build_object(
      'id', gen_random_uuid(),
      'description', repeat('x', 4000),
      'created_at', t.created_at - g * interval '1 second',
      'updated_at', t.created_at - g * interval '1 second',
      'workflow_id', NULL))).*
    FROM transactions t, generate_series(1, ${COPIES}) AS g
    WHERE t.id = ${seed.id}`);
}

const exportsReading = () =>
  engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE state <> 'idle' AND pid <> pg_backend_pid() AND query LIKE '%AS provider_fee%'`);

const opened: Opened[] = [];

beforeAll(async () => {
  for (const app of [a, b, c]) await seedExport(app);
});

afterAll(() => {
  for (const { response } of opened) response.destroy();
});

describe('exports under slow clients', () => {
  it('streams at most 2 per application and 4 in all; other tenants keep the database', async () => {
    const round = async (app: TestApp, n: number) => {
      const replies = await Promise.all(Array.from({ length: n }, () => slowExport(app)));
      opened.push(...replies);
      return replies;
    };
    // An export refused before it streams gives its slot back at once.
    const theirs = (await createUserWithWallet(d.api)).walletId;
    for (let i = 0; i < 3; i += 1) {
      expect((await a.api.get(`${EXPORT}?wallet_id=${theirs}`)).status).toBe(403);
    }
    // One application after the other, so that which one meets which limit is known.
    const ofA = await round(a.app, 8);
    const ofB = await round(b.app, 8);
    const ofC = await round(c.app, 6);
    const statuses = (replies: Opened[]) => replies.map((r) => r.status).sort();
    expect(statuses(ofA)).toEqual([200, 200, ...Array(6).fill(429)]);
    expect(statuses(ofB)).toEqual([200, 200, ...Array(6).fill(429)]);
    expect(statuses(ofC)).toEqual(Array(6).fill(429));
    const refused = [...ofA, ...ofB, ...ofC].filter((r) => r.status === 429);
    expect(new Set(refused.map((r) => r.retryAfter))).toEqual(new Set(['30']));
    expect(JSON.parse(ofA.find((r) => r.status === 429)!.body)).toEqual({
      detail:
        'This application already has 2 exports streaming, the most it may have at a time: retry in 30 seconds',
    });
    expect(JSON.parse(ofC[0]!.body)).toEqual({
      detail: 'The API is streaming 4 exports, the most it runs at a time: retry in 30 seconds',
    });
    // The four streaming ones hold a cursor each, and no more connections than that.
    expect(await pollUntil(exportsReading, (n) => n === 4, { timeoutMs: 5_000 })).toBe(4);

    // Another application reads and moves money meanwhile, each answer within a second.
    const from = (await createFundedWallet(d.api, engine.pool, 100_000n)).walletId;
    const to = (await createUserWithWallet(d.api)).walletId;
    const timed = async <T>(request: () => Promise<T>) => {
      const started = Date.now();
      const reply = await request();
      return { reply, ms: Date.now() - started };
    };
    for (let i = 0; i < 10; i += 1) {
      const listed = await timed(() => d.api.get('/api/v1/transactions/?per_page=5'));
      const moved = await timed(() =>
        d.api.post(TRANSFER, { from_wallet_id: from, to_wallet_id: to, amount: 1 }),
      );
      expect([listed.reply.status, moved.reply.status, moved.reply.body.status]).toEqual([
        200,
        200,
        'completed',
      ]);
      expect(Math.max(listed.ms, moved.ms)).toBeLessThan(1000);
    }
    const listed = await d.api.get('/api/v1/transactions/?per_page=100');
    expect(listed.body.data).toHaveLength(10);

    // Past the time limit the server cuts the streams the clients never read, which frees their
    // cursors and slots; a client that reads on finds its response incomplete.
    const stopped = () => engine.logs.filter((l) => l.includes('it reached its time limit')).length;
    const timeout = { timeoutMs: (TIME_LIMIT_SECONDS + 10) * 1000 };
    expect(await pollUntil(stopped, (n) => n >= 4, timeout)).toBe(4);
    expect(await pollUntil(exportsReading, (n) => n === 0, { timeoutMs: 5_000 })).toBe(0);
    const streaming = [...ofA, ...ofB].filter((r) => r.status === 200);
    for (const { response } of streaming) response.resume();
    expect(await Promise.all(streaming.map((r) => r.ended))).toEqual([false, false, false, false]);
    const whole = await c.api.get(EXPORT);
    expect(whole.status).toBe(200);
    expect((whole.body as string).split('\r\n')).toHaveLength(1 + COPIES + 1 + 1);
    expect(await exportsReading()).toBe(0);
  }, 90_000);
});
