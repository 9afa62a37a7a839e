import type { ApiClient, Reply } from './http';

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
