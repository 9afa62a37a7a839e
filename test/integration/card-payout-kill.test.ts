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
import { BUSINESS_PROFILE, sandboxCardPayouts, VERIFIED_INDIVIDUAL } from '../support/payouts';
import { createTimeSkippingEnv, killedAndRestarted as restarted } from '../support/time-skipping';
import { openPayout } from '../workflow/scenarios';

/**
 * The card payout saga with its real activities, sandbox and Postgres: a worker killed at a step,
 * another taking over the task queue, and the saga finishing exactly once (one payout per
 * idempotency key, each ledger step once, the invariant holding).
 */

let pool: DatabasePool;
let caller: Caller;
let env: TestWorkflowEnvironment;
let base: Providers;
let accountId: string;
const config = loadConfig({});

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  caller = await createCaller(pool, 'payout kills', 'USD');
  base = createProviders({ config, pool });
  // The owner's connected account at the sandbox: verified at once, a debit card attached.
  const account = await base.sandboxConnect.createAccount({
    idempotencyKey: randomUUID(),
    reference: randomUUID(),
    details: {
      individual: VERIFIED_INDIVIDUAL,
      businessProfile: BUSINESS_PROFILE,
      tosAcceptance: { ip: '203.0.113.7', date: 1_790_000_000 },
    },
  });
  await base.sandboxConnect.addPayoutCard({
    accountId: account.id,
    cardToken: 'tok_visa_debit',
    idempotencyKey: randomUUID(),
  });
  accountId = account.id;
  env = await createTimeSkippingEnv();
});
afterEach(() => jest.restoreAllMocks());
afterAll(async () => {
  await env?.teardown();
  await pool?.end();
});

const fundedWallet = () => insertFundedWallet(pool, caller, 'USD', 100_00n);

const inputFor = (walletId: string, amount = '2500'): MoneyOutInput => ({
  kind: 'payout',
  transactionId: randomUUID(),
  applicationId: caller.applicationId,
  mode: 'test',
  walletId,
  amount,
  destination: { account_id: accountId },
});

const ledgerSteps = (transactionId: string) => ledgerStepsOf(pool, transactionId);

/** The saga killed at `crash` and finished by a second worker with the real activities. */
async function killedAndRestarted(
  input: MoneyOutInput,
  crash: (real: Activities, kill: () => Error) => Partial<Activities>,
) {
  // Every payout call goes through to the sandbox; the spy counts them.
  const createPayout = jest.spyOn(base.sandboxConnect, 'createPayout');
  const real = createActivities({ pool, config, providers: base });
  const outcome = await restarted(env, {
    real,
    open: (taskQueue) => openPayout(env, taskQueue, input),
    crash,
  });
  return { outcome, createPayout };
}

async function expectPaidOnce(input: MoneyOutInput, walletId: string) {
  const key = workflowIds.payout(input.transactionId);
  expect(await sandboxCardPayouts(pool, input.transactionId)).toMatchObject([
    { idempotency_key: key, status: 'paid' },
  ]);
  expect(await ledgerSteps(input.transactionId)).toEqual(['reserve', 'settle']);
  expect((await eventsOf(pool, input.transactionId)).map((e) => e.type)).toEqual([
    'payout.completed',
  ]);
  expect(await balanceOf(pool, walletId)).toBe(100_00n - 25_00n);
  expect((await findMoneyOut(pool, input.transactionId))!.row.status).toBe('completed');
  await assertLedgerInvariant(pool);
}

describe('card payout saga: a killed worker, and the saga finishes exactly once after a restart', () => {
  it('killed between the reserve and the provider call', async () => {
    const walletId = await fundedWallet();
    const input = inputFor(walletId);
    const { outcome, createPayout } = await killedAndRestarted(input, (_real, kill) => ({
      sendMoneyOut: () => Promise.reject(kill()),
    }));
    expect(outcome).toBe('completed');
    expect(createPayout).toHaveBeenCalledTimes(1);
    await expectPaidOnce(input, walletId);
  });

  it('killed after the provider paid, before the answer reached Temporal', async () => {
    const walletId = await fundedWallet();
    const input = inputFor(walletId);
    const { outcome, createPayout } = await killedAndRestarted(input, (real, kill) => ({
      sendMoneyOut: async (arg) => {
        await real.sendMoneyOut(arg);
        throw kill();
      },
    }));
    expect(outcome).toBe('completed');
    // The retry found the provider's answer recorded and did not ask again.
    expect(createPayout).toHaveBeenCalledTimes(1);
    await expectPaidOnce(input, walletId);
  });

  it('killed between the provider’s answer (paid) and the settlement', async () => {
    const walletId = await fundedWallet();
    const input = inputFor(walletId);
    const { outcome, createPayout } = await killedAndRestarted(input, (_real, kill) => ({
      settleMoneyOut: () => Promise.reject(kill()),
    }));
    expect(outcome).toBe('completed');
    expect(createPayout).toHaveBeenCalledTimes(1);
    await expectPaidOnce(input, walletId);
  });

  it('40.40 killed between the provider’s late failure and the give-back: given back once', async () => {
    const walletId = await fundedWallet();
    const input = inputFor(walletId, '4040');
    const { outcome, createPayout } = await killedAndRestarted(input, (_real, kill) => ({
      giveBackMoneyOut: () => Promise.reject(kill()),
    }));
    expect(outcome).toBe('failed');
    expect(createPayout).toHaveBeenCalledTimes(1);
    expect(await sandboxCardPayouts(pool, input.transactionId)).toMatchObject([
      { idempotency_key: workflowIds.payout(input.transactionId), status: 'failed' },
    ]);
    expect(await ledgerSteps(input.transactionId)).toEqual(['reserve', 'give_back']);
    expect((await eventsOf(pool, input.transactionId)).map((e) => e.type)).toEqual([
      'payout.failed',
    ]);
    expect(await balanceOf(pool, walletId)).toBe(100_00n);
    await assertLedgerInvariant(pool);
  });
});
