import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { Currency } from '../domain/money';
import type { Caller } from '../domain/types';
import { remember } from '../cache/bounded';
import { prepare } from './pool';
import { metadataMerge } from './metadata';
import { pageTotal } from './pages';
import {
  joinedWalletState,
  joinedWalletStateShape,
  walletFacts,
  walletState,
  type WalletState,
} from './wallet-facts';

export { joinedWalletState, walletState, type WalletState };

export const walletRow = z.object({
  id: z.string(),
  user_id: z.string(),
  application_id: z.string(),
  mode: z.enum(['test', 'live']),
  balance: z.bigint(),
  currency: z.enum(['USD', 'SLE']),
  is_active: z.boolean(),
  user_is_active: z.boolean(),
  metadata: z.record(z.string(), z.string()),
  created_at: z.string(),
  updated_at: z.string(),
});
export type WalletRow = z.infer<typeof walletRow>;

const select = sql.fragment`
  SELECT w.id, w.user_id, w.application_id, w.mode, a.balance, a.currency, w.is_active,
    u.is_active AS user_is_active, w.metadata, w.created_at, w.updated_at
  FROM wallets w
  JOIN ledger_accounts a ON a.id = w.id
  JOIN users u ON u.id = w.user_id`;

/** Opens the user's ledger account and wallet in the application's base currency. */
export async function insertWallet(
  trx: DatabaseTransactionConnection,
  caller: Caller,
  userId: string,
  currency: Currency,
  active: boolean,
  metadata: Readonly<Record<string, string>> = {},
): Promise<WalletRow> {
  const id = randomUUID();
  await trx.query(sql.unsafe`
    INSERT INTO ledger_accounts (id, application_id, mode, kind, currency)
    VALUES (${id}, ${caller.applicationId}, ${caller.mode}, 'user_wallet', ${currency})`);
  await trx.query(sql.unsafe`
    INSERT INTO wallets (id, user_id, application_id, mode, is_active, metadata)
    VALUES (${id}, ${userId}, ${caller.applicationId}, ${caller.mode}, ${active}, ${sql.jsonb(metadata)})`);
  return trx.one(sql.type(walletRow)`${select} WHERE w.id = ${id}`);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A wallet by id, whatever its application; an id that is not a UUID names no wallet. */
export async function findWallet(db: CommonQueryMethods, id: string): Promise<WalletRow | null> {
  if (!UUID.test(id)) return null;
  return db.maybeOne(sql.type(walletRow)`${select} WHERE w.id = ${id}`);
}

export async function findWalletByUser(
  db: CommonQueryMethods,
  userId: string,
): Promise<WalletRow | null> {
  return db.maybeOne(sql.type(walletRow)`${select} WHERE w.user_id = ${userId}`);
}

export async function listWallets(
  db: CommonQueryMethods,
  caller: Caller,
  filter: { is_active?: boolean | undefined },
  page: { limit: number; offset: number },
): Promise<{ rows: readonly WalletRow[]; total: number }> {
  const where = sql.fragment`w.application_id = ${caller.applicationId} AND w.mode = ${caller.mode}
    AND (${filter.is_active ?? null}::boolean IS NULL OR w.is_active = ${filter.is_active ?? null}::boolean)`;
  const total = await pageTotal(db, sql.fragment`wallets w`, where, page);
  const rows = await db.any(sql.type(walletRow)`
    ${select} WHERE ${where} ORDER BY w.created_at, w.id LIMIT ${page.limit} OFFSET ${page.offset}`);
  return { rows, total };
}

export async function setWalletActive(
  db: CommonQueryMethods,
  id: string,
  active: boolean,
): Promise<WalletRow> {
  await db.query(
    sql.unsafe`UPDATE wallets SET is_active = ${active}, updated_at = now() WHERE id = ${id}`,
  );
  return db.one(sql.type(walletRow)`${select} WHERE w.id = ${id}`);
}

/**
 * Merges `patch` into the wallet's metadata in one statement (src/db/metadata.ts); null when the
 * wallet is gone or the merged metadata would break the key limit, which the caller tells apart.
 */
export async function mergeWalletMetadata(
  db: CommonQueryMethods,
  id: string,
  patch: Readonly<Record<string, string | null>>,
): Promise<WalletRow | null> {
  const merge = metadataMerge(patch);
  return db.maybeOne(sql.type(walletRow)`
    WITH w AS (
      UPDATE wallets SET metadata = ${merge.set}, updated_at = now()
      WHERE id = ${id} AND ${merge.fits}
      RETURNING *
    )
    SELECT w.id, w.user_id, w.application_id, w.mode, a.balance, a.currency, w.is_active,
      u.is_active AS user_is_active, w.metadata, w.created_at, w.updated_at
    FROM w JOIN ledger_accounts a ON a.id = w.id JOIN users u ON u.id = w.user_id`);
}

/**
 * Wallet currencies as a worker process has seen them: what lets a money step be tried in one
 * statement (src/db/money-steps.ts `recordMoneyStepAtOnce`), whose guard checks the currency again,
 * so a wallet switched since (only while empty: src/db/applications.ts) is merely read afresh.
 */
export type WalletCurrencyMemory = Map<string, Currency>;

export function rememberWalletCurrencies(
  memory: WalletCurrencyMemory,
  wallets: Iterable<{ id: string; currency: Currency }>,
): void {
  for (const w of wallets) remember(memory, w.id, w.currency);
}

const walletStateOrNone = z.object({
  made: z.boolean(),
  at: z.string(),
  ...joinedWalletStateShape(),
});

/**
 * `walletStates`, and in the same round trip whether the payment `paymentId` is written
 * already (a retried step, which answers with it and checks nothing) and the database
 * transaction's `now()` (`at`, for src/db/money-steps.ts).
 */
export async function walletStatesUnlessMade(
  db: CommonQueryMethods,
  ids: readonly string[],
  paymentId: string,
): Promise<{ made: boolean; at: string; states: Map<string, WalletState> }> {
  const rows = await db.any(
    prepare(sql.type(walletStateOrNone)`
      SELECT m.made, m.at, ${walletFacts({}, { omit: ['balance'] })}
      FROM (SELECT EXISTS (SELECT 1 FROM transactions WHERE id = ${paymentId}) AS made, now() AS at) m
      LEFT JOIN (wallets w JOIN ledger_accounts a ON a.id = w.id
        JOIN applications app ON app.id = w.application_id)
        ON w.id = ANY(${sql.array([...ids], 'uuid')})`),
  );
  const states = new Map<string, WalletState>();
  for (const row of rows) {
    const state = joinedWalletState(row);
    if (state) states.set(state.id, state);
  }
  const [first] = rows;
  if (!first) throw new Error('the wallets query answered no row');
  return { made: first.made, at: first.at, states };
}

/**
 * What a money step checks of wallets (scope, active, currencies), by id, without locking; an id
 * that is not a UUID names no wallet.
 */
export async function walletStates(
  db: CommonQueryMethods,
  ids: readonly string[],
): Promise<Map<string, WalletState>> {
  const valid = ids.filter((id) => UUID.test(id));
  if (valid.length === 0) return new Map();
  const rows = await db.any(
    prepare(sql.type(walletState)`
      SELECT ${walletFacts({}, { omit: ['balance'] })}
      FROM wallets w JOIN ledger_accounts a ON a.id = w.id
        JOIN applications app ON app.id = w.application_id
      WHERE w.id = ANY(${sql.array(valid, 'uuid')})`),
  );
  return new Map(rows.map((r) => [r.id, r]));
}
