import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { InvalidInputError, sql } from 'slonik';
import { createActivities } from '../../src/activities';
import { loadConfig } from '../../src/config';
import { isPermanentDatabaseError, sqlState, uniqueViolation } from '../../src/db/errors';
import type { DatabasePool } from '../../src/db/pool';
import { insertUser, USERS_EMAIL_UNIQUE } from '../../src/db/users';
import type { Caller } from '../../src/domain/types';
import { createProviders } from '../../src/providers';
import type { TransferInput } from '../../src/workflows/shared';
import { transferWorkflow } from '../../src/workflows/transfer';
import {
  balanceOf,
  createCaller,
  createTestDatabase,
  insertFundedWallet,
  writtenFor,
} from '../support/database';
import { transferStepInput } from '../support/steps';
import { createTimeSkippingEnv, withWorker } from '../support/time-skipping';

let pool: DatabasePool;
let caller: Caller;
let env: TestWorkflowEnvironment;
let activities: ReturnType<typeof createActivities>;

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  caller = await createCaller(pool, 'permanent errors');
  const config = loadConfig({});
  activities = createActivities({ pool, config, providers: createProviders({ config, pool }) });
  env = await createTimeSkippingEnv();
});
afterAll(async () => {
  await env?.teardown();
  await pool?.end();
});

const newWallet = (balance: bigint) => insertFundedWallet(pool, caller, 'SLE', balance);

const transferWith = async (description: string): Promise<TransferInput> =>
  transferStepInput(caller, await newWallet(1_000n), await newWallet(0n), '250', description);

describe('a database error that no retry can cure', () => {
  it('ends a transfer step as a non-retryable decline that writes nothing', async () => {
    const input = await transferWith('order \u0000 42');
    const failure = await activities.transferFunds(input).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'validation_failed', nonRetryable: true });
    // The caller's message names no SQL, table or column.
    expect((failure as Error).message).not.toMatch(/insert|transactions|byte sequence|0x00/i);
    expect(await writtenFor(pool, input.transactionId)).toBe(0);
    expect(await balanceOf(pool, input.fromWalletId)).toBe(1_000n);
  });

  it('ends the transfer workflow declined after one attempt', async () => {
    const input = await transferWith('\u0000');
    const transferFunds = jest.fn(activities.transferFunds);
    const result = await withWorker(env, { transferFunds }, (taskQueue) =>
      env.client.workflow.execute(transferWorkflow, {
        workflowId: `transfer-${input.transactionId}`,
        taskQueue,
        args: [input],
      }),
    );
    expect(result).toEqual({
      status: 'declined',
      code: 'validation_failed',
      detail: expect.stringMatching(/cannot be stored/),
    });
    expect(transferFunds).toHaveBeenCalledTimes(1);
    expect(await writtenFor(pool, input.transactionId)).toBe(0);
  });

  it('still lets a transient error be retried', async () => {
    const refused = await pool.query(sql.unsafe`SELECT ${'a\u0000b'}::text`).then(
      () => null,
      (error: unknown) => error,
    );
    expect(sqlState(refused)).toBe('22021');
    expect(isPermanentDatabaseError(refused)).toBe(true);
    // A NUL in a JSON value, refused by slonik before it is sent, as its InvalidInputError.
    const badJson = await (async () =>
      pool.query(sql.unsafe`SELECT ${sql.jsonb({ note: 'a\u0000b' })}`))().then(
      () => null,
      (error: unknown) => error,
    );
    expect(badJson).toBeInstanceOf(InvalidInputError);
    expect(isPermanentDatabaseError(badJson)).toBe(true);
    const cancelled = await pool
      .transaction(async (trx) => {
        await trx.query(sql.unsafe`SET LOCAL statement_timeout = 1`);
        await trx.query(sql.unsafe`SELECT pg_sleep(1)`);
      })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(sqlState(cancelled)).toBe('57014');
    expect(isPermanentDatabaseError(cancelled)).toBe(false);
    expect(isPermanentDatabaseError(Object.assign(new Error('x'), { code: '40001' }))).toBe(false);
    expect(isPermanentDatabaseError(Object.assign(new Error('x'), { code: '40P01' }))).toBe(false);
    expect(isPermanentDatabaseError(Object.assign(new Error('x'), { code: '23505' }))).toBe(false);
    expect(isPermanentDatabaseError(Object.assign(new Error('x'), { code: '23514' }))).toBe(true);
    expect(isPermanentDatabaseError(new Error('connection terminated unexpectedly'))).toBe(false);
  });

  it('names a unique violation by its constraint', async () => {
    const user = {
      app_user_id: randomUUID(),
      name: 'U',
      phone_number: '+232',
      email: `${randomUUID()}@example.com`,
      username: null,
      is_active: true,
    };
    await insertUser(pool, caller, user);
    const duplicate = await insertUser(pool, caller, {
      ...user,
      app_user_id: randomUUID(),
      email: user.email.toUpperCase(),
    }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(uniqueViolation(duplicate)).toBe(USERS_EMAIL_UNIQUE);
    expect(isPermanentDatabaseError(duplicate)).toBe(false);
    expect(uniqueViolation(new Error('duplicate key value violates unique constraint'))).toBeNull();
  });
});
