import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { listReconExceptions, type ReconException } from '../../src/db/recon-exceptions';
import { findReconRun, insertReconRun, type ReconRun } from '../../src/db/recon-runs';
import { keepContradiction } from '../../src/intake/contradictions';
import { startReconciliationRun } from '../../src/temporal/recon-runs';
import { taskQueueOf } from '../../src/temporal/task-queues';
import { workflowIds } from '../../src/workflows/ids';
import { createTestApp, startTestEngine, type TestApp, type TestEngine } from '../support/engine';

/**
 * Provider reconciliation on the real engine: payments and the sandbox's books written straight
 * to the database with one disagreement of each kind, then runs of the real workflow.
 */

// Real servers on a shared machine: jest's 5-second default is too tight under load.
jest.setTimeout(120_000);

let engine: TestEngine;
let app: TestApp;
beforeAll(async () => {
  engine = await startTestEngine();
  app = await createTestApp(engine.pool);
});
afterAll(async () => engine?.close());

const HOUR = 60 * 60 * 1000;

/** A Test Mode payment with what its provider was told (the metadata the activities write). */
async function payment(p: {
  type: 'mobile_money_deposit' | 'mobile_money_cashout' | 'card_deposit';
  status: string;
  reference: string | null;
  providerAmount: bigint;
  createdAgoMs?: number;
}): Promise<string> {
  const id = randomUUID();
  const metadata =
    p.type === 'mobile_money_cashout'
      ? { provider_amount: p.providerAmount.toString(), provider_currency: 'SLE' }
      : { total_amount_paid: p.providerAmount.toString() };
  await engine.pool.query(sql.unsafe`
    INSERT INTO transactions (id, application_id, mode, transaction_type, status, currency, amount,
      provider_reference, metadata, created_at)
    VALUES (${id}, ${app.id}, 'test', ${p.type}, ${p.status}, 'SLE', ${p.providerAmount.toString()},
      ${p.reference}, ${sql.jsonb(metadata)},
      now() - make_interval(secs => ${(p.createdAgoMs ?? HOUR) / 1000}))`);
  return id;
}

async function sandboxCode(id: string, reference: string, amount: bigint, status: string) {
  await engine.pool.query(sql.unsafe`
    INSERT INTO sandbox_payment_codes (id, idempotency_key, reference, name, amount, deposit_amount,
      code, instructions, status, expires_at)
    VALUES (${id}, ${randomUUID()}, ${reference}, 'App', ${amount.toString()},
      ${amount.toString()}, '123', 'Dial', ${status}, now() + interval '1 hour')`);
}

async function sandboxPayout(id: string, reference: string, amount: bigint, status: string) {
  await engine.pool.query(sql.unsafe`
    INSERT INTO sandbox_mobile_money_payouts (id, idempotency_key, reference, amount, phone_number,
      status, expires_at)
    VALUES (${id}, ${randomUUID()}, ${reference}, ${amount.toString()}, '+23276000000', ${status},
      now() + interval '1 hour')`);
}

async function run(
  provider: 'mobile_money' | 'card',
  importId: string | null = null,
  mode: 'test' | 'live' = 'test',
) {
  const now = Date.now();
  const created = await insertReconRun(engine.pool, {
    id: randomUUID(),
    applicationId: app.id,
    mode,
    provider,
    from: new Date(now - 2 * HOUR).toISOString(),
    to: new Date(now + HOUR).toISOString(),
    importId,
    origin: 'api',
  });
  await startReconciliationRun(
    engine.temporal,
    taskQueueOf(engine.config, 'maintenance'),
    created!.id,
  );
  await engine.temporal.workflow.getHandle(workflowIds.reconRun(created!.id)).result();
  return (await findReconRun(engine.pool, {
    applicationId: app.id,
    mode,
    id: created!.id,
  }))!;
}

async function exceptions(): Promise<ReconException[]> {
  const { rows } = await listReconExceptions(
    engine.pool,
    { applicationId: app.id, mode: 'test' },
    {},
    { limit: 100, offset: 0 },
  );
  return rows;
}

const eventsOfType = (type: string) =>
  engine.pool.any(sql.type(z.object({ data: z.record(z.string(), z.unknown()) }))`
    SELECT data FROM events WHERE application_id = ${app.id} AND type = ${type}
    ORDER BY created_at`);

async function timerRunning(exceptionId: string): Promise<boolean> {
  const info = await engine.temporal.workflow
    .getHandle(workflowIds.reconException(exceptionId))
    .describe();
  return info.status.name === 'RUNNING';
}

describe('a provider reconciliation run over the sandbox’s books', () => {
  let first: ReconRun;
  const ids: Record<string, string> = {};

  it('classifies every record and payment, keeps each disagreement once, with events', async () => {
    ids.matched = await payment({
      type: 'mobile_money_deposit',
      status: 'completed',
      reference: 'pc_matched',
      providerAmount: 1100n,
    });
    await sandboxCode('pc_matched', ids.matched, 1100n, 'completed');
    ids.amount = await payment({
      type: 'mobile_money_deposit',
      status: 'completed',
      reference: 'pc_amount',
      providerAmount: 2000n,
    });
    await sandboxCode('pc_amount', ids.amount, 2500n, 'completed');
    ids.status = await payment({
      type: 'mobile_money_cashout',
      status: 'failed',
      reference: 'po_status',
      providerAmount: 3000n,
    });
    await sandboxPayout('po_status', ids.status, 3000n, 'completed');
    ids.external = await payment({
      type: 'mobile_money_deposit',
      status: 'completed',
      reference: 'pc_external',
      providerAmount: 4000n,
    });
    ids.grace = await payment({
      type: 'mobile_money_deposit',
      status: 'pending',
      reference: 'pc_grace',
      providerAmount: 5000n,
      createdAgoMs: 1000,
    });
    await sandboxCode('pc_grace', ids.grace, 5000n, 'completed');
    // The engine never learnt the provider's id of this one: it has no payment of that reference.
    ids.internal = await payment({
      type: 'mobile_money_deposit',
      status: 'pending',
      reference: null,
      providerAmount: 6000n,
    });
    await sandboxCode('pc_internal', ids.internal, 6000n, 'completed');
    ids.duplicate = await payment({
      type: 'mobile_money_deposit',
      status: 'completed',
      reference: 'dup_1',
      providerAmount: 7000n,
    });
    await sandboxCode('dup_1', ids.duplicate, 7000n, 'completed');
    await sandboxPayout('dup_1', ids.duplicate, 7000n, 'completed');
    // Still pending at the sandbox: not booked, so not in its books.
    await sandboxCode('pc_pending', ids.matched, 1n, 'pending');

    first = await run('mobile_money');
    expect(first).toMatchObject({
      status: 'completed',
      counts: {
        matched: 1,
        missingInternal: 1,
        missingExternal: 1,
        amountMismatch: 1,
        statusMismatch: 1,
        duplicate: 1,
      },
    });
    expect(first.completedAt).not.toBeNull();

    const found = await exceptions();
    const byKind = Object.fromEntries(found.map((e) => [e.kind, e]));
    expect(found).toHaveLength(5);
    expect(byKind.amount_mismatch).toMatchObject({
      runId: first.id,
      transactionId: ids.amount,
      providerReference: 'pc_amount',
      ours: { amount: 2000n, currency: 'SLE', status: 'completed' },
      theirs: { amount: 2500n, currency: 'SLE', status: 'succeeded' },
      status: 'open',
    });
    expect(byKind.status_mismatch).toMatchObject({
      transactionId: ids.status,
      ours: { status: 'failed' },
      theirs: { status: 'succeeded' },
    });
    expect(byKind.missing_external).toMatchObject({
      transactionId: ids.external,
      providerReference: 'pc_external',
      theirs: null,
    });
    expect(byKind.missing_internal).toMatchObject({
      transactionId: null,
      providerReference: 'pc_internal',
      ours: null,
      theirs: { amount: 6000n },
    });
    expect(byKind.duplicate).toMatchObject({
      transactionId: ids.duplicate,
      providerReference: 'dup_1',
    });

    const opened = await eventsOfType('reconciliation.exception.opened');
    expect(opened.map((e) => e.data.id).sort()).toEqual(found.map((e) => e.id).sort());
    expect(opened.find((e) => e.data.kind === 'amount_mismatch')?.data).toMatchObject({
      ours: { amount: 20, status: 'completed' },
      theirs: { amount: 25, status: 'succeeded' },
    });
    const completed = await eventsOfType('reconciliation.run.completed');
    expect(completed).toHaveLength(1);
    expect(completed[0]!.data).toMatchObject({
      id: first.id,
      status: 'completed',
      counts: { matched: 1, missing_external: 1, duplicate: 1 },
    });
    for (const e of found) expect(await timerRunning(e.id)).toBe(true);
    const staged = await engine.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM recon_run_records WHERE run_id = ${first.id}`);
    expect(staged).toBe(0);
  });

  it('a second run updates the same exceptions, and a resolved one stays resolved', async () => {
    const before = await exceptions();
    const resolved = before.find((e) => e.kind === 'missing_external')!;
    await engine.pool.query(sql.unsafe`
      UPDATE recon_exceptions SET status = 'resolved', resolution = 'accept', note = 'known',
        resolved_at = now() WHERE id = ${resolved.id}`);
    await engine.pool.query(sql.unsafe`
      UPDATE sandbox_payment_codes SET amount = 2600 WHERE id = 'pc_amount'`);

    const second = await run('mobile_money');
    expect(second.counts).toEqual(first.counts);
    const after = await exceptions();
    expect(after.map((e) => e.id).sort()).toEqual(before.map((e) => e.id).sort());
    for (const e of after) {
      expect(e.runId).toBe(e.id === resolved.id ? first.id : second.id);
    }
    expect(after.find((e) => e.id === resolved.id)).toMatchObject({ status: 'resolved' });
    expect(after.find((e) => e.kind === 'amount_mismatch')?.theirs?.amount).toBe(2600n);
    expect(await eventsOfType('reconciliation.exception.opened')).toHaveLength(5);
    expect(await eventsOfType('reconciliation.run.completed')).toHaveLength(2);
  });

  it('reads an imported file instead of the provider', async () => {
    const importId = randomUUID();
    const cardRef = 'ch_file_1';
    const deposit = await payment({
      type: 'card_deposit',
      status: 'completed',
      reference: cardRef,
      providerAmount: 1500n,
    });
    await engine.pool.query(sql.unsafe`
      INSERT INTO recon_imports (id, application_id, mode, provider, sha256, rows)
      VALUES (${importId}, ${app.id}, 'test', 'card', ${randomUUID()}, 2)`);
    await engine.pool.query(sql.unsafe`
      INSERT INTO recon_import_records (import_id, row_number, provider_reference, booked_at,
        amount, currency, fee, direction, status)
      VALUES (${importId}, 1, ${cardRef}, now(), 1500, 'SLE', 45, 'in', 'succeeded'),
        (${importId}, 2, 'ch_unknown', now(), 900, 'SLE', 0, 'in', 'succeeded')`);
    const done = await run('card', importId);
    expect(done.counts).toEqual({
      matched: 1,
      missingInternal: 1,
      missingExternal: 0,
      amountMismatch: 0,
      statusMismatch: 0,
      duplicate: 0,
    });
    expect(deposit).toBeDefined();
  });
});

describe('a run whose books cannot be read', () => {
  it('ends failed, with why, and no event', async () => {
    const failed = await run('card', null, 'live');
    expect(failed).toMatchObject({
      status: 'failed',
      failure: 'The live Stripe books are not configured',
    });
    const completed = await eventsOfType('reconciliation.run.completed');
    expect(completed.filter((e) => e.data.id === failed.id)).toHaveLength(0);
  });
});

describe('a contradiction', () => {
  it('opens a status_mismatch exception at once, with its event and its timer', async () => {
    const id = await payment({
      type: 'mobile_money_deposit',
      status: 'completed',
      reference: 'pc_contradicted',
      providerAmount: 8000n,
    });
    const kept = await keepContradiction(
      {
        pool: engine.pool,
        temporal: engine.temporal,
        reconQueue: taskQueueOf(engine.config, 'maintenance'),
      },
      id,
      { name: 'sandbox', status: 'failed', amount: 8000n },
    );
    expect(kept).toBe(true);
    const found = (await exceptions()).filter((e) => e.transactionId === id);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      runId: null,
      kind: 'status_mismatch',
      providerReference: 'pc_contradicted',
      ours: { amount: 8000n, status: 'completed' },
      theirs: { amount: 8000n, status: 'failed' },
      status: 'open',
    });
    const opened = await eventsOfType('reconciliation.exception.opened');
    expect(opened.filter((e) => e.data.id === found[0]!.id)).toHaveLength(1);
    expect(await timerRunning(found[0]!.id)).toBe(true);
    // The same answer again keeps nothing new.
    expect(
      await keepContradiction({ pool: engine.pool }, id, {
        name: 'sandbox',
        status: 'failed',
        amount: 8000n,
      }),
    ).toBe(false);
    expect((await exceptions()).filter((e) => e.transactionId === id)).toHaveLength(1);
  });
});

describe('records that are one payment, or not ours', () => {
  it('takes a failure listed after its payment as its final status, and leaves out another application’s payment', async () => {
    const other = await createTestApp(engine.pool);
    app = await createTestApp(engine.pool);
    await payment({
      type: 'card_deposit',
      status: 'failed',
      reference: 'ch_undone',
      providerAmount: 700n,
    });
    await payment({
      type: 'card_deposit',
      status: 'completed',
      reference: 'ch_twice',
      providerAmount: 800n,
    });
    // Another application's payment, booked on the provider account both share.
    await engine.pool.query(sql.unsafe`
      INSERT INTO transactions (id, application_id, mode, transaction_type, status, currency,
        amount, provider_reference)
      VALUES (${randomUUID()}, ${other.id}, 'test', 'card_deposit', 'completed', 'SLE', 600,
        'ch_theirs')`);
    const importId = randomUUID();
    await engine.pool.query(sql.unsafe`
      INSERT INTO recon_imports (id, application_id, mode, provider, sha256, rows)
      VALUES (${importId}, ${app.id}, 'test', 'card', ${randomUUID()}, 5)`);
    await engine.pool.query(sql.unsafe`
      INSERT INTO recon_import_records (import_id, row_number, provider_reference, booked_at,
        amount, currency, fee, direction, status)
      VALUES (${importId}, 1, 'ch_undone', now(), 700, 'SLE', 0, 'in', 'succeeded'),
        (${importId}, 2, 'ch_undone', now(), 700, 'SLE', 0, 'in', 'reversed'),
        (${importId}, 3, 'ch_twice', now(), 800, 'SLE', 0, 'in', 'succeeded'),
        (${importId}, 4, 'ch_twice', now(), 800, 'SLE', 0, 'in', 'succeeded'),
        (${importId}, 5, 'ch_theirs', now(), 600, 'SLE', 0, 'in', 'succeeded')`);
    const done = await run('card', importId);
    expect(done.counts).toEqual({
      matched: 1,
      missingInternal: 0,
      missingExternal: 0,
      amountMismatch: 0,
      statusMismatch: 0,
      duplicate: 1,
    });
    const found = await exceptions();
    expect(found.map((e) => [e.kind, e.providerReference])).toEqual([['duplicate', 'ch_twice']]);
  });
});
