import { Context } from '@temporalio/activity';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  type Client,
} from '@temporalio/client';
import type { Config } from '../config';
import {
  allBatchItems,
  batchPacedBy,
  cancelPendingItems,
  endBatch as endBatchRow,
  getBatch,
  lockBatch,
  pendingBatchItems,
  recordBatchItemResults,
  type BatchRow,
  type PendingBatchItem,
} from '../db/batches';
import { postLedgerTransaction } from '../db/ledger';
import { PAYOUTS_NOT_ENABLED, canReceivePayouts, findPayoutAccount } from '../db/payout-accounts';
import type { DatabasePool, DatabaseTransactionConnection } from '../db/pool';
import { takeRateLimit } from '../db/rate-limit';
import { transactionsInsertPart, writtenTransaction } from '../db/transactions';
import { eventsInsertPart } from '../db/transaction-events';
import { lockTransferWallets } from '../db/transfers';
import { walletStates } from '../db/wallets';
import { findApplication } from '../db/applications';
import { BATCH_ITEM_CATEGORY, BATCH_ITEM_TYPE } from '../domain/batches';
import type { Currency } from '../domain/money';
import {
  decide,
  decideOverWallets,
  moneyOutReserveRules,
  transferRules,
  type Decision,
} from '../domain/money-rules';
import { categoryLimit } from '../domain/types';
import {
  itemEnded,
  paymentDidNotEnd,
  type BatchEnded,
  type BatchItemEnd,
  type BatchItemStart,
  type BatchTransferPage,
} from '../workflows/batch-shared';
import { workflowIds } from '../workflows/ids';
import { whileBeating } from './heartbeat';
import {
  moneyOutInput,
  transferInput,
  type MoneyOutFields,
  type TransferFields,
} from '../workflows/payment-inputs';
import {
  paymentSearchAttributes,
  type Declined,
  type TransferInput,
  type TransferResult,
} from '../workflows/shared';
import {
  LOCAL_SETTLEMENT_MS,
  listenForSettlement,
  transferAnsweredLocally,
} from '../temporal/settlements';
import { transferStep } from './transfer';

/** The detail of an atomic batch's item that passed its checks, not made for another's decline. */
export const NOT_MADE_IN_ATOMIC_BATCH =
  'Not made: another item of this atomic batch was declined, so none was';

type Owner = { applicationId: string; mode: 'test' | 'live' };

const ownerOf = (b: BatchRow): Owner => ({ applicationId: b.application_id, mode: b.mode });

const declinedOf = (decision: Decision): Declined | null =>
  decision.status === 'declined'
    ? { status: 'declined', code: decision.code, detail: decision.detail ?? null }
    : null;

/**
 * The bulk payments' steps (src/workflows/batch.ts, docs/api.md, Bulk payments): each item starts as
 * its single endpoint would start it, and its end is recorded here, a page of items at a time.
 */
export function createBatchActivities(deps: { pool: DatabasePool; config: Config }) {
  const { pool } = deps;

  /**
   * The early answer of the single endpoints (src/api/access.ts), asked of a page of items over the
   * wallets' states read once: an item its endpoint would refuse before any start is declined so.
   */
  async function earlyDeclines(
    batch: BatchRow,
    items: readonly PendingBatchItem[],
  ): Promise<Map<number, Declined>> {
    const owner = ownerOf(batch);
    const walletsOf = (item: PendingBatchItem): string[] => {
      const body = item.body as Partial<TransferFields & MoneyOutFields>;
      return batch.kind === 'transfer' ? [body.fromWalletId!, body.toWalletId!] : [body.walletId!];
    };
    const states = await walletStates(pool, [...new Set(items.flatMap(walletsOf))]);
    const declines = new Map<number, Declined>();
    for (const item of items) {
      let decision: Decision;
      if (batch.kind === 'transfer') {
        const body = item.body as TransferFields;
        decision = decideOverWallets(
          transferRules,
          { from: body.fromWalletId, to: body.toWalletId },
          states,
          {
            params: {
              ...owner,
              fromWalletId: body.fromWalletId,
              toWalletId: body.toWalletId,
              amount: BigInt(body.amount),
            },
          },
        );
      } else {
        const body = item.body as MoneyOutFields;
        decision = decideOverWallets(moneyOutReserveRules, { wallet: body.walletId }, states, {
          params: owner,
        });
      }
      const declined = declinedOf(decision);
      if (declined) declines.set(item.item_index, declined);
    }
    return declines;
  }

  /**
   * A page of the batch's pending items from index `from`, each as its workflow starts it: the
   * payment's workflow id and input as its single endpoint derives them, or its early decline.
   */
  async function loadBatchItems(input: {
    batchId: string;
    from: number;
    limit: number;
  }): Promise<BatchItemStart[]> {
    const batch = await getBatch(pool, input.batchId);
    const items = await pendingBatchItems(pool, batch.id, input.from, input.limit);
    const declines = await earlyDeclines(batch, items);
    const owner = ownerOf(batch);
    const starts: BatchItemStart[] = [];
    for (const item of items) {
      const index = item.item_index;
      const id = item.transaction_id;
      const declined = declines.get(index);
      if (declined) {
        starts.push({ index, kind: 'declined', declined });
      } else if (batch.kind === 'transfer') {
        const fields = item.body as TransferFields;
        starts.push({
          index,
          kind: 'transfer',
          workflowId: workflowIds.transfer(id),
          input: transferInput(owner, id, fields),
          walletIds: [fields.fromWalletId, fields.toWalletId],
        });
      } else if (batch.kind === 'mobile_money_cashout') {
        const fields = item.body as MoneyOutFields;
        starts.push({
          index,
          kind: 'cashout',
          workflowId: workflowIds.cashout(id),
          input: moneyOutInput('cashout', owner, id, fields),
          walletIds: [fields.walletId],
        });
      } else {
        const fields = item.body as MoneyOutFields;
        const account = await findPayoutAccount(pool, owner, fields.walletId);
        if (!canReceivePayouts(account)) {
          starts.push({
            index,
            kind: 'declined',
            declined: { status: 'declined', code: 'invalid_request', detail: PAYOUTS_NOT_ENABLED },
          });
          continue;
        }
        starts.push({
          index,
          kind: 'payout',
          workflowId: workflowIds.payout(id),
          input: moneyOutInput('payout', owner, id, {
            ...fields,
            destination: { account_id: account.account_id },
          }),
          walletIds: [fields.walletId],
        });
      }
    }
    return starts;
  }

  /**
   * Counts up to `want` items in their kind's rate-limit category, under the limits of whoever
   * sent the batch (its credential, or its dashboard session's subject): answers how many may
   * start now, and when to ask again for the rest.
   */
  async function takeBatchItemSlots(input: {
    batchId: string;
    want: number;
  }): Promise<{ taken: number; retryAfterMs: number }> {
    const batch = await getBatch(pool, input.batchId);
    const pacedBy = batchPacedBy(batch);
    // The credential is gone (deleted with its application's keys): nothing left to count against.
    if (pacedBy === null) return { taken: input.want, retryAfterMs: 0 };
    const application = await findApplication(pool, batch.application_id);
    const category = BATCH_ITEM_CATEGORY[batch.kind];
    const limit = categoryLimit(application?.rate_limits ?? {}, category);
    const { taken, retryAfterSeconds } = await takeRateLimit(
      pool,
      pacedBy,
      category,
      input.want,
      limit,
    );
    return { taken, retryAfterMs: retryAfterSeconds * 1000 };
  }

  async function recordBatchItems(input: {
    batchId: string;
    results: BatchItemEnd[];
  }): Promise<void> {
    await recordBatchItemResults(pool, input.batchId, input.results);
  }

  async function cancelBatchItems(input: { batchId: string; from: number }): Promise<number> {
    return cancelPendingItems(pool, input.batchId, input.from);
  }

  /** Ends the batch once its last item has: its status, and `batch.completed`, once. */
  async function endBatch(input: { batchId: string }): Promise<BatchEnded> {
    const ended = await pool.transaction((trx) => endBatchRow(trx, input.batchId));
    if (ended.status === 'processing') throw new Error(`batch ${input.batchId} did not end`);
    return { status: ended.status };
  }

  /**
   * An atomic batch of transfers, in one database transaction: every wallet locked in the order
   * single transfers lock in, the transfer's rules asked of each item in order over the balances
   * the items before it leave, then all of it in one ledger transaction, or nothing.
   */
  async function runAtomicBatch(input: { batchId: string }): Promise<BatchEnded> {
    return pool.transaction(async (trx) => {
      const batch = await lockBatch(trx, input.batchId);
      if (batch.status !== 'processing') return { status: batch.status };
      const items = await allBatchItems(trx, batch.id);
      const { outcomes, at } = await decideAtomically(trx, batch, items);
      const anyDeclined = outcomes.some((o) => o.declined !== null);
      if (anyDeclined) {
        await recordBatchItemResults(
          trx,
          batch.id,
          outcomes.map(({ index, declined }) => ({
            index,
            status: 'failed',
            code: declined?.code ?? 'invalid_request',
            detail: declined ? declined.detail : NOT_MADE_IN_ATOMIC_BATCH,
          })),
        );
      } else {
        // No item declined: each found both its wallets, so they were locked and `at` read.
        await writeAtomicTransfers(trx, batch, items, outcomes, at!);
      }
      const ended = await endBatchRow(trx, batch.id);
      if (ended.status === 'processing') throw new Error(`batch ${batch.id} did not end`);
      return { status: ended.status };
    });
  }

  return {
    loadBatchItems,
    runBatchTransfers,
    takeBatchItemSlots,
    recordBatchItems,
    cancelBatchItems,
    endBatch,
    runAtomicBatch,
  };
}

/** `transferWorkflow`, started by name: its module's types lead back here. */
type TransferWorkflow = (input: TransferInput) => Promise<TransferResult>;

/**
 * A page of a transfer batch's items, each the single endpoint's workflow under its id, started
 * eagerly on this worker when it has room; answers their ends. A retried page attaches to the runs
 * it started (`USE_EXISTING`) or reads those that ended (`REJECT_DUPLICATE`): none paid twice.
 */
export async function runBatchTransfers(page: BatchTransferPage): Promise<BatchItemEnd[]> {
  const context = Context.current();
  return whileBeating(async () => {
    const settled = await Promise.allSettled(
      page.items.map(async (item) => {
        try {
          const result = await runTransfer(context.client, context.info.taskQueue, page, item);
          return itemEnded(item.index, result.status === 'declined' ? result : null);
        } catch (error) {
          // The workflow ended without an answer (terminated, say): its item failed. Anything
          // else (Temporal unreachable, this worker stopping) retries the page.
          if (error instanceof WorkflowFailedError) {
            return itemEnded(item.index, paymentDidNotEnd(error.cause ?? error));
          }
          throw error;
        }
      }),
    );
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<BatchItemEnd>).value);
  });
}

async function runTransfer(
  client: Client,
  taskQueue: string,
  page: BatchTransferPage,
  item: BatchTransferPage['items'][number],
): Promise<TransferResult> {
  const { workflowId } = item;
  // Listening before the start, so that a settlement that comes first is not missed.
  const settlement = listenForSettlement(workflowId);
  try {
    let runId: string | undefined;
    try {
      const handle = await client.workflow.start<TransferWorkflow>('transferWorkflow', {
        workflowId,
        taskQueue,
        args: [item.input],
        typedSearchAttributes: paymentSearchAttributes(
          page,
          BATCH_ITEM_TYPE.transfer,
          item.walletIds,
        ),
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        requestEagerStart: true,
      });
      runId = handle.firstExecutionRunId;
      if (handle.eagerlyStarted) {
        const local = (await settlement.within(LOCAL_SETTLEMENT_MS)) as TransferResult | undefined;
        if (local !== undefined && transferAnsweredLocally(local)) return local;
      }
    } catch (error) {
      // It ran and ended already (a retried page): its recorded result is the item's.
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    return await client.workflow.getHandle<TransferWorkflow>(workflowId, runId).result();
  } finally {
    settlement.stop();
  }
}

type AtomicOutcome = { index: number; declined: Declined | null; currency: string | null };

/**
 * Each item's decline, in order, the balances moved by the items before it that passed; and the
 * database transaction's `now()`, which the payment rows are written with.
 */
async function decideAtomically(
  trx: DatabaseTransactionConnection,
  batch: BatchRow,
  items: readonly PendingBatchItem[],
): Promise<{ outcomes: AtomicOutcome[]; at: string | null }> {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  const ids = [
    ...new Set(
      items.flatMap((i) => {
        const f = i.body as TransferFields;
        return [f.fromWalletId, f.toWalletId];
      }),
    ),
  ].filter((id) => uuid.test(id));
  // Every wallet of the batch in one statement, locked in the order single transfers lock in.
  const rows = await lockTransferWallets(trx, items[0]!.transaction_id, ids);
  const wallets = new Map(rows.map((r) => [r.id, { ...r }]));
  const outcomes = items.map((item) => {
    const f = item.body as TransferFields;
    const amount = BigInt(f.amount);
    const from = wallets.get(f.fromWalletId) ?? null;
    const to = wallets.get(f.toWalletId) ?? null;
    const declined = declinedOf(
      decide(transferRules, {
        subjects: { from, to },
        params: {
          applicationId: batch.application_id,
          mode: batch.mode,
          fromWalletId: f.fromWalletId,
          toWalletId: f.toWalletId,
          amount,
        },
      }),
    );
    if (!declined && from && to) {
      from.balance -= amount;
      to.balance += amount;
    }
    return { index: item.item_index, declined, currency: from?.currency ?? null };
  });
  return { outcomes, at: rows[0]?.at ?? null };
}

/**
 * Every item's payment row and `transfer.completed`, each as a single transfer writes it
 * (src/activities/transfer.ts `transferStep`), and one ledger transaction for them all: one
 * statement, however many items.
 */
async function writeAtomicTransfers(
  trx: DatabaseTransactionConnection,
  batch: BatchRow,
  items: readonly PendingBatchItem[],
  outcomes: readonly AtomicOutcome[],
  at: string,
): Promise<void> {
  const owner = ownerOf(batch);
  const steps = items.map((item, i) => {
    const step = transferStep(
      transferInput(owner, item.transaction_id, item.body as TransferFields),
      outcomes[i]!.currency as Currency,
      at,
    );
    // The batch's workflow writes it: no transfer workflow of its own ever runs.
    return {
      ...step,
      transaction: { ...step.transaction, workflowId: workflowIds.batch(batch.id) },
    };
  });
  const events = steps.map(({ transaction, event }) => ({
    applicationId: transaction.applicationId,
    mode: transaction.mode,
    type: event.type,
    transactionId: transaction.id,
    data: event.data(writtenTransaction(transaction, at)),
  }));
  await postLedgerTransaction(
    trx,
    {
      applicationId: batch.application_id,
      mode: batch.mode,
      transactionId: null,
      kind: 'transfer',
      description: `Atomic batch ${batch.id}`,
      metadata: { batch_id: batch.id },
      postings: steps.flatMap((step) => step.ledger.postings),
    },
    [transactionsInsertPart(steps.map((step) => step.transaction)), eventsInsertPart(events)],
  );
  await recordBatchItemResults(
    trx,
    batch.id,
    items.map((item) => ({
      index: item.item_index,
      status: 'succeeded',
      code: null,
      detail: null,
    })),
  );
}
