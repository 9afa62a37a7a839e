/**
 * A signed provider event of a kind the engine acts on that it could not apply: kept in
 * `provider_notifications` as `unapplied` for an operator, logged at error and counted
 * (docs/operations.md, "Provider events kept for an operator"). Every intake path comes here.
 */
import { insertProviderNotification } from '../db/provider-notifications';
import type { DatabasePool } from '../db/pool';
import type { Mode } from '../domain/types';
import { providerEventsUnapplied } from '../observability/metrics';
import type { ErrorLog } from './contradictions';

/** Why an event moved no money though it should have: the metric's `reason` label. */
export type UnappliedReason =
  | 'not_our_deposit'
  | 'declined'
  | 'unknown_dispute'
  | 'error'
  | 'unreadable'
  | 'other_mode'
  | 'other_payment';

/** Why, with the reason's words for the log line. */
export type Unapplied = { reason: UnappliedReason; why: string };

/** The event as kept: what `insertProviderNotification` stores, less the outcome. */
export type UnappliedEvent = {
  provider: string;
  kind: string;
  mode: Mode;
  paymentReference: string;
  reference: string | null;
  status: string;
  transactionId: string | null;
};

/** Counts and logs an unapplied event whose row is written already (the reconciliation's). */
export function reportUnapplied(
  logger: ErrorLog,
  event: UnappliedEvent,
  { reason, why }: Unapplied,
  fields: Record<string, unknown> = {},
): void {
  providerEventsUnapplied.inc({ kind: event.kind, reason });
  logger.error(
    {
      provider: event.provider,
      mode: event.mode,
      kind: event.kind,
      paymentReference: event.paymentReference,
      reference: event.reference,
      transactionId: event.transactionId,
      reason,
      ...fields,
    },
    `${event.kind} event not applied, kept for an operator: ${why}`,
  );
}

/** Keeps the event as `unapplied`, then counts and logs it. */
export async function keepUnapplied(
  deps: { pool: DatabasePool; logger: ErrorLog },
  event: UnappliedEvent & { body: unknown },
  unapplied: Unapplied,
  fields: Record<string, unknown> = {},
): Promise<void> {
  await insertProviderNotification(deps.pool, { ...event, outcome: 'unapplied' });
  reportUnapplied(deps.logger, event, unapplied, fields);
}
