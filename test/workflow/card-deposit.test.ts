import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { cardDepositWorkflow } from '../../src/workflows/card-deposit';
import {
  cardDepositUpdates,
  depositStateQuery,
  SearchAttributes,
  workflowIds,
  type CardDepositInput,
} from '../../src/workflows/shared';
import { createTimeSkippingEnv, mocked, withWorker } from '../support/time-skipping';
import {
  cardActivities,
  cardDepositAuthenticated,
  cardDepositDeclined,
  cardDepositExpired,
  cardDepositInput,
  cardDepositSucceeded,
  historyShape,
  notifyCard,
  ONE_HOUR,
  openCardDeposit,
} from './scenarios';

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createTimeSkippingEnv();
});
afterAll(async () => env?.teardown());

const inputFor = (paymentMethodId = 'pm_card_authenticationRequired') =>
  cardDepositInput(randomUUID(), paymentMethodId);

const open = (taskQueue: string, input: CardDepositInput) => openCardDeposit(env, taskQueue, input);

describe('cardDepositWorkflow', () => {
  it('completes at once when the card is charged: open answers after the ledger step', async () => {
    const activities = mocked(cardDepositSucceeded.activities(env));
    const { input, opened, result, handle } = await withWorker(env, activities, (taskQueue) =>
      cardDepositSucceeded.play(env, taskQueue),
    );
    expect(opened).toMatchObject({
      status: 'opened',
      outcome: 'completed',
      payment: { transactionId: input.transactionId, paymentStatus: 'succeeded' },
    });
    expect(result).toBe('completed');
    expect(activities.completeCardDeposit).toHaveBeenCalledTimes(1);
    expect(activities.completeCardDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
    });
    expect(activities.closeCardDeposit).not.toHaveBeenCalled();
    const described = await handle.describe();
    expect(described.typedSearchAttributes.get(SearchAttributes.PaymentStatus)).toBe('completed');
  });

  it('runs its steps as local activities in one workflow task when the start says localSteps', async () => {
    // Started as the API starts it (`localSteps`): the provider's and the ledger's steps are
    // markers of the first workflow task, with no activity task and no `patched` marker. Started
    // without it (a start from before), the workflow asks `patched`, as the transfer does.
    const shapeOf = async (input: CardDepositInput) => {
      const activities = mocked(cardActivities(env, { created: 'succeeded' }));
      const handle = await withWorker(env, activities, async (taskQueue) => {
        const opened = await open(taskQueue, input);
        expect(await opened.handle.result()).toBe('completed');
        return opened.handle;
      });
      expect(activities.openCardDeposit).toHaveBeenCalledTimes(1);
      expect(activities.completeCardDeposit).toHaveBeenCalledTimes(1);
      return historyShape((await handle.fetchHistory()).events);
    };
    const local = ['core_local_activity', 'core_local_activity'];
    expect(await shapeOf(inputFor('pm_card_visa'))).toEqual({
      workflowTasks: 1,
      activities: [],
      markers: local,
      localSteps: ['openCardDeposit', 'completeCardDeposit'],
      upserted: ['PaymentStatus'],
    });
    const { localSteps: _, ...before } = inputFor('pm_card_visa');
    expect(await shapeOf(before)).toEqual({
      workflowTasks: 1,
      activities: [],
      markers: ['core_patch', ...local],
      localSteps: ['openCardDeposit', 'completeCardDeposit'],
      upserted: ['TemporalChangeVersion', 'PaymentStatus'],
    });
  });

  it('answers a decline as data, moves no money, and fails with PaymentStatus failed', async () => {
    const activities = mocked(cardDepositDeclined.activities(env));
    const { opened, result, handle } = await withWorker(env, activities, (taskQueue) =>
      cardDepositDeclined.play(env, taskQueue),
    );
    expect(opened).toEqual({
      status: 'declined',
      code: 'card_declined',
      detail: 'Card declined: Your card was declined.',
    });
    expect(result).toBe('failed');
    expect(activities.openCardDeposit).toHaveBeenCalledTimes(1);
    expect(activities.completeCardDeposit).not.toHaveBeenCalled();
    // The activity recorded the decline itself, in the same step that met it.
    expect(activities.closeCardDeposit).not.toHaveBeenCalled();
    const described = await handle.describe();
    expect(described.typedSearchAttributes.get(SearchAttributes.PaymentStatus)).toBe('failed');
  });

  it('stays pending for 3-D Secure, then completes once the provider says authenticated', async () => {
    const activities = mocked(cardDepositAuthenticated.activities(env));
    const { opened, answered, result } = await withWorker(env, activities, (taskQueue) =>
      cardDepositAuthenticated.play(env, taskQueue),
    );
    expect(opened).toMatchObject({
      status: 'opened',
      outcome: 'pending',
      payment: { paymentStatus: 'requires_action' },
    });
    expect((opened as { payment: { nextActionUrl: string } }).payment.nextActionUrl).toMatch(
      /^\/api\/v1\/testing\/card-authentication\/pi_sandbox_/,
    );
    expect(answered).toBe('completed');
    expect(result).toBe('completed');
    expect(activities.completeCardDeposit).toHaveBeenCalledTimes(1);
  });

  it('fails without moving money when the authentication fails', async () => {
    const activities = mocked(
      cardActivities(env, { created: 'requires_action', checked: 'failed' }),
    );
    const input = inputFor();
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, input);
      expect(await handle.query(depositStateQuery)).toBe('pending');
      expect(await notifyCard(handle, 'failed')).toBe('failed');
      expect(await handle.result()).toBe('failed');
      const described = await handle.describe();
      expect(described.typedSearchAttributes.get(SearchAttributes.PaymentStatus)).toBe('failed');
    });
    expect(activities.closeCardDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
      status: 'failed',
    });
    expect(activities.completeCardDeposit).not.toHaveBeenCalled();
  });

  it('expires a payment nobody authenticates, after a last look, canceling it at the provider', async () => {
    const activities = mocked(cardDepositExpired.activities(env));
    const started = await env.currentTimeMs();
    const { input, result } = await withWorker(env, activities, (taskQueue) =>
      cardDepositExpired.play(env, taskQueue),
    );
    expect(result).toBe('expired');
    expect((await env.currentTimeMs()) - started).toBeGreaterThanOrEqual(ONE_HOUR);
    expect(activities.checkCardPayment).toHaveBeenCalledTimes(1);
    expect(activities.cancelCardPayment).toHaveBeenCalledWith({
      mode: input.mode,
      paymentId: `pi_sandbox_${input.transactionId.replace(/-/g, '')}`,
    });
    expect(activities.closeCardDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
      status: 'expired',
    });
    expect(activities.completeCardDeposit).not.toHaveBeenCalled();
  });

  it('completes at expiry when the cancel finds the card charged in the meantime', async () => {
    const activities = mocked(
      cardActivities(env, { created: 'requires_action', canceled: 'succeeded' }),
    );
    const input = inputFor();
    const result = await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, input);
      return handle.result();
    });
    expect(result).toBe('completed');
    expect(activities.cancelCardPayment).toHaveBeenCalledTimes(1);
    expect(activities.completeCardDeposit).toHaveBeenCalledTimes(1);
    expect(activities.closeCardDeposit).not.toHaveBeenCalled();
  });

  it('completes at expiry when the last look finds the card charged (the event was lost)', async () => {
    const activities = mocked(
      cardActivities(env, { created: 'requires_action', checked: 'succeeded' }),
    );
    const input = inputFor();
    const result = await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, input);
      return handle.result();
    });
    expect(result).toBe('completed');
    expect(activities.completeCardDeposit).toHaveBeenCalledTimes(1);
  });

  it('syncs with the provider on request', async () => {
    const activities = mocked(
      cardActivities(env, { created: 'requires_action', checked: 'succeeded' }),
    );
    const input = inputFor();
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, input);
      expect(await handle.executeUpdate(cardDepositUpdates.sync)).toBe('completed');
      expect(await handle.result()).toBe('completed');
    });
    expect(activities.checkCardPayment).toHaveBeenCalledTimes(1);
    expect(activities.completeCardDeposit).toHaveBeenCalledTimes(1);
  });

  it('retries a provider timeout with the same input, so the card is charged once', async () => {
    const base = cardActivities(env, { created: 'succeeded' });
    let attempts = 0;
    const activities = mocked({
      ...base,
      openCardDeposit: async (input: CardDepositInput) => {
        attempts += 1;
        if (attempts === 1) throw new Error('provider timed out');
        return base.openCardDeposit(input);
      },
    });
    const input = inputFor('pm_card_visa');
    const { opened } = await withWorker(env, activities, (taskQueue) => open(taskQueue, input));
    expect(opened).toMatchObject({ status: 'opened', outcome: 'completed' });
    expect(activities.openCardDeposit).toHaveBeenCalledTimes(2);
    // The activity derives the provider's idempotency key from this input (the workflow id).
    expect(activities.openCardDeposit.mock.calls[1]).toEqual(
      activities.openCardDeposit.mock.calls[0],
    );
    expect(activities.completeCardDeposit).toHaveBeenCalledTimes(1);
  });

  it('fails when the provider stays unreachable through every attempt, and closes the record', async () => {
    const activities = mocked({
      ...cardActivities(env),
      openCardDeposit: (_: CardDepositInput) => Promise.reject(new Error('provider down')),
    });
    const input = inputFor('pm_card_visa');
    // Started without the open update. The local activity's retries back off in the worker, in
    // real time: the test server skips only its own timers.
    const result = await withWorker(env, activities, (taskQueue) =>
      env.client.workflow.execute(cardDepositWorkflow, {
        workflowId: workflowIds.cardDeposit(input.transactionId),
        taskQueue,
        args: [input],
      }),
    );
    expect(result).toBe('failed');
    expect(activities.openCardDeposit).toHaveBeenCalledTimes(8);
    expect(activities.closeCardDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
      status: 'failed',
    });
  });

  it('settles once for duplicate events, and ignores events that come after the outcome', async () => {
    const activities = mocked(
      cardActivities(env, { created: 'requires_action', checked: 'succeeded' }),
    );
    const input = inputFor();
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, input);
      // Out of order: a stale "still authenticating" event changes nothing.
      expect(await notifyCard(handle, 'requires_action')).toBe('pending');
      const answers = await Promise.all([
        notifyCard(handle, 'succeeded'),
        notifyCard(handle, 'succeeded'),
        handle.executeUpdate(cardDepositUpdates.sync),
      ]);
      expect(answers).toEqual(['completed', 'completed', 'completed']);
      expect(await handle.result()).toBe('completed');
      // One settlement in the history. A workflow task failed by the server (updates arriving
      // as the workflow ends) reruns its local steps, which find the deposit settled.
      const { localSteps } = historyShape((await handle.fetchHistory()).events);
      expect(localSteps.filter((step) => step === 'completeCardDeposit')).toHaveLength(1);
    });
    expect(activities.completeCardDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
    });
    expect(activities.closeCardDeposit).not.toHaveBeenCalled();
  });

  it('settles once, on the provider’s answer, when contrary events race', async () => {
    const activities = mocked(
      cardActivities(env, { created: 'requires_action', checked: 'failed' }),
    );
    const input = inputFor();
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, input);
      const answers = await Promise.all([
        notifyCard(handle, 'failed'),
        notifyCard(handle, 'succeeded'),
      ]);
      expect(answers).toEqual(['failed', 'failed']);
      expect(await handle.result()).toBe('failed');
      const { localSteps } = historyShape((await handle.fetchHistory()).events);
      expect(localSteps.filter((step) => step === 'closeCardDeposit')).toHaveLength(1);
    });
    expect(activities.closeCardDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
      status: 'failed',
    });
    expect(activities.completeCardDeposit).not.toHaveBeenCalled();
  });

  it('credits nothing on an event that says succeeded while the provider still awaits 3-D Secure', async () => {
    const activities = mocked(cardActivities(env, { created: 'requires_action' }));
    const input = inputFor();
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, input);
      expect(await notifyCard(handle, 'succeeded')).toBe('pending');
      expect(activities.checkCardPayment).toHaveBeenCalledTimes(1);
      expect(activities.completeCardDeposit).not.toHaveBeenCalled();
      // Nobody authenticates: it expires as any payment left waiting does.
      expect(await handle.result()).toBe('expired');
    });
    expect(activities.completeCardDeposit).not.toHaveBeenCalled();
    expect(activities.closeCardDeposit).toHaveBeenCalledWith({
      transactionId: input.transactionId,
      status: 'expired',
    });
  });

  it('takes an event that arrives before the open step has finished', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const base = cardActivities(env, { created: 'requires_action', checked: 'succeeded' });
    const activities = mocked({
      ...base,
      openCardDeposit: async (input: CardDepositInput) => {
        await gate;
        return base.openCardDeposit(input);
      },
    });
    const input = inputFor();
    await withWorker(env, activities, async (taskQueue) => {
      const opening = open(taskQueue, input);
      // Wait until the workflow exists, then send the event while open is still running.
      let handle;
      for (;;) {
        try {
          handle = env.client.workflow.getHandle(workflowIds.cardDeposit(input.transactionId));
          await handle.describe();
          break;
        } catch {
          await new Promise((r) => setTimeout(r, 20));
        }
      }
      const notified = handle.executeUpdate(cardDepositUpdates.notify, {
        args: [{ status: 'succeeded' }],
      });
      await new Promise((r) => setTimeout(r, 100));
      release();
      expect(await notified).toBe('completed');
      expect((await opening).opened).toMatchObject({ status: 'opened' });
      expect(await handle.result()).toBe('completed');
    });
    expect(activities.completeCardDeposit).toHaveBeenCalledTimes(1);
  });

  it('refuses an event with an unknown status', async () => {
    const activities = mocked(
      cardActivities(env, { created: 'requires_action', checked: 'succeeded' }),
    );
    const input = inputFor();
    await withWorker(env, activities, async (taskQueue) => {
      const { handle } = await open(taskQueue, input);
      await expect(
        handle.executeUpdate(cardDepositUpdates.notify, {
          args: [{ status: 'paid' as never }],
        }),
      ).rejects.toThrow();
      expect(await notifyCard(handle, 'succeeded')).toBe('completed');
    });
  });

  it('does not retry a non-retryable decline from the provider', async () => {
    const activities = mocked({
      ...cardActivities(env),
      openCardDeposit: (_: CardDepositInput) =>
        Promise.reject(
          ApplicationFailure.nonRetryable('payment_method_not_found', 'payment_method_not_found'),
        ),
    });
    const input = inputFor('pm_nope');
    const { opened } = await withWorker(env, activities, (taskQueue) => open(taskQueue, input));
    expect(opened).toEqual({ status: 'declined', code: 'payment_method_not_found', detail: null });
    expect(activities.openCardDeposit).toHaveBeenCalledTimes(1);
  });
});
