import { sql, type DatabasePool } from 'slonik';

/**
 * For the benchmark only: payments with balanced ledger entries, bulk-loaded with triggers off.
 * That is safe because each pair moves the same amount there and back, so every balance is still
 * the sum of its entries; the trigger's `analytics_daily` rollup is rebuilt afterwards.
 */
/** Rows per statement, each well within the pool's statement timeout. */
const SLICE = 50_000;

export async function seedPayments(
  pool: DatabasePool,
  input: {
    applicationId: string;
    mode: 'test' | 'live';
    currency: 'USD' | 'SLE';
    wallets: readonly string[];
    count: number;
    days: number;
  },
): Promise<void> {
  const wallets = sql.array(input.wallets, 'uuid');
  const pairs = Math.floor(input.wallets.length / 2);
  await pool.connect(async (connection) => {
    await connection.query(sql.unsafe`
      CREATE TEMPORARY TABLE seeded ON COMMIT PRESERVE ROWS AS
      SELECT i, gen_random_uuid() AS payment_id, gen_random_uuid() AS ledger_id,
        (100 + (i / 2) % 10000)::bigint AS amount,
        1 + 2 * ((i / 2) % ${pairs}) AS a,
        now() - make_interval(days => (i % ${input.days})::int, secs => (i % 86400)::int) AS at,
        CASE WHEN (i / 2) % 10 = 9 THEN 'failed' ELSE 'completed' END AS status
      FROM generate_series(0, ${input.count - 1}) AS i`);
    await connection.query(sql.unsafe`CREATE INDEX ON seeded (i)`);
    const slices = Array.from({ length: Math.ceil(input.count / SLICE) }, (_, k) => {
      const from = k * SLICE;
      return sql.fragment`i >= ${from} AND i < ${from + SLICE}`;
    });
    await connection.query(sql.unsafe`SET session_replication_role = replica`);
    try {
      for (const slice of slices) {
        await connection.query(sql.unsafe`
      INSERT INTO transactions (id, application_id, mode, transaction_type, status, currency,
        amount, wallet_id, recipient_wallet_id, description, created_at, updated_at)
      SELECT payment_id, ${input.applicationId}, ${input.mode}, 'transfer', status,
        ${input.currency}, amount,
        CASE WHEN i % 2 = 0 THEN (${wallets}::uuid[])[a] ELSE (${wallets}::uuid[])[a + 1] END,
        CASE WHEN i % 2 = 0 THEN (${wallets}::uuid[])[a + 1] ELSE (${wallets}::uuid[])[a] END, 'bench', at, at
      FROM seeded WHERE ${slice}`);
      }
      for (const slice of slices) {
        await connection.query(sql.unsafe`
        INSERT INTO ledger_transactions (id, application_id, mode, transaction_id, kind,
          description, created_at)
        SELECT ledger_id, ${input.applicationId}, ${input.mode}, payment_id, 'transfer', 'bench', at
        FROM seeded WHERE status = 'completed' AND ${slice}`);
        await connection.query(sql.unsafe`
        INSERT INTO ledger_entries (ledger_transaction_id, account_id, currency, amount, created_at)
        SELECT ledger_id, CASE WHEN i % 2 = 0 THEN (${wallets}::uuid[])[a] ELSE (${wallets}::uuid[])[a + 1] END, ${input.currency},
          -amount, at FROM seeded WHERE status = 'completed' AND ${slice}
        UNION ALL
        SELECT ledger_id, CASE WHEN i % 2 = 0 THEN (${wallets}::uuid[])[a + 1] ELSE (${wallets}::uuid[])[a] END, ${input.currency},
          amount, at FROM seeded WHERE status = 'completed' AND ${slice}`);
      }
    } finally {
      await connection.query(sql.unsafe`SET session_replication_role = DEFAULT`);
      await connection.query(sql.unsafe`DROP TABLE seeded`);
    }
    await connection.query(sql.unsafe`SELECT analytics_daily_rebuild()`);
    await connection.query(sql.unsafe`ANALYZE`);
  });
}
