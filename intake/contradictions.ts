/**
 * A provider's answer that contradicts a payment the engine has ended (docs/api.md, "Resolve a
 * stuck payment"): kept, logged at error, counted and sent as `payment.contradicted`, never
 * dropped; the operator and the reconciliation take it from there.
 */
import { providerContradictions } from '../observability/metrics';
import { insertPaymentContradiction } from '../db/payment-contradictions';
import type { DatabasePool } from '../db/pool';
import { findTransaction, insertEvent } from '../db/transactions';
import { minorToMajorNumber } from '../domain/money';
import { transactionEventData } from '../activities/events';

/** Where a contradiction is logged: the API's logger, or an activity's. */
export type ErrorLog = { error(fields: Record<string, unknown>, message: string): void };

/** A provider's statuses that mean the money moved, and those that mean it never will. */
const PAID = new Set(['completed', 'succeeded', 'paid']);
const NOT_PAID = new Set(['failed', 'expired', 'canceled', 'cancelled']);

/** Whether the provider's `providerStatus` contradicts the engine's ended `engineStatus`. */
export function contradicts(engineStatus: string, providerStatus: string): boolean {
  if (engineStatus === 'completed') return NOT_PAID.has(providerStatus);
  if (engineStatus === 'failed' || engineStatus === 'expired') return PAID.has(providerStatus);
  return false;
}

/**
 * Keeps the provider's answer about the ended payment `transactionId` when it contradicts its
 * status: stored with its event in one database transaction, once per provider status.
 */
export async function keepContradiction(
  deps: { pool: DatabasePool; logger?: ErrorLog },
  transactionId: string,
  provider: { name: string; status: string; amount: bigint | null },
): Promise<boolean> {
  const stored = await deps.pool.transaction(async (trx) => {
    const row = await findTransaction(trx, transactionId);
    if (!row || !contradicts(row.status, provider.status)) return null;
    const kept = await insertPaymentContradiction(trx, {
      transactionId: row.id,
      applicationId: row.application_id,
      mode: row.mode,
      engineStatus: row.status,
      providerStatus: provider.status,
      providerAmount: provider.amount,
      source: provider.name,
    });
    if (!kept) return null;
    const amount = provider.amount === null ? null : minorToMajorNumber(provider.amount);
    await insertEvent(trx, {
      applicationId: row.application_id,
      mode: row.mode,
      type: 'payment.contradicted',
      transactionId: row.id,
      data: { ...transactionEventData(row), provider: { status: provider.status, amount } },
    });
    return row;
  });
  if (!stored) return false;
  providerContradictions.inc({ type: stored.transaction_type, mode: stored.mode });
  deps.logger?.error(
    {
      transaction_id: stored.id,
      transaction_type: stored.transaction_type,
      engine_status: stored.status,
      provider: provider.name,
      provider_status: provider.status,
    },
    'a provider contradicts an ended payment',
  );
  return true;
}
