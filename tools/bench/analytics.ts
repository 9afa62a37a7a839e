/**
 * Row (7): the dashboard's analytics over a million seeded payments, asked through the API (7a,
 * from the load generator) and as the query alone on the pool (7b, in the engine's process).
 */
import { dashboardAnalytics } from '../../src/db/analytics';
import { seedPayments } from '../../src/db/analytics-seed';
import type { Engine, Fixture } from './engine';
import { progress } from './engine';
import type { Send } from './load';

export const ANALYTICS_PAYMENTS = 1_000_000;

export async function seedAnalytics(engine: Engine, fixture: Fixture): Promise<void> {
  progress(`seeding ${ANALYTICS_PAYMENTS.toLocaleString('en')} payments with their ledger`);
  const started = performance.now();
  await seedPayments(engine.pool, {
    applicationId: fixture.applicationId,
    mode: 'test',
    currency: 'SLE',
    wallets: fixture.wallets,
    count: ANALYTICS_PAYMENTS,
    days: 90,
  });
  progress(`   seeded in ${((performance.now() - started) / 1000).toFixed(1)}s`);
}

export function dashboardQuery(engine: Engine, fixture: Fixture): Send {
  return async () => {
    await dashboardAnalytics(engine.pool, { applicationId: fixture.applicationId, mode: 'test' });
  };
}
