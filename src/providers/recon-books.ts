import type { Config } from '../config';
import type { DatabasePool } from '../db/pool';
import type { Mode } from '../domain/types';
import type { ProviderBooks } from './books';
import { payoutAccountIds } from '../db/payout-accounts';
import { ProviderNotConfiguredError } from './mobile-money';
import { monimeBooksFromConfig } from './monime-books';
import { stripeBooksFromConfig } from './stripe-books';
import { ImportedBooks, SandboxBooks } from './sandbox-books';

/** What a run reads: the file it names, else the provider of its mode. */
export type BooksOf = { mode: Mode; provider: 'mobile_money' | 'card'; importId: string | null };

/**
 * The books a run reads (docs/operations.md, Reconcile with a provider): an imported file, the
 * sandbox's in Test Mode, Stripe's (card) or Monime's (mobile_money) in Live Mode.
 */
export function booksFor(
  deps: { pool: DatabasePool; config: Config },
  run: BooksOf,
): ProviderBooks {
  if (run.importId !== null) return new ImportedBooks(deps.pool, run.importId);
  if (run.mode === 'test') return new SandboxBooks(deps.pool, run.provider);
  return liveBooks(deps, run.provider);
}

/** The live provider's list endpoints; without its credentials, a run can never succeed. */
function liveBooks(
  deps: { pool: DatabasePool; config: Config },
  provider: 'mobile_money' | 'card',
): ProviderBooks {
  const books =
    provider === 'card'
      ? stripeBooksFromConfig(deps.config, (window) =>
          payoutAccountIds(deps.pool, { applicationId: window.applicationId, mode: window.mode }),
        )
      : monimeBooksFromConfig(deps.config);
  if (books) return books;
  throw new ProviderNotConfiguredError(
    `The live ${provider === 'card' ? 'Stripe' : 'Monime'} books are not configured`,
  );
}
