import { copyImportedRecords, readImportedBooks, readSandboxBooks } from '../db/recon-books';
import type { DatabasePool } from '../db/pool';
import type { BookPage, BookWindow, ProviderBooks } from './books';

/**
 * The Test Mode sandbox's own books of one provider: its payment codes and payouts
 * (mobile_money), or its card payments, payouts and refunds (card), as it keeps them; a row still
 * pending is not booked yet.
 */
export class SandboxBooks implements ProviderBooks {
  readonly name: string;

  constructor(
    private readonly pool: DatabasePool,
    private readonly provider: 'mobile_money' | 'card',
  ) {
    this.name = `sandbox_${provider}`;
  }

  listRecords(window: BookWindow, cursor: string | null, limit: number): Promise<BookPage> {
    return readSandboxBooks(this.pool, this.provider, window, cursor, limit);
  }
}

/** A settlement file the application imported, read instead of the provider. */
export class ImportedBooks implements ProviderBooks {
  readonly name = 'import';

  constructor(
    private readonly pool: DatabasePool,
    private readonly importId: string,
  ) {}

  listRecords(window: BookWindow, cursor: string | null, limit: number): Promise<BookPage> {
    return readImportedBooks(this.pool, this.importId, window, cursor, limit);
  }

  copyRecords(
    window: BookWindow,
    cursor: string | null,
    limit: number,
    into: { runId: string; firstSeq: number },
  ): Promise<{ copied: number; cursor: string | null }> {
    return copyImportedRecords(this.pool, this.importId, window, cursor, limit, into);
  }
}
