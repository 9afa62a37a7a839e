/**
 * A provider's own books: what it says it did in a window, read by the reconciliation
 * (docs/operations.md, Reconcile with a provider). The sandbox (Test Mode), Stripe and Monime
 * (Live Mode) and an uploaded settlement file each give the same records.
 */
export type BookedStatus = 'succeeded' | 'failed' | 'reversed';

/** One movement in the provider's books, amounts in minor units of `currency`. */
export type ProviderRecord = {
  /** The provider's id of the payment, payout or refund: the engine's `provider_reference`. */
  providerReference: string;
  /** When the provider booked it (RFC 3339). */
  bookedAt: string;
  amount: bigint;
  currency: string;
  fee: bigint;
  /** From the platform's side: `in` (deposits) or `out` (payouts, refunds). */
  direction: 'in' | 'out';
  status: BookedStatus;
};

/** A page of records and where the next one starts (null: the window is read). */
export type BookPage = { records: ProviderRecord[]; cursor: string | null };

export type BookWindow = {
  applicationId: string;
  mode: 'test' | 'live';
  /** The window `[from, to)`, RFC 3339. */
  from: string;
  to: string;
};

export interface ProviderBooks {
  readonly name: string;
  /**
   * One page of the window's records, in a stable order, starting at `cursor` (null: the first
   * page); at most `limit` records.
   */
  listRecords(window: BookWindow, cursor: string | null, limit: number): Promise<BookPage>;
  /**
   * Books kept in the engine's own database copy that page into a run's staging rows (from
   * `firstSeq`) without passing it through the worker; answers how many and the next cursor.
   */
  copyRecords?(
    window: BookWindow,
    cursor: string | null,
    limit: number,
    into: { runId: string; firstSeq: number },
  ): Promise<{ copied: number; cursor: string | null }>;
}
