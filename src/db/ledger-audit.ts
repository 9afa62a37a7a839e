import { sql, type DatabasePool, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';

/**
 * The ledger invariant, as a list of problems (empty when the books are right): each balance is the
 * sum of its entries, each ledger transaction and the whole ledger sum to zero per currency, and no
 * user wallet is negative. An operator can run the same queries.
 */
export async function ledgerInvariantProblems(pool: DatabasePool): Promise<string[]> {
  const checks: [string, FragmentSqlToken][] = [
    [
      'accounts whose stored balance differs from the sum of their entries',
      sql.fragment`
        SELECT a.id FROM ledger_accounts a LEFT JOIN ledger_entries e ON e.account_id = a.id
        GROUP BY a.id HAVING a.balance <> coalesce(sum(e.amount), 0)`,
    ],
    [
      'unbalanced ledger transactions',
      sql.fragment`
        SELECT ledger_transaction_id FROM ledger_entries
        GROUP BY ledger_transaction_id, currency HAVING sum(amount) <> 0`,
    ],
    [
      'currencies whose entries do not sum to zero',
      sql.fragment`SELECT currency FROM ledger_entries GROUP BY currency HAVING sum(amount) <> 0`,
    ],
    [
      'negative user wallets',
      sql.fragment`SELECT id FROM ledger_accounts WHERE kind = 'user_wallet' AND balance < 0`,
    ],
  ];
  const problems: string[] = [];
  for (const [what, query] of checks) {
    const rows = await pool.any(sql.type(z.object({ id: z.unknown() }))`
      SELECT to_jsonb(x) AS id FROM (${query}) x LIMIT 20`);
    if (rows.length) problems.push(`${what}: ${JSON.stringify(rows.map((r) => r.id))}`);
  }
  return problems;
}
