import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { createMaintenanceActivities } from '../../src/activities/maintenance';
import {
  MAINTENANCE_SCHEDULE_ID,
  RECONCILIATION_SCHEDULE_ID,
  RECON_DAILY_SCHEDULE_ID,
  ensureSchedules,
} from '../../src/worker/schedules';
import { createTestApp } from '../support/engine';
import { useTestEngine } from '../support/hooks';

const engine = useTestEngine();

const maintenance = () => createMaintenanceActivities({ pool: engine.pool, config: engine.config });

const count = (table: 'rate_limit_counters' | 'idempotency_keys') =>
  engine.pool.oneFirst(
    sql.type(
      z.object({ n: z.number() }),
    )`SELECT count(*)::int AS n FROM ${sql.identifier([table])}`,
  );

describe('maintenance', () => {
  it('prunes ended rate-limit windows and idempotency keys past 24 hours, and nothing else', async () => {
    const app = await createTestApp(engine.pool);
    const credential = await engine.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM credentials WHERE application_id = ${app.id} LIMIT 1`);
    await engine.pool.query(sql.unsafe`
      INSERT INTO rate_limit_counters (credential_id, category, window_start, count) VALUES
        (${credential}, 'default', now() - interval '10 minutes', 3),
        (${credential}, 'default', date_trunc('minute', now()), 1)`);
    const key = (age: string, done: boolean) => sql.fragment`
      (${app.id}, 'test', ${randomUUID()}, '\\x00', ${done ? 200 : null}, now() - ${age}::interval)`;
    await engine.pool.query(sql.unsafe`
      INSERT INTO idempotency_keys (application_id, mode, key, request_hash, response_status, created_at) VALUES
        ${key('25 hours', true)}, ${key('25 hours', false)}, ${key('49 hours', false)}, ${key('1 hour', true)}`);
    const result = await maintenance().pruneExpiredRows();
    expect(result).toEqual({
      rateLimitWindows: 1,
      idempotencyKeys: 2,
      providerNotifications: 0,
      webhookPreviousSecrets: 0,
      eventListeners: 0,
    });
    expect(await count('rate_limit_counters')).toBe(1);
    expect(await count('idempotency_keys')).toBe(2);
  });

  it('purges provider notifications past their retention and keeps the rest', async () => {
    const { notificationRetentionHours: retryHours, notificationKeepDays: keepDays } =
      engine.config.reconciliation;
    const note = (label: string, outcome: string, ageHours: number) => sql.fragment`
      (${randomUUID()}, 'sandbox', 'deposit', 'test', ${label}, NULL, 'completed', NULL,
        ${outcome}, '{}'::jsonb, now() - make_interval(hours => ${ageHours}))`;
    await engine.pool.query(sql.unsafe`
      INSERT INTO provider_notifications
        (id, provider, kind, mode, payment_reference, reference, status, transaction_id, outcome,
         body, received_at)
      VALUES
        ${note('unmatched-retried', 'unmatched', retryHours - 1)},
        ${note('unmatched-given-up', 'unmatched', retryHours + 1)},
        ${note('matched-kept', 'matched', keepDays * 24 - 1)},
        ${note('matched-old', 'matched', keepDays * 24 + 1)},
        ${note('ignored-kept', 'ignored', retryHours + 1)},
        ${note('ignored-old', 'ignored', keepDays * 24 + 1)}`);
    const result = await maintenance().pruneExpiredRows();
    expect(result.providerNotifications).toBe(3);
    const left = await engine.pool.anyFirst(sql.type(z.object({ payment_reference: z.string() }))`
      SELECT payment_reference FROM provider_notifications ORDER BY payment_reference`);
    expect(left).toEqual(['ignored-kept', 'matched-kept', 'unmatched-retried']);
  });

  it('never purges an unapplied provider notification: an operator settles it', async () => {
    const { notificationKeepDays: keepDays } = engine.config.reconciliation;
    await engine.pool.query(sql.unsafe`
      INSERT INTO provider_notifications
        (id, provider, kind, mode, payment_reference, reference, status, transaction_id, outcome,
         body, received_at)
      VALUES (${randomUUID()}, 'stripe', 'dispute', 'live', 'dp_unapplied_old', 'pi_x', 'won',
        NULL, 'unapplied', '{}'::jsonb, now() - make_interval(days => ${keepDays * 10}))`);
    await maintenance().pruneExpiredRows();
    const left = await engine.pool.anyFirst(sql.type(z.object({ outcome: z.string() }))`
      SELECT outcome FROM provider_notifications WHERE payment_reference = 'dp_unapplied_old'`);
    expect(left).toEqual(['unapplied']);
  });

  it('deletes expired `webhooks listen` registrations and keeps the live ones', async () => {
    const app = await createTestApp(engine.pool);
    const live = randomUUID();
    const expired = randomUUID();
    await engine.pool.query(sql.unsafe`
      INSERT INTO event_listeners (id, application_id, mode, expires_at) VALUES
        (${live}, ${app.id}, 'test', now() + interval '2 minutes'),
        (${expired}, ${app.id}, 'live', now() - interval '1 second')`);
    const result = await maintenance().pruneExpiredRows();
    expect(result.eventListeners).toBe(1);
    const left = await engine.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      SELECT id FROM event_listeners WHERE application_id = ${app.id}`);
    expect(left).toEqual([live]);
  });

  it('creates the maintenance schedule once', async () => {
    await ensureSchedules(engine.temporal, engine.config.temporal.maintenanceTaskQueue);
    await ensureSchedules(engine.temporal, engine.config.temporal.maintenanceTaskQueue);
    const description = await engine.temporal.schedule
      .getHandle(MAINTENANCE_SCHEDULE_ID)
      .describe();
    expect(description.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'maintenanceWorkflow',
      taskQueue: engine.config.temporal.maintenanceTaskQueue,
    });
    await engine.temporal.schedule.getHandle(MAINTENANCE_SCHEDULE_ID).delete();
    // ensureSchedules also creates the reconciliation schedule (test/e2e/reconciliation.test.ts).
    await engine.temporal.schedule.getHandle(RECONCILIATION_SCHEDULE_ID).delete();
    // And the daily provider reconciliation's (docs/operations.md, Reconcile with a provider).
    const daily = engine.temporal.schedule.getHandle(RECON_DAILY_SCHEDULE_ID);
    expect((await daily.describe()).action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'dailyReconciliationWorkflow',
      taskQueue: engine.config.temporal.maintenanceTaskQueue,
    });
    await daily.delete();
  });
});
