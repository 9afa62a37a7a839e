import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../../src/db/pool';
import { createFundedWallet, type ApiClient, type Reply } from './http';

/** An owner's identity the sandbox (and the fake Stripe Connect) verifies at once. */
export const VERIFIED_INDIVIDUAL = {
  first_name: 'Aminata',
  last_name: 'Kamara',
  dob: { day: 14, month: 3, year: 1990 },
  address: { line1: '12 Siaka Stevens Street', city: 'Freetown', country: 'SL' },
  email: 'aminata@example.com',
  id_number: '000000000',
};

export const BUSINESS_PROFILE = { mcc: '5734', product_description: 'Handmade furniture' };

/** The end customer's address (TEST-NET-3, a documentation range: never contacted). */
export const CUSTOMER_ADDRESS = { 'x-forwarded-for': '203.0.113.7' };

/**
 * Onboards a wallet's owner through the API for card payouts: verified at once with a debit
 * card (`tok_visa_debit`) unless `overrides` say otherwise. Answers the API's reply.
 */
export function onboardForPayouts(
  client: ApiClient,
  walletId: string,
  overrides: Record<string, unknown> = {},
): Promise<Reply> {
  return client.post(
    '/api/v1/transactions/wallet/complete-onboarding/',
    {
      wallet_id: walletId,
      individual: VERIFIED_INDIVIDUAL,
      business_profile: BUSINESS_PROFILE,
      card_token: 'tok_visa_debit',
      ...overrides,
    },
    CUSTOMER_ADDRESS,
  );
}

/**
 * A wallet funded with `amountMinor` whose owner is onboarded for card payouts
 * (`onboardForPayouts`); throws unless onboarding answered 200. Answers the wallet and the
 * owner's connected account.
 */
export async function payableWallet(
  api: ApiClient,
  pool: DatabasePool,
  amountMinor: bigint,
): Promise<{ walletId: string; accountId: string }> {
  const { walletId } = await createFundedWallet(api, pool, amountMinor);
  const onboarded = await onboardForPayouts(api, walletId);
  if (onboarded.status !== 200) {
    throw new Error(`onboarding: ${onboarded.status} ${JSON.stringify(onboarded.body)}`);
  }
  return { walletId, accountId: onboarded.body.account_id as string };
}

/** The Test Mode mobile-money sandbox's payouts under a reference (our transaction id). */
export const sandboxMobileMoneyPayouts = (pool: DatabasePool, reference: string) =>
  pool.any(sql.type(
    z.object({
      id: z.string(),
      idempotency_key: z.string(),
      calls: z.number(),
      status: z.string(),
    }),
  )`
    SELECT id, idempotency_key, calls, status FROM sandbox_mobile_money_payouts
    WHERE reference = ${reference} ORDER BY created_at`);

/** The Test Mode card sandbox's (connected accounts') payouts under a reference. */
export const sandboxCardPayouts = (pool: DatabasePool, reference: string) =>
  pool.any(sql.type(
    z.object({
      id: z.string(),
      idempotency_key: z.string(),
      status: z.string(),
      amount: z.bigint(),
    }),
  )`
    SELECT id, idempotency_key, status, amount FROM sandbox_connect_payouts
    WHERE reference = ${reference} ORDER BY created_at`);
