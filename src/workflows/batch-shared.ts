/**
 * What the API, the activities and the bulk payment's workflow share (docs/api.md, Bulk
 * payments): the batch's input, its items as the workflow starts them, the cancel update and the
 * signal a money-out item's saga sends its batch. No I/O here: workflow code imports it.
 */
import { defineSignal, defineUpdate } from '@temporalio/workflow';
import type { BatchKind, BatchStatus } from '../domain/batches';
import type { Mode } from '../domain/types';
import type { MoneyOutInput, MoneyOutOpened } from './money-out-shared';
import type { Declined, TransferInput } from './shared';

/** How many items one run of a batch's workflow starts before it continues as new. */
export const BATCH_ITEMS_PER_RUN = 500;

export type BatchInput = {
  batchId: string;
  applicationId: string;
  mode: Mode;
  kind: BatchKind;
  atomic: boolean;
  total: number;
  /** At most this many items in flight at once (`BATCH_ITEMS_IN_FLIGHT`). */
  window: number;
  /** Where the next run starts: the first index not started yet (a continued run). */
  next?: number;
  /** Items a run starts before it continues as new; `BATCH_ITEMS_PER_RUN` when absent. */
  itemsPerRun?: number;
};

/**
 * An item as its workflow starts it: its payment's workflow and input, as the single endpoint
 * would start it; or its decline, when a check the endpoint makes before any start refused it.
 */
export type BatchItemStart =
  | {
      index: number;
      kind: 'transfer';
      workflowId: string;
      input: TransferInput;
      walletIds: string[];
    }
  | {
      index: number;
      kind: 'cashout' | 'payout';
      workflowId: string;
      input: MoneyOutInput;
      walletIds: string[];
    }
  | { index: number; kind: 'declined'; declined: Declined };

/** An ended item, as the batch records it (src/db/batches.ts `recordBatchItemResults`). */
export type BatchItemEnd = {
  index: number;
  status: 'succeeded' | 'failed';
  code: string | null;
  detail: string | null;
};

/** An item's end from its payment's result: succeeded, or failed with the decline. */
export const itemEnded = (index: number, declined: Declined | null): BatchItemEnd =>
  declined
    ? { index, status: 'failed', code: declined.code, detail: declined.detail }
    : { index, status: 'succeeded', code: null, detail: null };

/** A payment's workflow that ended in no answer (terminated, say): its item failed. */
export function paymentDidNotEnd(error: unknown): Declined {
  const message = error instanceof Error ? error.message : String(error);
  return { status: 'declined', code: 'internal', detail: `The payment did not end: ${message}` };
}

/** A page of a transfer batch's items that one activity starts and waits for. */
export type BatchTransferPage = {
  batchId: string;
  applicationId: string;
  mode: Mode;
  items: Extract<BatchItemStart, { kind: 'transfer' }>[];
};

/** What a batch's workflow answers once its last item has ended. */
export type BatchEnded = { status: Exclude<BatchStatus, 'processing'> };

/** Cancels the items not started yet; answers once they are marked canceled. */
export const batchCancel = defineUpdate<void>('cancel');

/**
 * A money-out saga started by a batch tells it what its request would have answered (accepted,
 * or declined), so that the item ends then while the payment waits for its provider.
 */
export const batchItemAnswered =
  defineSignal<[{ transactionId: string; answer: MoneyOutOpened | Declined }]>('batchItemAnswered');
