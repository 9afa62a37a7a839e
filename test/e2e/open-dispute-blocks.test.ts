import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { updateApplicationSettings } from '../../src/db/applications';
import { insertDispute } from '../../src/db/disputes';
import { createDatabasePool } from '../../src/db/pool';
import { insertTransaction } from '../../src/db/transactions';
import { assertLedgerInvariant, balanceOf } from '../support/database';
import { createUserWithWallet, type ApiClient } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { waitFor } from '../support/wait';

/**
 * An open dispute blocks deleting its wallet's user and switching its application's currency
 * (docs/api.md, Disputes): a dispute won later would credit a wallet nobody can reach any more.
 */

const engine = useTestEngine();
const deleting = useTestApp(engine, { currency: 'USD' });
const switching = useTestApp(engine, { currency: 'USD' });

const DEPOSIT = '/api/v1/transactions/wallet/card-deposit';
const SIMULATE = '/api/v1/testing/simulate-dispute';
const OUTCOME = '/api/v1/testing/simulate-dispute-outcome';

/** A 10.00 card deposit, then a dispute of all of it: the wallet holds nothing, the reserve all. */
async function disputedWallet(api: ApiClient) {
  const { userId, walletId } = await createUserWithWallet(api);
  const deposit = await api.post(DEPOSIT, {
    wallet_id: walletId,
    amount: 10,
    payment_method_id: 'pm_card_visa',
  });
  expect(deposit.status).toBe(200);
  expect(deposit.body.status).toBe('completed');
  const dispute = await api.post(SIMULATE, { transaction_id: deposit.body.id });
  expect(dispute.status).toBe(200);
  expect(dispute.body).toMatchObject({ reserved_amount: 10, status: 'needs_response' });
  expect(await balanceOf(engine.pool, walletId)).toBe(0n);
  return { userId, walletId, disputeId: dispute.body.id as string };
}

const userExists = (userId: string) =>
  engine.pool.exists(sql.unsafe`SELECT 1 FROM users WHERE id = ${userId}`);

const baseCurrency = (applicationId: string) =>
  engine.pool.oneFirst(sql.type(z.object({ base_currency: z.string() }))`
    SELECT base_currency FROM applications WHERE id = ${applicationId}`);

afterEach(async () => {
  await assertLedgerInvariant(engine.pool);
});

describe('an open dispute', () => {
  it('refuses deleting the user (400, nothing deleted) until the dispute closes', async () => {
    const { api } = deleting;
    const { userId, disputeId } = await disputedWallet(api);

    const refused = await api.del(`/api/v1/users/${userId}/`);
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      detail: 'The user cannot be deleted while a dispute of their wallet is still open',
    });
    expect(await userExists(userId)).toBe(true);
    expect((await api.get(`/api/v1/wallets/${userId}/`)).status).toBe(200);

    const lost = await api.post(OUTCOME, { dispute_id: disputeId, status: 'lost' });
    expect(lost.status).toBe(200);
    expect(lost.body.status).toBe('lost');
    const deleted = await api.del(`/api/v1/users/${userId}/`);
    expect(deleted.status).toBe(200);
    expect(await userExists(userId)).toBe(false);
  });

  it('refuses switching the application’s currency, changing nothing, until it closes', async () => {
    const { api, app } = switching;
    const { userId, disputeId } = await disputedWallet(api);

    const refused = await updateApplicationSettings(engine.pool, app.id, { baseCurrency: 'SLE' });
    expect(refused).toEqual({
      refused: 'the base currency cannot change: a dispute of the application is still open',
    });
    expect(await baseCurrency(app.id)).toBe('USD');
    expect((await api.get(`/api/v1/wallets/${userId}/`)).body.currency).toBe('USD');

    const lost = await api.post(OUTCOME, { dispute_id: disputeId, status: 'lost' });
    expect(lost.body.status).toBe('lost');
    const switched = await updateApplicationSettings(engine.pool, app.id, { baseCurrency: 'SLE' });
    expect(switched).toMatchObject({ application: { base_currency: 'SLE' } });
    expect(await baseCurrency(app.id)).toBe('SLE');
  });

  it('opened while the delete waits for the wallet’s lock still refuses it (no race)', async () => {
    const { api, app } = deleting;
    const { userId, walletId } = await createUserWithWallet(api);
    // A completed card deposit's record alone: the dispute below reserves nothing of an empty wallet.
    const deposit = await insertTransaction(engine.pool, {
      id: randomUUID(),
      applicationId: app.id,
      mode: 'test',
      type: 'card_deposit',
      status: 'completed',
      currency: 'USD',
      amount: 1_000n,
      walletId,
    });
    // As a dispute's opening does, on a connection of its own: the wallet's account locked, then
    // the dispute written, while the delete waits for that lock.
    const opener = await createDatabasePool(engine.config.database.url!, { maximumPoolSize: 1 });
    let locked!: () => void;
    let proceed!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const goOn = new Promise<void>((resolve) => (proceed = resolve));
    const opening = opener.transaction(async (trx) => {
      await trx.query(sql.unsafe`
        SELECT id FROM ledger_accounts WHERE id = ${walletId} FOR NO KEY UPDATE`);
      locked();
      await goOn;
      const id = randomUUID();
      await insertDispute(trx, {
        id,
        applicationId: app.id,
        mode: 'test',
        transactionId: deposit.id,
        walletId,
        currency: 'USD',
        amount: 1_000n,
        reserved: 0n,
        reason: 'general',
        evidenceDueBy: new Date(Date.now() + 86_400_000).toISOString(),
        providerReference: null,
        workflowId: `dispute-${id}`,
      });
    });
    try {
      await lockTaken;
      const answer = api.del(`/api/v1/users/${userId}/`);
      const waiting = await waitFor(
        () =>
          engine.pool.exists(sql.unsafe`
            SELECT 1 FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND query LIKE '%FOR NO KEY UPDATE OF a%'`),
        10_000,
        20,
      );
      proceed();
      await opening;
      expect(waiting).toBe(true);
      const refused = await answer;
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({
        detail: 'The user cannot be deleted while a dispute of their wallet is still open',
      });
      expect(await userExists(userId)).toBe(true);
    } finally {
      proceed();
      await opening.catch(() => undefined);
      await opener.end();
    }
  });
});
