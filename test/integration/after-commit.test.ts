import { randomUUID } from 'node:crypto';
import { createApplication } from '../../src/db/applications';
import { recordMoneyStep } from '../../src/db/money-steps';
import { afterCommit, type DatabasePool } from '../../src/db/pool';
import { findTransaction } from '../../src/db/transactions';
import { paymentsEnded } from '../../src/observability/metrics';
import { createTestDatabase } from '../support/database';

let pool: DatabasePool;
let applicationId: string;

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  applicationId = (await createApplication(pool, { name: 'after-commit', baseCurrency: 'SLE' })).id;
});
afterAll(async () => pool?.end());

const ended = async () =>
  (await paymentsEnded.get()).values.find(
    (v) => v.labels.type === 'transfer' && v.labels.outcome === 'completed',
  )?.value ?? 0;

const step = (id: string) => ({
  transaction: {
    id,
    applicationId,
    mode: 'test' as const,
    type: 'transfer' as const,
    status: 'completed' as const,
    currency: 'SLE' as const,
    amount: 100n,
  },
});

describe('afterCommit', () => {
  it('runs a hook after the commit, in order, and never for a rolled-back transaction', async () => {
    const ran: string[] = [];
    await pool.transaction((trx) => {
      afterCommit(trx, () => ran.push('first'));
      afterCommit(trx, () => ran.push('second'));
      expect(ran).toEqual([]);
      return Promise.resolve();
    });
    expect(ran).toEqual(['first', 'second']);

    await expect(
      pool.transaction((trx) => {
        afterCommit(trx, () => ran.push('rolled back'));
        return Promise.reject(new Error('abort'));
      }),
    ).rejects.toThrow('abort');
    expect(ran).toEqual(['first', 'second']);

    afterCommit(pool, () => ran.push('no transaction'));
    expect(ran).toEqual(['first', 'second', 'no transaction']);
  });

  it('counts a money step in payments_ended_total once it is committed, not for an attempt rolled back', async () => {
    const before = await ended();
    const id = randomUUID();
    // The first attempt writes the step, then fails before its commit: nothing counted.
    await expect(
      pool.transaction(async (trx) => {
        await recordMoneyStep(trx, step(id));
        throw new Error('connection lost before the commit');
      }),
    ).rejects.toThrow('connection lost');
    expect(await findTransaction(pool, id)).toBeNull();
    expect(await ended()).toBe(before);

    // The retry commits: counted once.
    await pool.transaction((trx) => recordMoneyStep(trx, step(id)));
    expect((await findTransaction(pool, id))?.status).toBe('completed');
    expect(await ended()).toBe(before + 1);
  });
});
