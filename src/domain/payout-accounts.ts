/**
 * A payout account owner's identity and business details, shaped as Stripe's `individual` and
 * `business_profile`. The API validates requests with these schemas (422 on anything else, unknown
 * fields included); the providers and the onboarding workflow use their types.
 */
import { z } from 'zod';

const text = (max: number) => z.string().trim().min(1).max(max);

/** ISO 3166-1 alpha-2, upper case, as the provider takes it. */
const Country = z
  .string()
  .regex(/^[A-Z]{2}$/, 'must be a two-letter country code (ISO 3166-1 alpha-2, upper case)')
  .meta({ example: 'SL' });

export const PayoutAddress = z
  .strictObject({
    line1: text(200).optional(),
    line2: text(200).optional(),
    city: text(100).optional(),
    state: text(100).optional(),
    postal_code: text(20).optional(),
    country: Country,
  })
  .meta({ id: 'PayoutAddress' });

/** A calendar date that exists (no 31 February). */
export const DateOfBirth = z
  .strictObject({
    day: z.int().min(1).max(31),
    month: z.int().min(1).max(12),
    year: z.int().min(1900).max(2100),
  })
  .refine(
    ({ day, month, year }) => new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day,
    'is not a date of the calendar',
  )
  .meta({ id: 'DateOfBirth' });

export const PayoutIndividual = z
  .strictObject({
    first_name: text(100),
    last_name: text(100),
    dob: DateOfBirth,
    address: PayoutAddress,
    email: z.email().max(254),
    phone: z
      .string()
      .regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 phone number, like +23276123456')
      .optional(),
    id_number: z
      .string()
      .regex(/^[A-Za-z0-9-]{1,64}$/, 'must be 1 to 64 letters, digits or hyphens')
      .optional()
      .meta({
        description: 'The national identity number (Test Mode: 000000000 verifies at once)',
      }),
  })
  .meta({
    id: 'PayoutIndividual',
    description: 'The owner’s identity, in the shape of the card provider’s `individual` object',
  });
export type PayoutIndividual = z.infer<typeof PayoutIndividual>;

export const PayoutBusinessProfile = z
  .strictObject({
    mcc: z
      .string()
      .regex(/^\d{4}$/, 'must be a merchant category code of four digits')
      .meta({ example: '5734' }),
    product_description: text(500),
    name: text(100).optional(),
    url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .optional(),
  })
  .meta({
    id: 'PayoutBusinessProfile',
    description: 'What the owner sells, in the shape of the provider’s `business_profile` object',
  });
export type PayoutBusinessProfile = z.infer<typeof PayoutBusinessProfile>;

/** Where the payout account stands after a step: the specification's onboarding result. */
export type OnboardingResult = {
  status: 'done';
  accountId: string;
  payoutsEnabled: boolean;
  externalAccountAdded: boolean;
  currentlyDue: string[];
  pendingVerification: string[];
  disabledReason: string | null;
};

export type OnboardingInput = {
  applicationId: string;
  mode: 'test' | 'live';
  walletId: string;
};

/** One submission of the owner's details (complete-onboarding). */
export type OnboardingSubmission = {
  individual: PayoutIndividual;
  businessProfile: PayoutBusinessProfile;
  /** The payout card's token, when one is given. */
  cardToken: string | null;
  /** The end customer's address and when the terms were accepted (Unix seconds). */
  tosAcceptance: { ip: string; date: number };
};
