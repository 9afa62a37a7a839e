import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { createActivities } from '../../src/activities';
import { loadConfig } from '../../src/config';
import { findCardDeposit } from '../../src/db/card-deposits';
import type { DatabasePool } from '../../src/db/pool';
import type { Caller } from '../../src/domain/types';
import { createProviders, type Providers } from '../../src/providers';
import type { CardPaymentRequest, CardProvider } from '../../src/providers/card';
import { workflowIds } from '../../src/workflows/ids';
import type { CardDepositInput } from '../../src/workflows/shared';
import {
  assertLedgerInvariant,
  balanceOf,
  createCaller,
  createTestDatabase,
  insertFundedWallet,
} from '../support/database';
import { createTimeSkippingEnv, withWorker } from '../support/time-skipping';
import { openCardDeposit } from '../workflow/scenarios';

/**
 * The card deposit's real activities and the real sandbox, with a provider that times out:
 * Temporal retries the activity, the retry sends the same idempotency key, and the card is
 * charged once.
 */

let pool: DatabasePool;
let caller: Caller;
let env: TestWorkflowEnvironment;
let base: Providers;

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  caller = await createCaller(pool, 'card retries', 'USD');
  base = createProviders({ config: loadConfig({}), pool });
  env = await createTimeSkippingEnv();
});
afterAll(async () => {
  await env?.teardown();
  await pool?.end();
});

const newWallet = () => insertFundedWallet(pool, caller, 'USD', 0n);

/** The sandbox, with `createPayment` replaced. */
function sandboxWith(createPayment: CardProvider['createPayment']): Providers {
  const sandbox = base.sandboxCard;
  const card: CardProvider = {
    name: sandbox.name,
    getCardMetadata: (id) => sandbox.getCardMetadata(id),
    createPayment,
    getPayment: (id) => sandbox.getPayment(id),
    cancelPayment: (id) => sandbox.cancelPayment(id),
    parseEvent: (raw, headers) => sandbox.parseEvent(raw, headers),
    createRefund: (request) => sandbox.createRefund(request),
    getRefund: (id) => sandbox.getRefund(id),
    cancelRefund: (id) => sandbox.cancelRefund(id),
    submitDisputeEvidence: () => sandbox.submitDisputeEvidence(),
    getDisputeStatus: (id) => sandbox.getDisputeStatus(id),
    parseCaseEvent: () => sandbox.parseCaseEvent(),
  };
  return { ...base, card: () => card };
}

function activitiesWith(providers: Providers) {
  return createActivities({ pool, config: loadConfig({}), providers });
}

const inputFor = (walletId: string, paymentMethodId = 'pm_card_visa'): CardDepositInput => ({
  transactionId: randomUUID(),
  applicationId: caller.applicationId,
  mode: 'test',
  walletId,
  amount: '1000',
  paymentMethodId,
});

const chargesOf = (reference: string) =>
  pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM sandbox_card_payments WHERE reference = ${reference}`);

describe('card deposit: a provider timeout is retried without a second charge', () => {
  it('retries with the same idempotency key after the answer was lost; one charge, one credit', async () => {
    const walletId = await newWallet();
    const input = inputFor(walletId);
    let calls = 0;
    const createPayment = jest.fn(async (request: CardPaymentRequest) => {
      const payment = await base.sandboxCard.createPayment(request);
      calls += 1;
      // The provider charged the card, but its answer never arrived.
      if (calls === 1) throw new Error('ETIMEDOUT: the provider did not answer in time');
      return payment;
    });
    const { opened } = await withWorker(
      env,
      activitiesWith(sandboxWith(createPayment)),
      (taskQueue) => openCardDeposit(env, taskQueue, input),
    );
    expect(opened).toMatchObject({ status: 'opened', outcome: 'completed' });
    expect(createPayment).toHaveBeenCalledTimes(2);
    const keys = createPayment.mock.calls.map(([request]) => request.idempotencyKey);
    expect(keys).toEqual([
      workflowIds.cardDeposit(input.transactionId),
      workflowIds.cardDeposit(input.transactionId),
    ]);
    expect(await chargesOf(input.transactionId)).toBe(1);
    // 10.00 credited once; the card paid 10.00 + 2.9 % + 0.30.
    expect(await balanceOf(pool, walletId)).toBe(1_000n);
    const deposit = await findCardDeposit(pool, input.transactionId);
    expect(deposit?.row.status).toBe('completed');
    expect(deposit?.meta.total_amount_paid).toBe('1059');
    await assertLedgerInvariant(pool);
  });

  it('never charges a card for a deposit already closed without a payment', async () => {
    const walletId = await newWallet();
    const input = inputFor(walletId);
    const unreachable = activitiesWith(
      sandboxWith(() => Promise.reject(new Error('ECONNREFUSED'))),
    );
    await expect(unreachable.openCardDeposit(input)).rejects.toThrow('ECONNREFUSED');
    await unreachable.closeCardDeposit({ transactionId: input.transactionId, status: 'failed' });

    const createPayment = jest.fn((request: CardPaymentRequest) =>
      base.sandboxCard.createPayment(request),
    );
    const again = activitiesWith(sandboxWith(createPayment));
    await expect(again.openCardDeposit(input)).rejects.toMatchObject({
      type: 'provider_unavailable',
    });
    expect(createPayment).not.toHaveBeenCalled();
    expect(await chargesOf(input.transactionId)).toBe(0);
  });

  it('answers a retried declined open with the same decline, without a second charge', async () => {
    const walletId = await newWallet();
    const input = inputFor(walletId, 'pm_card_chargeDeclined');
    const activities = activitiesWith(base);
    const first = activities.openCardDeposit(input);
    await expect(first).rejects.toMatchObject({
      type: 'card_declined',
      message: 'Card declined: Your card was declined.',
    });
    await expect(activities.openCardDeposit(input)).rejects.toMatchObject({
      type: 'card_declined',
    });
    expect(await chargesOf(input.transactionId)).toBe(1);
    expect((await findCardDeposit(pool, input.transactionId))?.row.status).toBe('failed');
  });
});
