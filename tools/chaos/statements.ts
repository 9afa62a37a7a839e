import { sql } from 'slonik';
import { z } from 'zod';
import { majorNumberToMinor } from '../../src/domain/money';
import type { DatabasePool } from '../../src/db/pool';
import type { ChaosClient } from './http';

const statementPage = z.object({
  opening_balance: z.number(),
  closing_balance: z.number(),
  total_credits: z.number(),
  total_debits: z.number(),
  total_pages: z.number(),
  entries: z.array(
    z.object({
      transaction_id: z.string().nullable(),
      created_at: z.string(),
      amount: z.number(),
      balance_after: z.number(),
    }),
  ),
});
const balanceAnswer = z.object({ balance: z.number() });

/**
 * Each wallet's statements and balances at instants, through the API, against its ledger: a
 * whole-life statement opens at 0, adds each entry and closes on the stored balance; the balance
 * at an entry's millisecond sums every entry up to that millisecond's end. Answers the violations.
 */
export async function checkStatements(options: {
  pool: DatabasePool;
  api: ChaosClient;
  wallets: readonly { id: string; balance: bigint }[];
}): Promise<string[]> {
  const { pool, api } = options;
  const violations: string[] = [];
  // Entries are signed (a debit is negative); the conversion takes magnitudes.
  const minor = (major: number): bigint => {
    const value = majorNumberToMinor(Math.abs(major));
    if (value === null) throw new Error(`${major} is no amount`);
    return major < 0 ? -value : value;
  };
  const to = new Date(Date.now() + 60 * 60 * 1000).toISOString();
  for (const wallet of options.wallets) {
    const fail = (message: string) => violations.push(`wallet ${wallet.id}: ${message}`);
    const entries: z.infer<typeof statementPage>['entries'] = [];
    let summary: z.infer<typeof statementPage> | undefined;
    for (let page = 1; summary === undefined || page <= summary.total_pages; page += 1) {
      const path = `/api/v1/wallets/${wallet.id}/statement?from=1970-01-01&to=${encodeURIComponent(to)}&per_page=100&page=${page}`;
      const reply = await api.get(path);
      if (reply.kind !== 'ok') {
        fail(`statement page ${page} answered ${JSON.stringify(reply)}`);
        break;
      }
      summary = statementPage.parse(reply.body);
      entries.push(...summary.entries);
      if (summary.total_pages === 0) break;
    }
    if (!summary) continue;
    if (minor(summary.opening_balance) !== 0n) {
      fail(`its whole-life statement opens at ${summary.opening_balance}, not 0`);
    }
    if (minor(summary.closing_balance) !== wallet.balance) {
      fail(
        `its statement closes at ${summary.closing_balance}, the ledger holds ${wallet.balance}`,
      );
    }
    let running = minor(summary.opening_balance);
    for (const entry of entries) {
      running += minor(entry.amount);
      if (minor(entry.balance_after) !== running) {
        fail(
          `entry of ${entry.transaction_id}: balance_after ${entry.balance_after}, the sum ${running}`,
        );
        break;
      }
    }
    if (running !== minor(summary.closing_balance)) {
      fail(
        `opening plus the entries is ${running}, the closing balance ${summary.closing_balance}`,
      );
    }
    const net = minor(summary.total_credits) - minor(summary.total_debits);
    if (net !== minor(summary.closing_balance) - minor(summary.opening_balance)) {
      fail(`credits less debits is ${net}, not closing less opening`);
    }
    // The first, the middle and the last entry's instants, to the millisecond.
    const picked = [entries[0], entries[entries.length >> 1], entries[entries.length - 1]];
    for (const entry of picked) {
      if (!entry) continue;
      const at = new Date(entry.created_at).toISOString();
      const reply = await api.get(
        `/api/v1/wallets/${wallet.id}/balance?at=${encodeURIComponent(at)}`,
      );
      if (reply.kind !== 'ok') {
        fail(`balance at ${at} answered ${JSON.stringify(reply)}`);
        continue;
      }
      const held = await pool.oneFirst(sql.type(z.object({ held: z.bigint() }))`
        SELECT coalesce(sum(amount), 0)::int8 AS held FROM ledger_entries
        WHERE account_id = ${wallet.id}
          AND date_trunc('milliseconds', created_at) <= ${at}::timestamptz`);
      const shown = minor(balanceAnswer.parse(reply.body).balance);
      if (shown !== held) fail(`balance at ${at}: the API says ${shown}, its entries ${held}`);
    }
  }
  return violations;
}
