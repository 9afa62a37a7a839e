/**
 * Row (9a)'s data, bulk-loaded by `generate_series` (docs/benchmarks.md "Row (9a)"): mobile-money
 * payments with provider references, and the provider's records as an imported settlement file's
 * rows, one in a hundred of each kind of disagreement, so that a run must find exactly those.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';

/** Payments one statement seeds. */
const CHUNK = 100_000;

/** What a run over the seeded records must count, by kind. */
export type ReconCountsExpected = {
  matched: number;
  missingInternal: number;
  missingExternal: number;
  amountMismatch: number;
  statusMismatch: number;
  duplicate: number;
};

export type ReconSeed = {
  importId: string;
  payments: number;
  records: number;
  /** The window `[from, to)` every payment and record is in. */
  from: string;
  to: string;
  expected: ReconCountsExpected;
};

/**
 * The counts of `payments` seeded payments (a whole number of hundreds): each hundredth one of
 * each kind; the one a hundred the provider never booked (a failed payment) is no exception.
 */
export function expectedReconCounts(payments: number): ReconCountsExpected {
  const each = payments / 100;
  return {
    matched: payments - 5 * each,
    missingInternal: each,
    missingExternal: each,
    amountMismatch: each,
    statusMismatch: each,
    duplicate: each,
  };
}

/**
 * One chunk of payments and of the file's rows: payment i's place in its hundred decides what
 * the file says of it (docs/benchmarks.md "Rows (9a) and (9b)").
 */
function chunkStatement(
  [start, end]: [number, number],
  s: {
    app: string;
    mode: string;
    importId: string;
    salt: string;
    from: string;
    spanS: number;
    payments: number;
  },
) {
  const slot = sql.fragment`(i % 100)`;
  return sql.unsafe`
    WITH x AS MATERIALIZED (
      SELECT i, ${slot} AS slot, ${s.salt} || '/' || i AS reference,
        CASE WHEN ${slot} = 3 OR ${slot} % 4 = 1 THEN 'mobile_money_cashout'
          ELSE 'mobile_money_deposit' END AS kind,
        CASE WHEN ${slot} IN (3, 5) OR ${slot} BETWEEN 90 AND 94 THEN 'failed'
          ELSE 'completed' END AS status,
        100 + (i::int8 * 7919) % 1000000 AS amount,
        ${s.from}::timestamptz + make_interval(secs => (i + 0.5) * ${s.spanS}::float8
          / ${s.payments}::float8) AS at
      FROM generate_series(${start}::int, ${end - 1}::int) AS i
    ), t AS (
      INSERT INTO transactions (id, application_id, mode, transaction_type, status, currency,
        amount, provider_reference, description, created_at, updated_at)
      SELECT gen_random_uuid(), ${s.app}, ${s.mode}, kind, status, 'SLE', amount, reference,
        'bench reconciliation', at, at
      FROM x
    )
    INSERT INTO recon_import_records (import_id, row_number, provider_reference, booked_at,
      amount, currency, fee, direction, status)
    -- The file's rows in the payments' order; a gap where one was not booked.
    SELECT ${s.importId}, 2 * x.i + c.n + 1,
      CASE WHEN x.slot = 0 THEN ${s.salt} || '/unknown/' || x.i ELSE x.reference END,
      x.at, x.amount + CASE WHEN x.slot = 2 THEN 1 ELSE 0 END, 'SLE', 0,
      CASE x.kind WHEN 'mobile_money_cashout' THEN 'out' ELSE 'in' END,
      CASE WHEN x.slot BETWEEN 90 AND 94 THEN 'failed' ELSE 'succeeded' END
    FROM x CROSS JOIN LATERAL generate_series(0, CASE WHEN x.slot = 4 THEN 1 ELSE 0 END) AS c (n)
    WHERE x.slot <> 5`;
}

/**
 * Seeds `payments` payments of the application's mode and their settlement file (an import of
 * as many records: the API takes at most 200,000 a file, row 9b's path, so a bigger one is
 * written here); answers the import and the counts a run over the window must find.
 */
export async function seedRecon(
  pool: DatabasePool,
  input: {
    applicationId: string;
    mode: 'test' | 'live';
    payments: number;
    progress?: (message: string) => void;
  },
): Promise<ReconSeed> {
  const { payments } = input;
  if (!Number.isInteger(payments) || payments <= 0 || payments % 100 !== 0) {
    throw new Error(`reconciliation payments ${payments}: a whole number of hundreds`);
  }
  const to = new Date(Date.now() - 60 * 60 * 1000);
  const spanS = 24 * 60 * 60;
  const from = new Date(to.getTime() - spanS * 1000);
  const importId = randomUUID();
  const salt = `recon-${importId.slice(0, 8)}`;
  // A connection of its own: no statement deadline, room to sort, and no triggers (each payment
  // would update its day's analytics row; the rollup is rebuilt once instead).
  await pool.connect(async (c) => {
    await c.query(sql.unsafe`SET statement_timeout = 0`);
    await c.query(sql.unsafe`SET work_mem = '256MB'`);
    await c.query(sql.unsafe`SET session_replication_role = replica`);
    try {
      await c.query(sql.unsafe`
        INSERT INTO recon_imports (id, application_id, mode, provider, sha256, rows)
        VALUES (${importId}, ${input.applicationId}, ${input.mode}, 'mobile_money',
          ${randomBytes(32).toString('hex')}, ${payments})`);
      for (let start = 0; start < payments; start += CHUNK) {
        const end = Math.min(payments, start + CHUNK);
        await c.query(
          chunkStatement([start, end], {
            app: input.applicationId,
            mode: input.mode,
            importId,
            salt,
            from: from.toISOString(),
            spanS,
            payments,
          }),
        );
        input.progress?.(`   ${end.toLocaleString('en')} of ${payments.toLocaleString('en')}`);
      }
      await c.query(sql.unsafe`SELECT analytics_daily_rebuild()`);
      await c.query(sql.unsafe`ANALYZE transactions`);
      await c.query(sql.unsafe`ANALYZE recon_import_records`);
    } finally {
      await c.query(sql.unsafe`RESET ALL`);
    }
  });
  // One a hundred never booked, one a hundred booked twice: as many records as payments.
  const records = payments;
  return {
    importId,
    payments,
    records,
    from: from.toISOString(),
    to: to.toISOString(),
    expected: expectedReconCounts(payments),
  };
}
