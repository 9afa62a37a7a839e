import { z } from 'zod';

/** The parts of the API's replies the bank test reads (a reply that differs throws). */
export const Wire = {
  id: z.object({ id: z.string() }),
  status: z.object({ status: z.string() }),
  refusal: z.object({ detail: z.unknown() }).partial(),
  escrowStep: z.object({ id: z.string(), escrow_amount: z.number() }),
  deposit: z.object({
    transaction_id: z.string(),
    transaction: z.object({ amount: z.number().int(), application_fee: z.number().int() }),
  }),
  moneyOut: z.object({
    id: z.string(),
    status: z.string(),
    total_amount: z.number(),
    application_fee: z.number().nullable(),
  }),
  cardDeposit: z.object({
    id: z.string(),
    status: z.string(),
    amount: z.number(),
    application_fee: z.number().nullable(),
  }),
  refund: z.object({ id: z.string(), status: z.string(), amount: z.number() }),
  dispute: z.object({
    id: z.string(),
    transaction_id: z.string(),
    wallet_id: z.string(),
    amount: z.number(),
    reserved_amount: z.number(),
    uncovered_amount: z.number(),
    status: z.string(),
  }),
  transaction: z.object({
    id: z.string(),
    transaction_type: z.string(),
    status: z.string(),
    amount: z.number(),
    escrow_amount: z.number(),
    wallet_id: z.string().nullable(),
    recipient_wallet_id: z.string().nullable(),
    amount_refunded: z.number().optional(),
  }),
  batch: z.object({
    id: z.string(),
    status: z.string(),
    total: z.number().int(),
    succeeded: z.number().int(),
    failed: z.number().int(),
    canceled: z.number().int(),
  }),
  batchItems: z.object({
    data: z.array(
      z.object({
        index: z.number().int(),
        status: z.string(),
        transaction_id: z.string().nullable(),
      }),
    ),
    has_more: z.boolean(),
  }),
  wallets: z.array(z.object({ id: z.string(), balance: z.number() })),
};
