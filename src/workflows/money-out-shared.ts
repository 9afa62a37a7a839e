/**
 * What the API (client side) and the money-out workflows share: the saga's input, its answers,
 * updates and query. One saga serves every way money leaves a wallet through a provider
 * (mobile-money cashouts, card payouts, card refunds); `kind` names which. No I/O here.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { AuditEntry } from '../domain/audit';
import type { Declined, LocalSteps } from './shared';

/** The ways money leaves a wallet through a provider; each has its workflow id prefix. */
export type MoneyOutKind = 'cashout' | 'payout' | 'refund';

export type MoneyOutInput = LocalSteps & {
  kind: MoneyOutKind;
  transactionId: string;
  applicationId: string;
  mode: 'test' | 'live';
  walletId: string;
  /**
   * What the destination receives, minor units as a decimal string, in the currency the kind's
   * request names (SLE cents for a mobile-money cashout).
   */
  amount: string;
  /**
   * Where the money goes, as the kind's provider needs it (a cashout: `phone_number`; a refund:
   * `deposit_id`, the card deposit refunded, and `reason` when given).
   */
  destination: Record<string, string>;
  /** The merchant's metadata (src/api/schemas.ts `Metadata`), written with the record. */
  metadata?: Record<string, string>;
  /** The audit log's entry of a change a person asked for (a refund), written with the record. */
  audit?: AuditEntry;
};

/** Where the provider's payout stands (src/providers/mobile-money.ts `PayoutStatus`). */
export type MoneyOutProviderStatus = 'pending' | 'completed' | 'failed';

/** The payment's outcome: pending while the provider has not told. */
export type MoneyOutOutcome = 'pending' | 'completed' | 'failed';

/** What the request answers: the reserved payment, once the provider accepted or settled it. */
export type MoneyOutOpened = { status: 'opened'; transactionId: string; outcome: MoneyOutOutcome };

export const moneyOutUpdates = {
  open: defineUpdate<MoneyOutOpened | Declined>('open'),
  /** A provider notification (or the simulate-webhook endpoint), its signature checked. */
  notify: defineUpdate<MoneyOutOutcome, [{ status: MoneyOutProviderStatus }]>('notify'),
  /** Ask the provider now and reconcile at once. */
  sync: defineUpdate<MoneyOutOutcome>('sync'),
};
export const moneyOutStateQuery = defineQuery<MoneyOutOutcome>('state');
