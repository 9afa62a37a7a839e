/**
 * What the API (client side) and the workflows share: search attribute keys, the argument and
 * result types, and (from ./ids.ts) the workflow ids. No I/O here: workflow code imports it.
 */
import {
  defineSearchAttributeKey,
  SearchAttributeType,
  type SearchAttributePair,
} from '@temporalio/common';
import { defineQuery, defineUpdate, type Sinks } from '@temporalio/workflow';
import type { ErrorCode } from '../domain/errors';
import type { TransactionStatus, TransactionType } from '../domain/types';

export { workflowIds } from './ids';

export const SearchAttributes = {
  ApplicationId: defineSearchAttributeKey('ApplicationId', SearchAttributeType.KEYWORD),
  PaymentMode: defineSearchAttributeKey('PaymentMode', SearchAttributeType.KEYWORD),
  WalletId: defineSearchAttributeKey('WalletId', SearchAttributeType.KEYWORD_LIST),
  PaymentType: defineSearchAttributeKey('PaymentType', SearchAttributeType.KEYWORD),
  PaymentStatus: defineSearchAttributeKey('PaymentStatus', SearchAttributeType.KEYWORD),
} as const;

/** Registered on the development server at start (`temporal server start-dev --search-attribute`). */
export const SEARCH_ATTRIBUTE_DEFINITIONS: Record<keyof typeof SearchAttributes, string> = {
  ApplicationId: 'Keyword',
  PaymentMode: 'Keyword',
  WalletId: 'KeywordList',
  PaymentType: 'Keyword',
  PaymentStatus: 'Keyword',
};

/**
 * The search attributes every payment workflow starts with (the API's and a bulk payment's
 * starts); the workflow moves PaymentStatus.
 */
export function paymentSearchAttributes(
  owner: { applicationId: string; mode: 'test' | 'live' },
  type: TransactionType,
  walletIds: string[],
): SearchAttributePair[] {
  return [
    { key: SearchAttributes.ApplicationId, value: owner.applicationId },
    { key: SearchAttributes.PaymentMode, value: owner.mode },
    { key: SearchAttributes.WalletId, value: walletIds },
    { key: SearchAttributes.PaymentType, value: type },
    { key: SearchAttributes.PaymentStatus, value: 'pending' },
  ];
}

/**
 * A business decline, carried as data so that every waiter of the workflow sees the same result.
 * `detail` is null when the code's standard message says it all (the API edge fills it in).
 */
export type Declined = { status: 'declined'; code: ErrorCode; detail: string | null };

/**
 * Set by the API's starts of the workflows whose steps are local activities (transfers, holds,
 * card deposits, refunds): the workflow then skips `patched`, whose marker and search-attribute
 * upsert cost each payment more history events and a visibility write. Without it: `patched`.
 */
export type LocalSteps = { localSteps?: true };

export type TransferInput = LocalSteps & {
  transactionId: string;
  applicationId: string;
  mode: 'test' | 'live';
  fromWalletId: string;
  toWalletId: string;
  /** Minor units as a decimal string: Temporal payloads are JSON, and JSON has no bigint. */
  amount: string;
  description: string;
  /** The merchant's metadata (src/api/schemas.ts `Metadata`), written with the payment row. */
  metadata?: Record<string, string>;
  /** The request's Idempotency-Key use, if it has one: the ledger step stores its answer. */
  answer?: PaymentAnswer;
};

/** The use of an Idempotency-Key under which a money step stores the answer to its request. */
export type PaymentAnswer = { key: string; claimedAt: string };

/**
 * A payment row as JSON (src/db/transactions.ts `transactionRecord`): amounts in minor units as
 * decimal strings. A workflow result that carries it spares the API a read of the row.
 */
export type TransactionRecord = {
  id: string;
  application_id: string;
  mode: 'test' | 'live';
  transaction_type: TransactionType;
  status: TransactionStatus;
  wallet_id: string | null;
  recipient_wallet_id: string | null;
  escrow_wallet_id: string | null;
  application_wallet_id: string | null;
  currency: 'USD' | 'SLE';
  amount: string;
  escrow_amount: string;
  application_fee: string | null;
  description: string;
  provider_reference: string | null;
  workflow_id: string | null;
  /** The merchant's metadata; absent in records of results recorded before it was carried. */
  merchant_metadata?: Record<string, string>;
  created_at: string;
  updated_at: string;
};

export type TransferResult =
  | {
      status: 'completed';
      transactionId: string;
      /** The payment row as written; absent when a retried step found it already written. */
      transaction?: TransactionRecord;
      /** The step stored the request's answer under its key (TransferInput `answer`). */
      answered?: true;
    }
  | Declined;

/**
 * Sinks of the payment workflows (src/temporal/settlements.ts): `settled` tells this process's API
 * what a payment first answers (`Result`: the workflow's own), so that a request that started it
 * need not wait on the server.
 */
export interface PaymentSinks<
  Result = TransferResult | EscrowStepResult | CardDepositOpened | Declined,
> extends Sinks {
  payments: { settled(result: Result): void };
}

export type DepositInput = {
  transactionId: string;
  applicationId: string;
  mode: 'test' | 'live';
  walletId: string;
  /** SLE cents, as a decimal string. */
  amount: string;
  /** The merchant's metadata (src/api/schemas.ts `Metadata`), written with the payment row. */
  metadata?: Record<string, string>;
};

/** What the deposit request answers once the provider has created the payment code. */
export type DepositOpened = {
  status: 'opened';
  transactionId: string;
  paymentCode: {
    id: string;
    code: string;
    amount: string;
    currency: 'SLE';
    instructions: string;
    status: string;
    expiresAt: string;
  };
  deposit: {
    walletId: string;
    amount: string;
    totalAmountPaid: string;
    providerFee: string;
    applicationFee: string;
  };
};

export type DepositOutcome = 'pending' | 'completed' | 'failed' | 'expired';

export const depositUpdates = {
  open: defineUpdate<DepositOpened | Declined>('open'),
  /** A provider notification (or the simulate-webhook endpoint), after its signature checked. */
  notify: defineUpdate<
    DepositOutcome,
    [{ status: 'pending' | 'completed' | 'failed' | 'expired' }]
  >('notify'),
  /** Ask the provider now and reconcile at once. */
  sync: defineUpdate<DepositOutcome>('sync'),
};
export const depositStateQuery = defineQuery<DepositOutcome>('state');

export type CardDepositInput = LocalSteps & {
  transactionId: string;
  applicationId: string;
  mode: 'test' | 'live';
  walletId: string;
  /** Minor units of the application's base currency, as a decimal string. */
  amount: string;
  paymentMethodId: string;
  /** The merchant's metadata (src/api/schemas.ts `Metadata`), written with the payment row. */
  metadata?: Record<string, string>;
};

/** Where a card payment stands at the provider (src/providers/card.ts `CardPaymentStatus`). */
export type CardPaymentState = 'succeeded' | 'requires_action' | 'processing' | 'failed';

/** What `openCardDeposit` answers: the pending deposit and the provider's payment. */
export type CardPaymentOpened = {
  transactionId: string;
  paymentId: string;
  paymentStatus: CardPaymentState;
  /** Where the payer authenticates (a path for the sandbox, a URL for the live provider). */
  nextActionUrl: string | null;
  /** When a payment still waiting for the payer expires (ISO time). */
  expiresAt: string;
};

/**
 * What the card deposit request answers: the deposit completed (the card was charged) or still
 * pending (the provider asked for more, `nextActionUrl`).
 */
export type CardDepositOpened = {
  status: 'opened';
  outcome: DepositOutcome;
  payment: CardPaymentOpened;
};

export const cardDepositUpdates = {
  open: defineUpdate<CardDepositOpened | Declined>('open'),
  /** A provider event (or the simulate-card-authentication endpoint), its signature checked. */
  notify: defineUpdate<DepositOutcome, [{ status: CardPaymentState }]>('notify'),
  /** Ask the provider now and reconcile at once. */
  sync: defineUpdate<DepositOutcome>('sync'),
};

export type HoldInput = LocalSteps & {
  holdId: string;
  applicationId: string;
  mode: 'test' | 'live';
  walletId: string;
  /** Minor units, decimal string. */
  amount: string;
  description: string;
  recipientWalletId: string | null;
  /** ISO time; the hold is refunded automatically when it passes. */
  expiresAt: string | null;
  /** The merchant's metadata, written with the hold's row. */
  metadata?: Record<string, string>;
  /** The request's Idempotency-Key use, if it has one: the hold's step stores its answer. */
  answer?: PaymentAnswer;
};

export type ReleaseRequest = {
  /** The release's transaction id (derived from the Idempotency-Key when there is one). */
  releaseId: string;
  recipientWalletId: string;
  /** Minor units; null releases all that is still held. */
  amount: string | null;
  /** The merchant's metadata, written with the release's row (the hold's is not copied). */
  metadata?: Record<string, string>;
  /** The request's Idempotency-Key use, if it has one: the release's step stores its answer. */
  answer?: PaymentAnswer;
};

export type RefundRequest = {
  refundId: string;
  reason: 'requested' | 'expired';
  /** The merchant's metadata, written with the refund's row (the hold's is not copied). */
  metadata?: Record<string, string>;
  /** The request's Idempotency-Key use (a refund the API asked for): its step stores its answer. */
  answer?: PaymentAnswer;
};

/** An escrow step's answer: the transaction it wrote, or a decline. */
export type EscrowStepResult =
  | {
      status: 'done';
      transactionId: string;
      remaining: string;
      /** The step's payment row (absent in results recorded before it was carried). */
      transaction?: TransactionRecord;
      /** The step stored the request's answer under its key (HoldInput `answer`). */
      answered?: true;
    }
  | Declined;

export const escrowUpdates = {
  hold: defineUpdate<EscrowStepResult>('hold'),
  release: defineUpdate<EscrowStepResult, [ReleaseRequest]>('release'),
  refund: defineUpdate<EscrowStepResult, [RefundRequest]>('refund'),
};
export const escrowStateQuery = defineQuery<{
  held: string;
  status: 'opening' | 'held' | 'closed';
}>('state');
