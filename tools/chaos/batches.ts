import { z } from 'zod';
import { findMoneyOut } from '../../src/db/money-out';
import type { DatabasePool } from '../../src/db/pool';
import type { ChaosClient } from './http';
import { Wire } from './wire';
import { simulate, type History } from './workload';

/** How long the bulk payments acknowledged during the load may take to end once it stopped. */
export const BATCHES_END_MS = 90_000;

type Item = z.infer<typeof Wire.batchItems>['data'][number];

/** A batch's items as a client reads them: cursor pages by `starting_after`. */
async function itemsOf(api: ChaosClient, batchId: string): Promise<Item[] | null> {
  const items: Item[] = [];
  for (let after: number | null = null; ;) {
    const cursor = after === null ? '' : `&starting_after=${after}`;
    const page = await api.get(`/api/v1/batches/${batchId}/items?per_page=100${cursor}`);
    if (page.kind !== 'ok') return null;
    const { data, has_more: more } = Wire.batchItems.parse(page.body);
    items.push(...data);
    if (!more || data.length === 0) return items;
    after = data.at(-1)!.index;
  }
}

/**
 * Once the load has stopped: waits (bounded) for the acknowledged bulk payments to end, then
 * counts each item's payment as acknowledged, as its own request's answer would have, and has
 * the sandbox pay the cashouts among them still pending, as the provider would.
 */
export async function settleBatches(
  api: ChaosClient,
  pool: DatabasePool,
  history: History,
): Promise<void> {
  const deadline = Date.now() + BATCHES_END_MS;
  let running = [...history.batches.keys()];
  while (running.length && Date.now() < deadline) {
    const still: string[] = [];
    for (const id of running) {
      const read = await api.get(`/api/v1/batches/${id}`);
      if (read.kind !== 'ok' || Wire.batch.parse(read.body).status === 'processing') still.push(id);
    }
    running = still;
    if (running.length) await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  for (const [id, batch] of history.batches) {
    for (const item of (await itemsOf(api, id)) ?? []) {
      const paymentId = item.transaction_id;
      if (paymentId === null) continue;
      if (batch.kind === 'transfer') {
        history.acknowledged.set(paymentId, 'transfer');
        if (batch.atomic) history.atomicItems.add(paymentId);
        continue;
      }
      const record = await findMoneyOut(pool, paymentId);
      if (!record) continue;
      history.acknowledged.set(paymentId, 'cashout');
      history.moneyOut.set(paymentId, {
        wallet: record.row.wallet_id!,
        total: BigInt(record.meta.total),
        applicationFee: BigInt(record.meta.application_fee),
      });
      if (record.row.status === 'pending') {
        // Alternate, so that a short run sees both the provider's answers.
        const status = history.moneyOut.size % 4 === 0 ? 'failed' : 'successful';
        await simulate(api, history, paymentId, status);
      }
    }
  }
}
