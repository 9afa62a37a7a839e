import { sql } from 'slonik';
import { z } from 'zod';
import { loadConfig } from '../../src/config';
import { createProviders } from '../../src/providers';
import { balanceOf, eventsOf } from '../support/database';
import { createUserWithWallet, waitForStatus } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';

/** A card payment nobody authenticates expires after CARD_PAYMENT_PENDING_TTL_SECONDS. */

const engine = useTestEngine({ env: { CARD_PAYMENT_PENDING_TTL_SECONDS: '2' } });
const { api } = useTestApp(engine, { currency: 'USD' });

it('expires a card payment left waiting for 3-D Secure, and a late authentication changes nothing', async () => {
  const { walletId } = await createUserWithWallet(api);
  const res = await api.post('/api/v1/transactions/wallet/card-deposit', {
    wallet_id: walletId,
    amount: 10,
    payment_method_id: 'pm_card_authenticationRequired',
  });
  expect(res.body.status).toBe('pending');
  expect(await waitForStatus(api, res.body.id as string, 'expired')).toBe('expired');
  expect((await eventsOf(engine.pool, res.body.id as string)).map((e) => e.type)).toEqual([
    'deposit.failed',
  ]);
  const late = await api.post('/api/v1/testing/simulate-card-authentication', {
    transaction_id: res.body.id,
    status: 'successful',
  });
  expect(late.status).toBe(200);
  expect(late.body.status).toBe('expired');
  // The expiry canceled the payment at the provider: a late approval there charges nothing.
  const payment = await engine.pool.oneFirst(sql.type(z.object({ status: z.string() }))`
    SELECT status FROM sandbox_card_payments WHERE id = ${res.body.provider_reference as string}`);
  expect(payment).toBe('failed');
  const providers = createProviders({ config: loadConfig({}), pool: engine.pool });
  const approved = await providers.sandboxCard.authenticate(
    res.body.provider_reference as string,
    true,
  );
  expect(approved.status).toBe('failed');
  expect(await balanceOf(engine.pool, walletId)).toBe(0n);
});
