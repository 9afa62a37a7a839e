/**
 * The inputs of the payment workflows as a single request starts them, made in one place: the
 * API's single endpoints and a bulk payment's items (src/workflows/batch.ts) start the same payment
 * from the same fields. No I/O here: workflow code imports it.
 */
import type { Mode } from '../domain/types';
import type { MoneyOutInput } from './money-out-shared';
import type { TransferInput } from './shared';

/** Whose payment it is. */
export type PaymentOwner = { applicationId: string; mode: Mode };

/** A transfer request's fields, amounts in minor units as decimal strings. */
export type TransferFields = {
  fromWalletId: string;
  toWalletId: string;
  amount: string;
  description: string;
  metadata?: Record<string, string>;
};

/**
 * A cashout's or card payout's fields: `destination` as the kind's provider needs it (a card
 * payout's connected account is found when it starts, so its stored fields have none).
 */
export type MoneyOutFields = {
  walletId: string;
  amount: string;
  destination: Record<string, string>;
  metadata?: Record<string, string>;
};

export function transferInput(
  owner: PaymentOwner,
  transactionId: string,
  fields: TransferFields,
): TransferInput {
  return {
    transactionId,
    applicationId: owner.applicationId,
    mode: owner.mode,
    fromWalletId: fields.fromWalletId,
    toWalletId: fields.toWalletId,
    amount: fields.amount,
    description: fields.description,
    ...(fields.metadata && { metadata: fields.metadata }),
    localSteps: true,
  };
}

export function moneyOutInput(
  kind: 'cashout' | 'payout',
  owner: PaymentOwner,
  transactionId: string,
  fields: MoneyOutFields,
): MoneyOutInput {
  return {
    kind,
    transactionId,
    applicationId: owner.applicationId,
    mode: owner.mode,
    walletId: fields.walletId,
    amount: fields.amount,
    destination: fields.destination,
    ...(fields.metadata && { metadata: fields.metadata }),
  };
}
