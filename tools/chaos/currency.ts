import { sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../../src/db/pool';
import type { ChaosClient } from './http';
import type { Random } from './random';
import { Wire } from './wire';
import { PATHS, recordDeposit, simulate, type History, type Wallets } from './workload';

/** What `npm run cli` came to: its exit status and what it printed. */
export type CliRun = { code: number | null; stdout: string; stderr: string };

/**
 * docs/cli.md, apps update --currency, under fire: a base-currency switch while the
 * wallets hold money changes nothing, even with a deposit right after; a tiny USD deposit is
 * refused (422) below a cent, else credited once paid. None may stay pending.
 */
export type CurrencyProbe = {
  /** One round: the switch attempt and a deposit, then a tiny USD deposit. */
  round: (random: Random, key: string) => Promise<void>;
  /** The violations seen by the rounds and in the database after the run. */
  check: (pool: DatabasePool) => Promise<string[]>;
};

export function currencyProbe(options: {
  bank: { id: string; api: ChaosClient; wallets: Wallets; history: History };
  usd: { id: string; api: ChaosClient; wallet: string };
  cli: (args: string[]) => Promise<CliRun>;
}): CurrencyProbe {
  const { bank, usd, cli } = options;
  const violations: string[] = [];
  const tiny = { accepted: new Set<string>() };
  let switches = 0;

  async function round(random: Random, key: string): Promise<void> {
    // The bank is SLE: a switch to USD is the change its funded wallets must refuse.
    const to = 'USD';
    const attempt = await cli(['apps', 'update', '--app', bank.id, '--currency', to]);
    switches += 1;
    // Status 1 is a run the faults broke (its database killed): it changed nothing either.
    if (attempt.code === 0) {
      violations.push(`the bank's currency switched to ${to} while its wallets held money`);
    }
    const wallet = random.pick(bank.wallets.all);
    const deposit = await bank.api.post(
      PATHS.deposit,
      { wallet_id: wallet, amount: random.int(100, 50_000) },
      `${key}-deposit`,
    );
    if (deposit.kind === 'ok') {
      const id = recordDeposit(bank.history, wallet, deposit.body);
      await simulate(bank.api, bank.history, id, 'successful');
    } else if (deposit.kind === 'refused') {
      violations.push(`a deposit after a switch attempt: ${JSON.stringify(deposit.body)}`);
    }

    const amount = random.int(1, 40);
    const small = await usd.api.post(
      PATHS.deposit,
      { wallet_id: usd.wallet, amount },
      `${key}-tiny`,
    );
    if (small.kind === 'ok') {
      const id = Wire.deposit.parse(small.body).transaction_id;
      tiny.accepted.add(id);
      await simulate(usd.api, bank.history, id, 'successful');
    } else if (small.kind === 'refused') {
      const detail = Wire.refusal.safeParse(small.body).data?.detail;
      if (small.status !== 422 || typeof detail !== 'string' || !detail.startsWith('amount')) {
        violations.push(`a tiny USD deposit of ${amount} SLE cents: ${JSON.stringify(small)}`);
      }
    }
  }

  async function check(pool: DatabasePool): Promise<string[]> {
    const found = [...violations];
    const rows = await pool.any(
      sql.type(
        z.object({ id: z.string(), status: z.string(), amount: z.bigint() }),
      )`SELECT id, status, amount FROM transactions WHERE application_id = ${usd.id}`,
    );
    let credited = 0n;
    for (const row of rows) {
      if (!tiny.accepted.has(row.id)) continue;
      if (row.status === 'completed') credited += row.amount;
      else if (row.status === 'pending' && bank.history.decided.has(row.id)) {
        found.push(`tiny USD deposit ${row.id} stuck pending once paid`);
      }
      if (row.status === 'completed' && row.amount <= 0n) {
        found.push(`tiny USD deposit ${row.id} credited ${row.amount}`);
      }
    }
    const balance = await pool.oneFirst(sql.type(z.object({ balance: z.bigint() }))`
      SELECT balance FROM ledger_accounts WHERE id = ${usd.wallet}`);
    if (balance !== credited) {
      found.push(`the USD wallet holds ${balance}, its completed tiny deposits ${credited}`);
    }
    if (switches === 0) found.push('no currency switch was attempted');
    const base = await pool.oneFirst(sql.type(z.object({ base_currency: z.string() }))`
      SELECT base_currency FROM applications WHERE id = ${bank.id}`);
    if (base !== 'SLE') found.push(`the bank's base currency became ${base}`);
    return found;
  }

  return { round, check };
}
