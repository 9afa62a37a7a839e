import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { createActivities } from '../../src/activities';
import { loadConfig } from '../../src/config';
import { findMoneyOut } from '../../src/db/money-out';
import type { DatabasePool } from '../../src/db/pool';
import type { Caller } from '../../src/domain/types';
import { createProviders, type Providers } from '../../src/providers';
import type { Activities } from '../../src/workflows/activities-types';
import { workflowIds } from '../../src/workflows/ids';
import type { MoneyOutInput } from '../../src/workflows/money-out-shared';
import {
  assertLedgerInvariant,
  balanceOf,
  createCaller,
  createTestDatabase,
  eventsOf,
  insertFundedWallet,
  ledgerSteps as ledgerStepsOf,
} from '../support/database';
import { sandboxMobileMoneyPayouts } from '../support/payouts';
import { createTimeSkippingEnv, killedAndRestarted as restarted } from '../support/time-skipping';
import { notifyCashout, openCashout } from '../workflow/scenarios';

/**
 * The cashout saga with its real activities, the real sandbox provider and Postgres: a worker
 * is killed at a step, another takes over the task queue, and the saga finishes exactly once
 * (one payout per idempotency key, each ledger step once, the invariant holds).
 */

let pool: DatabasePool;
let caller: Caller;
let env: TestWorkflowEnvironment;
let base: Providers;
const config = loadConfig({});

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  caller = await createCaller(pool, 'cashout kills');
  base = createProviders({ config, pool });
  env = await createTimeSkippingEnv();
});
afterEach(() => jest.restoreAllMocks());
afterAll(async () => {
  await env?.teardown();
  await pool?.end();
});

const fundedWallet = () => insertFundedWallet(pool, caller, 'SLE', 50_000n);

const inputFor = (walletId: string): MoneyOutInput => ({
  kind: 'cashout',
  transactionId: randomUUID(),
  applicationId: caller.applicationId,
  mode: 'test',
  walletId,
  amount: '10000',
  destination: { phone_number: '+23276123456' },
});

const ledgerSteps = (transactionId: string) => ledgerStepsOf(pool, transactionId);

/** The saga killed at `crash` and finished by a second worker with the real activities. */
async function killedAndRestarted(
  input: MoneyOutInput,
  crash: (real: Activities, kill: () => Error) => Partial<Activities>,
  drive: (started: ReturnType<typeof openCashout>) => Promise<string>,
) {
  // Every payout call goes through to the sandbox; the spy counts them.
  const createPayout = jest.spyOn(base.sandboxMobileMoney, 'createPayout');
  const real = createActivities({ pool, config, providers: base });
  const outcome = await restarted(env, {
    real,
    open: (taskQueue) => openCashout(env, taskQueue, input),
    crash,
    drive,
  });
  return { outcome, createPayout };
}

/** Pays the cashout at the sandbox and tells the saga, as the simulate endpoint does. */
async function paid(started: ReturnType<typeof openCashout>): Promise<string> {
  const { opened, handle } = await started;
  expect(opened).toMatchObject({ status: 'opened', outcome: 'pending' });
  const record = await findMoneyOut(pool, opened.status === 'opened' ? opened.transactionId : '');
  await base.sandboxMobileMoney.settlePayout(record!.row.provider_reference!, 'completed');
  return notifyCashout(handle, 'completed');
}

async function expectFinishedOnce(input: MoneyOutInput, walletId: string) {
  const key = workflowIds.cashout(input.transactionId);
  expect(await sandboxMobileMoneyPayouts(pool, input.transactionId)).toMatchObject([
    { idempotency_key: key, calls: 1 },
  ]);
  expect(await ledgerSteps(input.transactionId)).toEqual(['reserve', 'settle']);
  expect((await eventsOf(pool, input.transactionId)).map((e) => e.type)).toEqual([
    'cashout.completed',
  ]);
  // 100.00 out, 1.00 provider fee, no application fee.
  expect(await balanceOf(pool, walletId)).toBe(50_000n - 10_100n);
  expect((await findMoneyOut(pool, input.transactionId))!.row.status).toBe('completed');
  await assertLedgerInvariant(pool);
}

describe('cashout saga: a killed worker, and the saga finishes exactly once after a restart', () => {
  it('killed between the reserve and the provider call', async () => {
    const walletId = await fundedWallet();
    const input = inputFor(walletId);
    const { outcome, createPayout } = await killedAndRestarted(
      input,
      (_real, kill) => ({ sendMoneyOut: () => Promise.reject(kill()) }),
      paid,
    );
    expect(outcome).toBe('completed');
    expect(createPayout).toHaveBeenCalledTimes(1);
    await expectFinishedOnce(input, walletId);
  });

  it('killed after the provider answered, before the answer reached Temporal', async () => {
    const walletId = await fundedWallet();
    const input = inputFor(walletId);
    const { outcome, createPayout } = await killedAndRestarted(
      input,
      (real, kill) => ({
        sendMoneyOut: async (arg) => {
          await real.sendMoneyOut(arg);
          throw kill();
        },
      }),
      paid,
    );
    expect(outcome).toBe('completed');
    // The retry found the provider's answer recorded and did not ask again.
    expect(createPayout).toHaveBeenCalledTimes(1);
    await expectFinishedOnce(input, walletId);
  });

  it('killed between the provider’s answer (paid) and the settlement', async () => {
    const walletId = await fundedWallet();
    const input = inputFor(walletId);
    const { outcome, createPayout } = await killedAndRestarted(
      input,
      (_real, kill) => ({ settleMoneyOut: () => Promise.reject(kill()) }),
      paid,
    );
    expect(outcome).toBe('completed');
    expect(createPayout).toHaveBeenCalledTimes(1);
    await expectFinishedOnce(input, walletId);
  });

  it('killed just after the settlement committed: the retried step changes nothing', async () => {
    const walletId = await fundedWallet();
    const input = inputFor(walletId);
    const { outcome } = await killedAndRestarted(
      input,
      (real, kill) => ({
        settleMoneyOut: async (arg) => {
          await real.settleMoneyOut(arg);
          throw kill();
        },
      }),
      paid,
    );
    expect(outcome).toBe('completed');
    await expectFinishedOnce(input, walletId);
  });
});

describe('money-out steps on the real ledger', () => {
  it('reverses a settled cashout once: everything back to the wallet, the books balanced', async () => {
    const walletId = await fundedWallet();
    const input = inputFor(walletId);
    const steps = createActivities({ pool, config, providers: base });
    const id = { transactionId: input.transactionId };
    await steps.reserveMoneyOut(input);
    await steps.reserveMoneyOut(input);
    await steps.sendMoneyOut(id);
    await steps.settleMoneyOut(id);
    await steps.settleMoneyOut(id);
    expect(await balanceOf(pool, walletId)).toBe(50_000n - 10_100n);
    await steps.reverseMoneyOut(id);
    await steps.reverseMoneyOut(id);
    await steps.giveBackMoneyOut(id);
    expect(await balanceOf(pool, walletId)).toBe(50_000n);
    expect(await ledgerSteps(input.transactionId)).toEqual(['reserve', 'settle', 'reverse']);
    expect((await eventsOf(pool, input.transactionId)).map((e) => e.type)).toEqual([
      'cashout.completed',
      'cashout.failed',
    ]);
    expect((await findMoneyOut(pool, input.transactionId))!.row.status).toBe('failed');
    await assertLedgerInvariant(pool);
  });
});
