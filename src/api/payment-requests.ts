import { z } from 'zod';
import type { MoneyOutFields, TransferFields } from '../workflows/payment-inputs';
import { BodyId, Metadata, PositiveAmount, PositiveMinorUnits } from './schemas';

/**
 * The request bodies of the single payment endpoints, each with what it makes of a body: the
 * fields of its payment's workflow input (src/workflows/payment-inputs.ts). A bulk payment's items
 * are these very bodies (src/api/routes/batches.ts), so an item is validated as its request is.
 */
export const TransferRequest = z.object({
  from_wallet_id: BodyId,
  to_wallet_id: BodyId,
  amount: PositiveAmount,
  description: z.string().max(500).default(''),
  metadata: Metadata.optional(),
});

export const transferFields = (body: z.infer<typeof TransferRequest>): TransferFields => ({
  fromWalletId: body.from_wallet_id,
  toWalletId: body.to_wallet_id,
  amount: body.amount.toString(),
  description: body.description,
  ...(body.metadata && { metadata: body.metadata }),
});

export const CashoutRequest = z.object({
  wallet_id: BodyId,
  amount: PositiveMinorUnits.meta({ description: 'What the phone receives, in SLE cents' }),
  phone_number: z
    .string()
    .regex(/^\+?[0-9]{6,15}$/, 'must be a phone number with its country code, digits only')
    .meta({ example: '+23276123456' }),
  metadata: Metadata.optional(),
});

export const cashoutFields = (body: z.infer<typeof CashoutRequest>): MoneyOutFields => ({
  walletId: body.wallet_id,
  amount: body.amount.toString(),
  destination: { phone_number: body.phone_number },
  ...(body.metadata && { metadata: body.metadata }),
});

export const CardPayoutRequest = z.object({
  wallet_id: BodyId,
  amount: PositiveAmount,
  metadata: Metadata.optional(),
});

/** A card payout's fields; its connected account (`destination`) is found when it starts. */
export const cardPayoutFields = (
  body: z.infer<typeof CardPayoutRequest>,
  accountId = '',
): MoneyOutFields => ({
  walletId: body.wallet_id,
  amount: body.amount.toString(),
  destination: { account_id: accountId },
  ...(body.metadata && { metadata: body.metadata }),
});
