import { assertLedgerInvariant, balanceOf, fundWallet } from '../support/database';
import { createTestApp } from '../support/engine';
import { clientFor, createUserWithWallet } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { increase, scrape, series, type Samples } from '../support/metrics';
import { workflowIds } from '../../src/workflows/ids';

/**
 * The API's metrics on a listener of their own (`API_METRICS_PORT`), never the public
 * port. The worker runs in this process (startTestEngine), so the payments it ends and the ledger
 * writes it times are in the same registry as the API's counters.
 */
const engine = useTestEngine({ env: { API_METRICS_PORT: '0' } });
const { api } = useTestApp(engine);

const TRANSFER = '/api/v1/transactions/wallet/transfer';
const HOLD = '/api/v1/escrow/hold';
const metricsOf = () => scrape(engine.metricsUrl!);

const requests = (method: string, route: string, status: number) =>
  series('http_requests_total', { method, route, status });
const latencies = (method: string, route: string, status: number) =>
  series('http_request_duration_seconds_count', { method, route, status });

describe('GET /metrics', () => {
  it('is not served on the API’s public port, which answers 404', async () => {
    const response = await fetch(`${engine.url}/metrics`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: 'Not found' });
    expect(engine.metricsUrl).not.toContain(new URL(engine.url).port);
  });

  it('needs no credentials on its own listener and answers the Prometheus text format', async () => {
    const response = await fetch(engine.metricsUrl!);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    for (const name of [
      'http_requests_total',
      'http_request_duration_seconds',
      'payments_started_total',
      'payments_started_eagerly_total',
      'payments_answered_locally_total',
      'payments_ended_total',
      'idempotent_replays_total',
      'rate_limited_requests_total',
      'ledger_transaction_duration_seconds',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
  });

  it('counts a transfer, its replay, a 422, a 429 and an escrow hold exactly, by route template', async () => {
    const sender = await createUserWithWallet(api);
    const recipient = await createUserWithWallet(api);
    await fundWallet(engine.pool, sender.walletId, 10_000n);
    const limited = clientFor(
      engine.url,
      await createTestApp(engine.pool, { rateLimits: { default: 1 } }),
    );
    const before: Samples = await metricsOf();

    const body = {
      from_wallet_id: sender.walletId,
      to_wallet_id: recipient.walletId,
      amount: 12.5,
    };
    const key = { 'Idempotency-Key': `metrics-${Date.now()}` };
    const transfer = await api.post(TRANSFER, body, key);
    expect(transfer.status).toBe(200);
    expect(transfer.body).toMatchObject({ status: 'completed', transaction_type: 'transfer' });
    const replay = await api.post(TRANSFER, body, key);
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(transfer.body);

    const invalid = await api.post(TRANSFER, { ...body, amount: 'twelve' });
    expect(invalid.status).toBe(422);
    expect(invalid.body.detail).toMatch(/amount/);

    // One default-category request a minute: the next is refused (the loop goes on only if the
    // window happened to turn between the two).
    const statuses: number[] = [];
    while (!statuses.includes(429) && statuses.length < 5) {
      statuses.push((await limited.get('/api/v1/users/')).status);
    }
    expect(statuses.at(-1)).toBe(429);
    const passed = statuses.length - 1;
    expect(statuses.slice(0, passed).every((s) => s === 200)).toBe(true);

    const hold = await api.post(HOLD, { wallet_id: sender.walletId, amount: 40 });
    expect(hold.status).toBe(200);
    expect(hold.body).toMatchObject({ status: 'held', transaction_type: 'escrow_hold' });
    const shown = await api.get(`/api/v1/transactions/${transfer.body.id}`);
    expect(shown.status).toBe(200);

    // Side effects: the money moved once (not twice for the replay), the ledger balances.
    expect(await balanceOf(engine.pool, sender.walletId)).toBe(10_000n - 1_250n - 4_000n);
    expect(await balanceOf(engine.pool, recipient.walletId)).toBe(1_250n);
    await assertLedgerInvariant(engine.pool);

    const after = await metricsOf();
    const grew = (key: string) => increase(before, after, key);
    // HTTP: by method, route template and status; the histogram counts the same requests.
    expect(grew(requests('POST', TRANSFER, 200))).toBe(2);
    expect(grew(requests('POST', TRANSFER, 422))).toBe(1);
    expect(grew(requests('GET', '/api/v1/users/', 200))).toBe(passed);
    expect(grew(requests('GET', '/api/v1/users/', 429))).toBe(1);
    expect(grew(requests('POST', HOLD, 200))).toBe(1);
    expect(grew(requests('GET', '/api/v1/transactions/:transaction_id', 200))).toBe(1);
    expect(grew(latencies('POST', TRANSFER, 200))).toBe(2);
    expect(grew(latencies('POST', TRANSFER, 422))).toBe(1);
    expect(grew(latencies('GET', '/api/v1/transactions/:transaction_id', 200))).toBe(1);
    // Payments: the replay and the 422 start nothing.
    expect(grew(series('payments_started_total', { type: 'transfer' }))).toBe(1);
    expect(grew(series('payments_started_total', { type: 'escrow_hold' }))).toBe(1);
    // The worker runs in the API's process: the transfer's first workflow task came with the
    // start call's answer (eager start).
    expect(grew(series('payments_started_eagerly_total', { type: 'transfer' }))).toBe(1);
    // ... and that worker said how it settled: no wait on the server for the result. The
    // escrow hold too: started eagerly, its first step answered by the same worker.
    expect(grew(series('payments_answered_locally_total', { type: 'transfer' }))).toBe(1);
    expect(grew(series('payments_started_eagerly_total', { type: 'escrow_hold' }))).toBe(1);
    expect(grew(series('payments_answered_locally_total', { type: 'escrow_hold' }))).toBe(1);
    expect(grew(series('payments_ended_total', { type: 'transfer', outcome: 'completed' }))).toBe(
      1,
    );
    expect(grew(series('payments_ended_total', { type: 'escrow_hold', outcome: 'held' }))).toBe(1);
    expect(grew(series('idempotent_replays_total', { route: TRANSFER }))).toBe(1);
    expect(grew(series('rate_limited_requests_total', { category: 'default' }))).toBe(1);
    expect(grew(series('ledger_transaction_duration_seconds_count', { kind: 'transfer' }))).toBe(1);
    expect(grew(series('ledger_transaction_duration_seconds_count', { kind: 'escrow_hold' }))).toBe(
      1,
    );

    // Never a raw path: no series names an id.
    const text = await (await fetch(engine.metricsUrl!)).text();
    for (const id of [sender.walletId, recipient.walletId, transfer.body.id, hold.body.id]) {
      expect(text).not.toContain(id);
    }
  });

  it('answers a completed transfer from the worker of its own process, as the workflow records it; a declined transfer or hold from the server', async () => {
    const sender = await createUserWithWallet(api);
    const recipient = await createUserWithWallet(api);
    await fundWallet(engine.pool, sender.walletId, 1_000n);
    const before: Samples = await metricsOf();
    const body = { from_wallet_id: sender.walletId, to_wallet_id: recipient.walletId };

    const done = await api.post(TRANSFER, { ...body, amount: 4 });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', amount: 4 });
    const declined = await api.post(TRANSFER, { ...body, amount: 100 });
    expect(declined.status).toBe(400);
    expect(declined.body).toEqual({ detail: 'Insufficient funds' });
    // A declined hold is answered by its `hold` update, as the workflow records it.
    const refused = await api.post(HOLD, { wallet_id: sender.walletId, amount: 100 });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ detail: 'Insufficient funds' });

    const after = await metricsOf();
    const grew = (key: string) => increase(before, after, key);
    const fellBack = (type: string, reason: string) =>
      grew(series('payments_eager_fallbacks_total', { type, reason }));
    // A start or a report that missed its deadline on a loaded machine is counted as such.
    const started = (type: string) =>
      grew(series('payments_started_eagerly_total', { type })) + fellBack(type, 'start_failed');
    const local = (type: string) =>
      grew(series('payments_answered_locally_total', { type })) + fellBack(type, 'settlement_wait');
    expect(started('transfer')).toBe(2);
    expect(local('transfer')).toBe(1);
    expect(started('escrow_hold')).toBe(1);
    expect(grew(series('payments_answered_locally_total', { type: 'escrow_hold' }))).toBe(0);
    expect(fellBack('transfer', 'no_slot') + fellBack('escrow_hold', 'no_slot')).toBe(0);
    // What the API answered at once is what the workflow went on to record.
    const recorded = await engine.temporal.workflow
      .getHandle(workflowIds.transfer(done.body.id as string))
      .result();
    expect(recorded).toMatchObject({ status: 'completed', transactionId: done.body.id });
    expect(await balanceOf(engine.pool, sender.walletId)).toBe(600n);
    expect(await balanceOf(engine.pool, recipient.walletId)).toBe(400n);
    await assertLedgerInvariant(engine.pool);
  });

  it('finds a worker slot for each of 48 transfers sent at once, and moves each once', async () => {
    // More payments at once than the SDK's 40 workflow task slots, less its 10 pollers, left
    // free: each of them must still find a slot (TEMPORAL_WORKFLOW_TASK_SLOTS).
    const pairs = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const sender = await createUserWithWallet(api);
        const recipient = await createUserWithWallet(api);
        await fundWallet(engine.pool, sender.walletId, 1_000n);
        return { sender: sender.walletId, recipient: recipient.walletId };
      }),
    );
    const before = await metricsOf();
    const answers = await Promise.all(
      Array.from({ length: 48 }, (_, i) => {
        const pair = pairs[i % pairs.length]!;
        return api.post(
          TRANSFER,
          { from_wallet_id: pair.sender, to_wallet_id: pair.recipient, amount: 0.25 },
          { 'Idempotency-Key': `at-once-${Date.now()}-${i}` },
        );
      }),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const after = await metricsOf();
    const grew = (key: string) => increase(before, after, key);
    const fellBack = (reason: string) =>
      grew(series('payments_eager_fallbacks_total', { type: 'transfer', reason }));
    const eager = grew(series('payments_started_eagerly_total', { type: 'transfer' }));
    const local = grew(series('payments_answered_locally_total', { type: 'transfer' }));
    expect(grew(series('payments_started_total', { type: 'transfer' }))).toBe(48);
    // No start lacked a slot. On a loaded machine a start or a report may miss its deadline,
    // and that payment is answered through the server: each is accounted for exactly once.
    expect(fellBack('no_slot')).toBe(0);
    expect(fellBack('not_local')).toBe(0);
    expect(eager + fellBack('start_failed')).toBe(48);
    expect(local + fellBack('settlement_wait')).toBe(eager);
    expect(eager).toBeGreaterThan(0);
    for (const pair of pairs) {
      expect(await balanceOf(engine.pool, pair.sender)).toBe(1_000n - 6n * 25n);
      expect(await balanceOf(engine.pool, pair.recipient)).toBe(6n * 25n);
    }
    await assertLedgerInvariant(engine.pool);
  });

  it('labels a path no route matches as unmatched, never by the path itself', async () => {
    const before = await metricsOf();
    const missing = await api.get('/api/v1/no-such-thing/42');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'Not found' });
    const after = await metricsOf();
    expect(increase(before, after, requests('GET', 'unmatched', 404))).toBe(1);
    expect([...after.keys()].some((key) => key.includes('no-such-thing'))).toBe(false);
  });
});

describe('METRICS_ENABLED=false', () => {
  const off = useTestEngine({ env: { METRICS_ENABLED: 'false', API_METRICS_PORT: '0' } });

  it('opens no metrics listener and answers 404 at /metrics; the rest of the API works', async () => {
    expect(off.metricsUrl).toBeUndefined();
    const response = await fetch(`${off.url}/metrics`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: 'Not found' });
    expect((await fetch(`${off.url}/healthz`)).status).toBe(200);
  });
});
