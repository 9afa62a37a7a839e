/**
 * Row (8)'s data, bulk-loaded by `generate_series` (the mix: docs/benchmarks.md "Row (8)"). The
 * big tables' secondary indexes are built again afterwards from their own definitions, so that the
 * migrations' indexes are what is measured; stored balances move once, by the seeded entries.
 */
import { createHash } from 'node:crypto';
import { sql, type DatabasePool, type DatabasePoolConnection } from 'slonik';
import { z } from 'zod';
import { systemAccountId } from '../../src/db/ledger';

/** Payments one statement seeds: a few seconds each. */
const CHUNK = 250_000;
/** Chunks seeded side by side, each on a connection of its own (the machine's cores). */
const PARALLEL = 2;
/** Each wallet's opening deposit (minor units): more than its payments ever take out. */
const OPENING = 10n ** 13n;

/** The tables the bulk load writes; their secondary indexes are built again afterwards. */
const BULK_TABLES = ['transactions', 'ledger_transactions', 'ledger_entries'];

export type SearchSeed = {
  payments: number;
  wallets: number;
  /** Wallets 1 to `busy` are the busy ones. */
  busy: number;
  /** The seeded payments' first and last instants. */
  from: Date;
  to: Date;
  /** Wallet k's id, k from 1 to `wallets`. */
  walletId: (k: number) => string;
  /** Seconds each phase took, in order. */
  seconds: [string, number][];
};

/** How many of `wallets` are busy: a tenth of a percent, at least one. */
export const busyWallets = (wallets: number) => Math.max(1, Math.floor(wallets / 1000));

/** The `[start, end)` bounds of `count` rows from 0, `size` at a time. */
export function chunks(count: number, size: number): [number, number][] {
  const out: [number, number][] = [];
  for (let start = 0; start < count; start += size) {
    out.push([start, Math.min(count, start + size)]);
  }
  return out;
}

/** The uuid Postgres's `md5(text)::uuid` makes of `text`. */
export function md5Uuid(text: string): string {
  const h = createHash('md5').update(text).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

type Scope = {
  app: string;
  mode: 'test' | 'live';
  currency: 'USD' | 'SLE';
  salt: string;
  payments: number;
  wallets: number;
  busy: number;
  from: Date;
  spanS: number;
  accounts: { mobile: string; card: string; payouts: string };
};

/** A statement of text read from the catalog (an index's own definition). */
export function raw(text: string) {
  const strings = Object.assign([text], {
    raw: Object.freeze([text]),
  }) as unknown as TemplateStringsArray;
  return sql.unsafe(strings);
}

/**
 * One chunk's payments, their ledger transactions and entries, and its balance moves. Only the
 * completed have a ledger: a reversed cashout was reserved and given back, shown as neither.
 */
function chunkStatement([start, end]: [number, number], s: Scope) {
  return sql.unsafe`
    WITH x AS (
      SELECT i, random() AS r1, random() AS r2, random() AS r3, random() AS r4, random() AS r5,
        random() AS r6, random() AS r7, random() AS r8
      FROM generate_series(${start}::int, ${end - 1}::int) AS i
    ), y AS (
      SELECT i, r7, r8,
        CASE WHEN i < ${s.wallets} THEN 'mobile_money_deposit'
          WHEN r1 < 0.45 THEN 'transfer' WHEN r1 < 0.75 THEN 'mobile_money_deposit'
          WHEN r1 < 0.90 THEN 'card_deposit' ELSE 'mobile_money_cashout' END AS kind,
        CASE WHEN i < ${s.wallets} OR r2 < 0.92 THEN 'completed'
          WHEN r1 >= 0.90 AND r2 > 0.99 THEN 'reversed' ELSE 'failed' END AS status,
        CASE WHEN i < ${s.wallets} THEN i + 1
          WHEN r3 < 0.2 THEN 1 + floor(r4 * ${s.busy})::int
          ELSE 1 + floor(r4 * ${s.wallets})::int END AS a,
        CASE WHEN r5 < 0.2 THEN 1 + floor(r5 * 5 * ${s.busy})::int
          ELSE 1 + floor(r6 * ${s.wallets})::int END AS b
      FROM x
    ), s AS MATERIALIZED (
      SELECT i, gen_random_uuid() AS pid, gen_random_uuid() AS lid, kind, status,
        CASE WHEN i < ${s.wallets} THEN ${OPENING.toString()}::int8
          ELSE 100 + floor(power(r7, 3) * 2000000)::int8 END AS amount,
        ${s.from.toISOString()}::timestamptz
          + make_interval(secs => (i + r8) * ${s.spanS}::float8 / ${s.payments}) AS at,
        md5(${s.salt} || '/w/' || a)::uuid AS wa,
        md5(${s.salt} || '/w/' || CASE WHEN b = a THEN a % ${s.wallets} + 1 ELSE b END)::uuid AS wb,
        CASE WHEN i % 10 = 0 THEN jsonb_build_object('order_id', 'ord_' || i,
            'channel', (ARRAY['web', 'pos', 'app'])[1 + (i / 10) % 3])
          WHEN i % 10 IN (1, 2) THEN jsonb_build_object('channel', (ARRAY['web', 'pos', 'app'])[1 + i % 3])
          ELSE '{}'::jsonb END AS meta
      FROM y
    ), t AS (
      INSERT INTO transactions (id, application_id, mode, transaction_type, status, currency,
        amount, wallet_id, recipient_wallet_id, description, merchant_metadata, created_at, updated_at)
      SELECT pid, ${s.app}, ${s.mode}, kind, status, ${s.currency}, amount, wa,
        CASE WHEN kind = 'transfer' THEN wb END, 'seed', meta, at, at
      FROM s
    ), l AS (
      INSERT INTO ledger_transactions (id, application_id, mode, transaction_id, kind, description, created_at)
      SELECT lid, ${s.app}, ${s.mode}, pid, kind, 'seed', at FROM s WHERE status = 'completed'
    ), e AS MATERIALIZED (
      SELECT lid, at, leg.account_id, leg.amount
      FROM s, LATERAL (VALUES
        (CASE kind WHEN 'transfer' THEN wa WHEN 'mobile_money_cashout' THEN wa
          WHEN 'card_deposit' THEN ${s.accounts.card}::uuid ELSE ${s.accounts.mobile}::uuid END, -s.amount),
        (CASE kind WHEN 'transfer' THEN wb WHEN 'mobile_money_cashout' THEN ${s.accounts.payouts}::uuid
          ELSE wa END, s.amount)) AS leg (account_id, amount)
      WHERE status = 'completed'
    ), entries AS (
      INSERT INTO ledger_entries (ledger_transaction_id, account_id, currency, amount, created_at)
      SELECT lid, account_id, ${s.currency}, amount, at FROM e
    )
    INSERT INTO search_seed_deltas SELECT account_id, sum(amount) FROM e GROUP BY account_id`;
}

export async function seedSearch(
  pool: DatabasePool,
  input: {
    applicationId: string;
    mode: 'test' | 'live';
    currency: 'USD' | 'SLE';
    payments: number;
    wallets: number;
    days: number;
    progress: (message: string) => void;
  },
): Promise<SearchSeed> {
  const { applicationId: app, mode, currency, payments, wallets } = input;
  if (payments < wallets) throw new Error('fewer payments than wallets: each gets a deposit');
  const busy = busyWallets(wallets);
  const seconds: [string, number][] = [];
  const timed = async <T>(phase: string, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await run();
    const took = (performance.now() - started) / 1000;
    seconds.push([phase, took]);
    input.progress(`   ${phase}: ${took.toFixed(1)}s`);
    return result;
  };
  const to = new Date();
  const from = new Date(to.getTime() - input.days * 86_400_000);
  // Ids made from the application's: a statement finds wallet k without a join.
  const salt = `${app}/search`;
  const system = (kind: 'provider_clearing_mobile_money' | 'provider_clearing_card' | 'payouts') =>
    systemAccountId(pool, app, mode, kind, currency);
  const scope: Scope = {
    app,
    mode,
    currency,
    salt,
    payments,
    wallets,
    busy,
    from,
    spanS: input.days * 86_400,
    accounts: {
      mobile: await system('provider_clearing_mobile_money'),
      card: await system('provider_clearing_card'),
      payouts: await system('payouts'),
    },
  };
  /** A connection for the bulk load: no deadline, no triggers, room to sort. */
  const bulk = <T>(run: (c: DatabasePoolConnection) => Promise<T>) =>
    pool.connect(async (c) => {
      await c.query(sql.unsafe`SET statement_timeout = 0`);
      await c.query(sql.unsafe`SET session_replication_role = replica`);
      await c.query(sql.unsafe`SET maintenance_work_mem = '1GB'`);
      await c.query(sql.unsafe`SET work_mem = '256MB'`);
      try {
        return await run(c);
      } finally {
        await c.query(sql.unsafe`RESET ALL`);
      }
    });

  const indexes = await timed('dropping the secondary indexes', () =>
    bulk(async (c) => {
      const found = await c.any(sql.type(z.object({ name: z.string(), definition: z.string() }))`
        SELECT i.relname AS name, pg_get_indexdef(x.indexrelid) AS definition
        FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
        WHERE t.relname = ANY(${sql.array(BULK_TABLES, 'text')})
          AND t.relnamespace = 'public'::regnamespace
          AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)`);
      for (const { name } of found) {
        await c.query(sql.unsafe`DROP INDEX ${sql.identifier([name])}`);
      }
      return found;
    }),
  );

  await timed('users and wallets', () =>
    bulk(async (c) => {
      const series = sql.fragment`generate_series(1, ${wallets}::int) AS k`;
      const opened = sql.fragment`${from.toISOString()}::timestamptz - interval '1 day'`;
      await c.query(sql.unsafe`
        INSERT INTO users (id, application_id, mode, app_user_id, name, phone_number, created_at, updated_at)
        SELECT md5(${salt} || '/u/' || k)::uuid, ${app}, ${mode}, 'seed-' || k, 'Seed User ' || k,
          '+2327' || lpad(k::text, 7, '0'), ${opened}, ${opened}
        FROM ${series}`);
      await c.query(sql.unsafe`
        INSERT INTO ledger_accounts (id, application_id, mode, kind, currency, created_at)
        SELECT md5(${salt} || '/w/' || k)::uuid, ${app}, ${mode}, 'user_wallet', ${currency}, ${opened}
        FROM ${series}`);
      await c.query(sql.unsafe`
        INSERT INTO wallets (id, user_id, application_id, mode, created_at, updated_at)
        SELECT md5(${salt} || '/w/' || k)::uuid, md5(${salt} || '/u/' || k)::uuid, ${app}, ${mode},
          ${opened}, ${opened}
        FROM ${series}`);
    }),
  );

  await timed('payments and their ledger', async () => {
    await pool.query(sql.unsafe`
      CREATE UNLOGGED TABLE search_seed_deltas (account_id uuid NOT NULL, amount bigint NOT NULL)`);
    const queue = chunks(payments, CHUNK);
    let done = 0;
    const worker = () =>
      bulk(async (c) => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          await c.query(chunkStatement(next, scope));
          done += next[1] - next[0];
          input.progress(`   ${done.toLocaleString('en')} of ${payments.toLocaleString('en')}`);
        }
      });
    await Promise.all(Array.from({ length: PARALLEL }, worker));
  });

  await timed('balances', () =>
    bulk(async (c) => {
      await c.query(sql.unsafe`
        UPDATE ledger_accounts a SET balance = a.balance + d.amount
        FROM (SELECT account_id, sum(amount)::int8 AS amount FROM search_seed_deltas GROUP BY 1) d
        WHERE a.id = d.account_id`);
      await c.query(sql.unsafe`DROP TABLE search_seed_deltas`);
    }),
  );

  // Before the indexes: a vacuum sets the visibility map the index-only scans need.
  await timed('vacuum and analyze', () =>
    Promise.all(
      [BULK_TABLES, ['users', 'wallets', 'ledger_accounts']].map((tables) =>
        bulk(async (c) => {
          for (const table of tables) {
            await c.query(sql.unsafe`VACUUM (ANALYZE) ${sql.identifier([table])}`);
          }
        }),
      ),
    ),
  );

  await timed('building the secondary indexes again', async () => {
    const queue = [...indexes];
    await Promise.all(
      Array.from({ length: PARALLEL }, () =>
        bulk(async (c) => {
          for (let next = queue.shift(); next; next = queue.shift()) {
            await c.query(raw(next.definition));
          }
        }),
      ),
    );
  });

  await timed('analytics rollup', () =>
    bulk(async (c) => {
      await c.query(sql.unsafe`SELECT analytics_daily_rebuild()`);
      await c.query(sql.unsafe`ANALYZE`);
    }),
  );

  return {
    payments,
    wallets,
    busy,
    from,
    to,
    walletId: (k) => md5Uuid(`${salt}/w/${k}`),
    seconds,
  };
}
