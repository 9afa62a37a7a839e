import { randomUUID } from 'node:crypto';
import { createApplication, updateApplication } from '../../src/db/applications';
import { createCredential } from '../../src/db/credentials';
import { lockAccounts, postLedgerTransaction, systemAccountId } from '../../src/db/ledger';
import type { DatabasePool } from '../../src/db/pool';
import { findWallet } from '../../src/db/wallets';
import type { Currency } from '../../src/domain/money';
import { RATE_LIMIT_CATEGORIES, type Mode } from '../../src/domain/types';

/** Per-minute limits no test or benchmark load reaches, for every category. */
export const RAISED_RATE_LIMITS: Readonly<Record<string, number>> = Object.fromEntries(
  Object.keys(RATE_LIMIT_CATEGORIES).map((category) => [category, 1_000_000_000]),
);

export type Credentials = { apiKey: string; secretKey: string };

export type FixtureApplication<M extends Mode = Mode> = {
  id: string;
  credentials: Record<M, Credentials>;
};

/**
 * An application with credentials in each of `modes`. Rate limits are raised (`'raised'`,
 * the default), set as given, or left at their defaults (`null`).
 */
export async function createFixtureApplication<M extends Mode>(
  pool: DatabasePool,
  options: {
    modes: readonly M[];
    name?: string;
    currency?: Currency;
    rateLimits?: 'raised' | Record<string, number> | null;
  },
): Promise<FixtureApplication<M>> {
  const app = await createApplication(pool, {
    name: options.name ?? `app-${randomUUID().slice(0, 8)}`,
    baseCurrency: options.currency ?? 'SLE',
  });
  const rateLimits = options.rateLimits === undefined ? 'raised' : options.rateLimits;
  if (rateLimits !== null) {
    await updateApplication(pool, app.id, {
      rateLimits: rateLimits === 'raised' ? RAISED_RATE_LIMITS : rateLimits,
    });
  }
  const credentials = {} as Record<M, Credentials>;
  for (const mode of options.modes) {
    const created = await createCredential(pool, { applicationId: app.id, mode });
    credentials[mode] = { apiKey: created.api_key, secretKey: created.secret_key };
  }
  return { id: app.id, credentials };
}

/**
 * Money into a wallet, booked as the mobile-money provider's clearing account paying it: one
 * balanced ledger transaction of `kind`, as a completed deposit would be, with no payment row.
 */
export async function fundWallet(
  pool: DatabasePool,
  walletId: string,
  amount: bigint,
  kind: string,
): Promise<void> {
  await pool.transaction(async (trx) => {
    const wallet = await findWallet(trx, walletId);
    if (!wallet) throw new Error(`fundWallet: no wallet ${walletId}`);
    const clearing = await systemAccountId(
      trx,
      wallet.application_id,
      wallet.mode,
      'provider_clearing_mobile_money',
      wallet.currency,
    );
    await lockAccounts(trx, [walletId, clearing]);
    await postLedgerTransaction(trx, {
      applicationId: wallet.application_id,
      mode: wallet.mode,
      transactionId: null,
      kind,
      postings: [
        { accountId: clearing, currency: wallet.currency, amount: -amount },
        { accountId: walletId, currency: wallet.currency, amount },
      ],
    });
  });
}
