import { defaultPayloadConverter } from '@temporalio/common';
import { sql } from 'slonik';
import { z } from 'zod';
import { createAdmin } from '../../src/db/admins';
import { decodePayloadsIn } from '../../src/temporal/data-converter';
import { workflowIds } from '../../src/workflows/ids';
import { assertLedgerInvariant, balanceOf, eventsOf, ledgerLegs } from '../support/database';
import type { TestEngine } from '../support/engine';
import type { FakeMonimeServer } from '../support/fake-monime';
import { clientFor, createFundedWallet, type ApiClient } from '../support/http';
import { startMonimeEngine } from '../support/live-monime';
import { increase, scrape, series } from '../support/metrics';

/**
 * Live Mode resolutions against the Monime-style adapter (docs/api.md, "Resolve a stuck
 * payment"): Monime cancels no payout, so only a provider that cannot be reached lets an operator
 * force one; the provider's later payment of it is kept as a contradiction, never dropped.
 */
jest.setTimeout(180_000);

const SECRET = 'live-webhook-secret-for-resolutions';
const CASHOUT = '/api/v1/transactions/wallet/mobile-money-cashout';
const PROVIDER_WEBHOOK = '/api/v1/webhooks/providers/mobile-money';
let monime: FakeMonimeServer;
let engine: TestEngine;
let live: ApiClient;

beforeAll(async () => {
  ({ monime, engine, live } = await startMonimeEngine(SECRET, {
    MONIME_TIMEOUT_MS: '300',
    API_METRICS_PORT: '0',
  }));
});
afterAll(async () => {
  await engine?.close();
  await monime?.close();
});

const failed = (extra: Record<string, unknown> = {}) => ({
  outcome: 'failed',
  reason: 'Monime support cannot be reached; the payout is stuck',
  operator: 'Grace',
  ...extra,
});

/** A fresh admin per call: admin calls are limited per admin. */
async function resolveAsAdmin(id: string, body: unknown) {
  const admin = await createAdmin(engine.pool, `ops-${Math.random().toString(36).slice(2, 8)}`);
  const reply = await clientFor(engine.url, null).post(
    `/api/v1/admin/payments/${id}/resolve`,
    body,
    {
      'api-key': admin.api_key,
      'secret-key': admin.secret_key,
    },
  );
  return { reply, admin };
}

async function pendingLiveCashout(): Promise<{ walletId: string; id: string; payoutId: string }> {
  const { walletId } = await createFundedWallet(live, engine.pool, 20_000n);
  const res = await live.post(CASHOUT, {
    wallet_id: walletId,
    amount: 10_000,
    phone_number: '+23276123456',
  });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: 'pending', total_amount: 101 });
  return { walletId, id: res.body.id as string, payoutId: res.body.provider_reference as string };
}

/** The `resolve` updates' arguments as the payment's history keeps them (decrypted). */
async function resolutionsInHistory(workflowId: string): Promise<unknown[]> {
  const { events } = await engine.temporal.workflow.getHandle(workflowId).fetchHistory();
  await decodePayloadsIn(events, engine.temporal.options.loadedDataConverter.payloadCodecs);
  return (events ?? []).flatMap((e) => {
    const request = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
    const payload = request?.name === 'resolve' ? request.args?.payloads?.[0] : undefined;
    return payload ? [defaultPayloadConverter.fromPayload(payload)] : [];
  });
}

const contradictionsOf = (transactionId: string) =>
  engine.pool.any(sql.type(
    z.object({
      engine_status: z.string(),
      provider_status: z.string(),
      provider_amount: z.bigint().nullable(),
      source: z.string(),
      mode: z.string(),
    }),
  )`
    SELECT engine_status, provider_status, provider_amount, source, mode
    FROM payment_contradictions WHERE transaction_id = ${transactionId}`);

const logged = (message: string) =>
  engine.logs
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === message);

describe('Live Mode resolutions through the Monime-style adapter', () => {
  it('refuses failed while Monime holds the payout pending: it cannot cancel it', async () => {
    const { walletId, id, payoutId } = await pendingLiveCashout();
    const { reply } = await resolveAsAdmin(id, failed({ force: true }));
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({
      detail: 'The provider says the payment is pending: it cannot be resolved failed',
    });
    expect(monime.payout(payoutId).status).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(20_000n - 10_100n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([{ step: 'reserve', legs: 2 }]);
    expect(await eventsOf(engine.pool, id)).toEqual([]);
  });

  it('refuses while Monime is unreachable (503), takes force then, and keeps the payout it paid later', async () => {
    const { walletId, id, payoutId } = await pendingLiveCashout();
    const before = await scrape(engine.metricsUrl!);

    // Every attempt of the resolution's bounded retry meets a 503.
    monime.failNext(3, 503);
    const refused = await resolveAsAdmin(id, failed());
    expect(refused.reply.status).toBe(503);
    expect(refused.reply.body).toEqual({
      detail:
        'The provider cannot be reached to confirm the outcome; resolve with force to settle ' +
        'without its answer',
    });
    expect((await live.get(`/api/v1/transactions/${id}`)).body.status).toBe('pending');
    expect(await balanceOf(engine.pool, walletId)).toBe(20_000n - 10_100n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([{ step: 'reserve', legs: 2 }]);

    monime.failNext(3, 503);
    const forced = await resolveAsAdmin(id, failed({ force: true }));
    expect(forced.reply.status).toBe(200);
    expect(forced.reply.body).toMatchObject({ id, status: 'failed' });
    expect(await balanceOf(engine.pool, walletId)).toBe(20_000n);
    expect(await ledgerLegs(engine.pool, id)).toEqual([
      { step: 'reserve', legs: 2 },
      { step: 'give_back', legs: 2 },
    ]);
    // Recorded: the update's argument, the timeline's step, the log (a warning).
    expect(await resolutionsInHistory(workflowIds.cashout(id))).toEqual([
      expect.objectContaining({ force: false, operator: 'Grace' }),
      expect.objectContaining({ force: true, operator: 'Grace', adminId: forced.admin.admin.id }),
    ]);
    const timeline = await live.get(`/api/v1/transactions/${id}/timeline`);
    const steps = (timeline.body.steps as { name: string; status: string }[]).filter(
      (s) => s.name === 'resolve',
    );
    expect(steps).toEqual([
      expect.objectContaining({ status: 'failed', force: false }),
      expect.objectContaining({ status: 'completed', force: true }),
    ]);
    expect(logged('payment resolved by an operator')).toEqual([
      expect.objectContaining({ level: 40, transaction_id: id, force: true, operator: 'Grace' }),
    ]);

    // Monime pays the phone after all: a contradiction, kept once, however often it is told.
    monime.setPayoutStatus(payoutId, 'completed');
    const note = monime.payoutNotificationFor(payoutId);
    for (let i = 0; i < 2; i += 1) {
      const delivered = await clientFor(engine.url, null).request('POST', PROVIDER_WEBHOOK, {
        raw: note.rawBody,
        headers: note.headers,
      });
      expect(delivered.status).toBe(200);
      expect(delivered.body).toEqual({ received: true, transaction_id: id, status: 'failed' });
    }
    expect(await contradictionsOf(id)).toEqual([
      {
        engine_status: 'failed',
        provider_status: 'completed',
        provider_amount: 10_000n,
        source: 'monime',
        mode: 'live',
      },
    ]);
    const events = await eventsOf(engine.pool, id);
    expect(events.map((e) => e.type)).toEqual(['cashout.failed', 'payment.contradicted']);
    expect(events[1]!.data).toMatchObject({
      id,
      transaction_type: 'mobile_money_cashout',
      status: 'failed',
      amount: 100,
      provider: { status: 'completed', amount: 100 },
    });
    expect(logged('a provider contradicts an ended payment')).toEqual([
      expect.objectContaining({
        level: 50,
        transaction_id: id,
        engine_status: 'failed',
        provider_status: 'completed',
      }),
    ]);
    const after = await scrape(engine.metricsUrl!);
    const counted = series('payment_provider_contradictions_total', {
      type: 'mobile_money_cashout',
      mode: 'live',
    });
    expect(increase(before, after, counted)).toBe(1);
    // The ledger never moved on the provider's word alone: the wallet keeps what came back.
    expect(await balanceOf(engine.pool, walletId)).toBe(20_000n);
    await assertLedgerInvariant(engine.pool);
  });
});
