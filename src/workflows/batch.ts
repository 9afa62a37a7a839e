import {
  ParentClosePolicy,
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  executeChild,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  startChild,
} from '@temporalio/workflow';
import type { Activities } from './activities-types';
import {
  BATCH_ITEMS_PER_RUN,
  batchCancel,
  batchItemAnswered,
  itemEnded as ended,
  paymentDidNotEnd as unexpected,
  type BatchEnded,
  type BatchInput,
  type BatchItemEnd,
  type BatchItemStart,
} from './batch-shared';
import { cardPayoutWorkflow } from './card-payout';
import { mobileMoneyCashoutWorkflow } from './cashout';
import type { MoneyOutOpened } from './money-out-shared';
import { activityPresets } from './retry';
import { paymentSearchAttributes, type Declined } from './shared';
import { transferWorkflow } from './transfer';
import { BATCH_ITEM_TYPE } from '../domain/batches';

/** The batch's own steps are short database statements: local, one marker each in the history. */
const steps = proxyLocalActivities<Activities>(activityPresets.ledger);

/** An atomic batch writes up to a thousand payments in its one database transaction. */
const atomicStep = proxyLocalActivities<Activities>({
  ...activityPresets.ledger,
  startToCloseTimeout: '2 minutes',
});

/** A page of transfers: started and waited for by one activity, heartbeating. */
const pages = proxyActivities<Activities>(activityPresets.batchPage);

/**
 * How many pages of transfers run at once, the window split between them: one page's slowest
 * items overlap another's.
 */
const PAGES_IN_FLIGHT = 2;

/** How many items one read of the batch's pending items brings. */
const ITEMS_A_PAGE = 100;

/** The longest an ended item waits for its write while fewer than a page have ended. */
const ENDS_WAIT = '1 second';

/** How many ended items one write records, at most; a write waits for this many while more run. */
const ENDS_A_WRITE = 100;

/**
 * A bulk payment, `batch-<id>`: each item its single endpoint's payment (transfers a page an
 * activity, a money-out saga a child), a window at a time, paced by its rate limit; continued as
 * new every `itemsPerRun` items; an atomic batch one step (docs/architecture.md, Bulk payments).
 */
export async function batchWorkflow(input: BatchInput): Promise<BatchEnded> {
  const { batchId } = input;
  let canceled = false;
  /** No item will start any more in this workflow: a cancel has nothing left to do. */
  let closed = false;
  setHandler(batchCancel, async () => {
    canceled = true;
    await condition(() => closed);
  });
  if (input.atomic) {
    const done = await atomicStep.runAtomicBatch({ batchId });
    closed = true;
    return done;
  }

  /** A money-out item's saga answers by signal (`batchItemAnswered`), by transaction id. */
  const answers = new Map<string, (answer: MoneyOutOpened | Declined) => void>();
  setHandler(batchItemAnswered, ({ transactionId, answer }) => {
    answers.get(transactionId)?.(answer);
    answers.delete(transactionId);
  });

  async function run(item: BatchItemStart): Promise<BatchItemEnd> {
    if (item.kind === 'declined') return ended(item.index, item.declined);
    const searchAttributes = paymentSearchAttributes(
      input,
      BATCH_ITEM_TYPE[input.kind],
      item.walletIds,
    );
    if (item.kind === 'transfer') {
      const result = await executeChild(transferWorkflow, {
        workflowId: item.workflowId,
        args: [item.input],
        typedSearchAttributes: searchAttributes,
      });
      return ended(item.index, result.status === 'declined' ? result : null);
    }
    const answered = new Promise<MoneyOutOpened | Declined>((resolve) => {
      answers.set(item.input.transactionId, resolve);
    });
    // The saga outlives its item: it waits for its provider after answering.
    await startChild(item.kind === 'cashout' ? mobileMoneyCashoutWorkflow : cardPayoutWorkflow, {
      workflowId: item.workflowId,
      args: [item.input],
      typedSearchAttributes: searchAttributes,
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
    const answer = await answered;
    return ended(item.index, answer.status === 'declined' ? answer : null);
  }

  const ends: BatchItemEnd[] = [];
  let inFlight = 0;
  let starting = true;
  /** Writes the ends a page at a time while items run, and what is left once none does. */
  async function writeEnds(): Promise<void> {
    // Batches recorded before waited for a whole page; their histories replay that way.
    const timely = patched('batch-ends-written-timely');
    const over = () => !starting && inFlight === 0;
    for (;;) {
      if (timely) {
        await condition(() => ends.length > 0 || over());
        if (ends.length === 0) return;
        // A page of ends, or those of the last moment: the counts follow the payments closely.
        await condition(() => ends.length >= ENDS_A_WRITE || over(), ENDS_WAIT);
      } else {
        await condition(() => ends.length >= ENDS_A_WRITE || over());
        if (ends.length === 0) return;
      }
      await steps.recordBatchItems({ batchId, results: ends.splice(0, ENDS_A_WRITE) });
    }
  }
  const writing = writeEnds();

  const perRun = input.itemsPerRun ?? BATCH_ITEMS_PER_RUN;
  let next = input.next ?? 0;
  let startedHere = 0;
  let slots = 0;
  // Transfer batches recorded before pages started each item as a child; they replay so.
  const paged = input.kind === 'transfer' && patched('batch-transfers-in-pages');
  const pageSize = Math.max(1, Math.ceil(input.window / PAGES_IN_FLIGHT));

  /**
   * A page's transfers, started and waited for by one activity (not a child each: fewer tasks of
   * this workflow, and each started eagerly on the worker); its ends come back together.
   */
  function runPage(items: BatchItemStart[]): void {
    const transfers = items.filter((i) => i.kind === 'transfer');
    for (const item of items)
      if (item.kind === 'declined') ends.push(ended(item.index, item.declined));
    if (transfers.length === 0) return;
    inFlight += transfers.length;
    const page = {
      batchId,
      applicationId: input.applicationId,
      mode: input.mode,
      items: transfers,
    };
    void pages
      .runBatchTransfers(page)
      .catch((error: unknown) => transfers.map((t) => ended(t.index, unexpected(error))))
      .then((pageEnds) => {
        ends.push(...pageEnds);
        inFlight -= transfers.length;
      });
  }

  starting: while (next < input.total && startedHere < perRun && !canceled) {
    const page = await steps.loadBatchItems({
      batchId,
      from: next,
      limit: Math.min(ITEMS_A_PAGE, perRun - startedHere),
    });
    if (page.length === 0) {
      next = input.total;
      break;
    }
    if (paged) {
      for (let i = 0; i < page.length;) {
        await condition(() => canceled || inFlight < input.window);
        while (slots === 0 && !canceled) {
          const want = Math.min(input.window, page.length - i);
          const granted = await steps.takeBatchItemSlots({ batchId, want });
          slots = granted.taken;
          if (slots === 0) await condition(() => canceled, granted.retryAfterMs);
        }
        if (canceled) break starting;
        const taken = Math.min(pageSize, input.window - inFlight, slots, page.length - i);
        const items = page.slice(i, i + taken);
        i += taken;
        slots -= taken;
        startedHere += taken;
        next = items.at(-1)!.index + 1;
        runPage(items);
      }
      continue;
    }
    for (const [i, item] of page.entries()) {
      await condition(() => canceled || inFlight < input.window);
      // Each item counts in its kind's rate limit as it starts; at the limit the batch waits.
      while (slots === 0 && !canceled) {
        const want = Math.min(input.window, page.length - i);
        const granted = await steps.takeBatchItemSlots({ batchId, want });
        slots = granted.taken;
        if (slots === 0) await condition(() => canceled, granted.retryAfterMs);
      }
      if (canceled) break starting;
      slots -= 1;
      inFlight += 1;
      startedHere += 1;
      next = item.index + 1;
      void run(item)
        .catch((error: unknown) => ended(item.index, unexpected(error)))
        .then((end) => {
          ends.push(end);
          inFlight -= 1;
        });
    }
  }
  starting = false;
  await writing;
  // The run drains its window first: a new run cannot wait on the children of this one.
  if (next < input.total) {
    await condition(() => canceled || allHandlersFinished());
    if (!canceled) await continueAsNew<typeof batchWorkflow>({ ...input, next });
    await steps.cancelBatchItems({ batchId, from: next });
  }
  closed = true;
  return steps.endBatch({ batchId });
}
