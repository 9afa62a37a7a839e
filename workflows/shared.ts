/**
 * What the API (client side) and the workflows share: search attribute keys, workflow ids,
 * and the argument and result types. No I/O here: workflow code imports it.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const SearchAttributes = {
  ApplicationId: defineSearchAttributeKey('ApplicationId', SearchAttributeType.KEYWORD),
  Mode: defineSearchAttributeKey('Mode', SearchAttributeType.KEYWORD),
  WalletId: defineSearchAttributeKey('WalletId', SearchAttributeType.KEYWORD_LIST),
  PaymentType: defineSearchAttributeKey('PaymentType', SearchAttributeType.KEYWORD),
  PaymentStatus: defineSearchAttributeKey('PaymentStatus', SearchAttributeType.KEYWORD),
} as const;

/** Registered on the development server at start (`temporal server start-dev --search-attribute`). */
export const SEARCH_ATTRIBUTE_DEFINITIONS: Record<keyof typeof SearchAttributes, string> = {
  ApplicationId: 'Keyword',
  Mode: 'Keyword',
  WalletId: 'KeywordList',
  PaymentType: 'Keyword',
  PaymentStatus: 'Keyword',
};

export const workflowIds = {
  transfer: (transactionId: string) => `transfer-${transactionId}`,
};

/** A business decline, carried as data so that every waiter of the workflow sees the same result. */
export type Declined = { status: 'declined'; code: string; detail: string };

export type TransferInput = {
  transactionId: string;
  applicationId: string;
  mode: 'test' | 'live';
  fromWalletId: string;
  toWalletId: string;
  /** Minor units as a decimal string: Temporal payloads are JSON, and JSON has no bigint. */
  amount: string;
  description: string;
};

export type TransferResult = { status: 'completed'; transactionId: string } | Declined;
