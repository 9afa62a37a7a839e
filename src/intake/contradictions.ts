/**
 * A provider's answer that contradicts a payment the engine has ended (docs/api.md, "Resolve a
 * stuck payment"): kept, logged at error, counted and sent as `payment.contradicted`, never
 * dropped; the operator and the reconciliation take it from there.
 */
import { providerContradictions } from '../observability/metrics';
import { findMoneyOut } from '../db/money-out';
import { insertPaymentContradiction } from '../db/payment-contradictions';
import { openContradictionException } from '../db/recon-matching';
import type { DatabasePool } from '../db/pool';
import { findTransaction } from '../db/transactions';
import { insertEvent } from '../db/transaction-events';
import { minorToMajorNumber } from '../domain/money';
import { reconProviderOf } from '../domain/recon';
import type { Mode } from '../domain/types';
import { transactionEventData } from '../activities/events';
import type { Providers } from '../providers';
import { startReconExceptionTimer } from '../temporal/recon-runs';
import type { Client } from '@temporalio/client';

/**
 * Where the stale timer of the exception a contradiction opens starts: the worker's or the API's
 * Temporal client and the maintenance task queue. Without it the exception has no timer.
 */
export type ReconTimers = { temporal: Client; reconQueue?: string | undefined };

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

/** The payment kinds a provider's message names (src/intake/notifications.ts `notificationTargets`). */
type PaymentKind = 'deposit' | 'cardDeposit' | 'cashout' | 'payout' | 'refund';

/** What a verified provider message says of a payment (src/intake/notifications.ts). */
type Message = { provider: string; mode: Mode; paymentReference: string; status: string };

/** The payment as its provider reports it now: its status in the provider's words, its amount. */
async function providerView(
  deps: { pool: DatabasePool; providers: Providers },
  kind: PaymentKind,
  mode: Mode,
  reference: string,
  transactionId: string,
): Promise<{ status: string; amount: bigint }> {
  const { providers } = deps;
  switch (kind) {
    case 'deposit':
      return providers.mobileMoney(mode).getPaymentCode(reference);
    case 'cardDeposit':
      return providers.card(mode).getPayment(reference);
    case 'cashout':
      return providers.mobileMoney(mode).getPayout(reference);
    case 'refund':
      return providers.card(mode).getRefund(reference);
    case 'payout': {
      const accountId = (await findMoneyOut(deps.pool, transactionId))?.meta.destination.account_id;
      return providers.connect(mode).getPayout(accountId ?? '', reference);
    }
  }
}

/**
 * A signed message that contradicts an ended payment may only be stale (sent before the answer
 * that ended it): the provider is asked, and its answer now is what is kept. One that cannot be
 * asked leaves the message's word.
 */
export async function keepContradictingMessage(
  deps: { pool: DatabasePool; providers?: Providers; logger?: ErrorLog } & Partial<ReconTimers>,
  kind: PaymentKind,
  transactionId: string,
  message: Message,
): Promise<boolean> {
  let view: { status: string; amount: bigint | null } = { status: message.status, amount: null };
  if (deps.providers) {
    const providers = deps.providers;
    try {
      const { status, amount } = await providerView(
        { pool: deps.pool, providers },
        kind,
        message.mode,
        message.paymentReference,
        transactionId,
      );
      view = { status, amount };
    } catch (error) {
      deps.logger?.error(
        { transaction_id: transactionId, err: error },
        'the provider could not confirm a message that contradicts an ended payment',
      );
    }
  }
  return keepContradiction(deps, transactionId, {
    name: message.provider,
    status: view.status,
    amount: view.amount,
  });
}

/**
 * Keeps the provider's answer about the ended payment `transactionId` when it contradicts its
 * status: stored with its event and a `status_mismatch` reconciliation exception (its own event)
 * in one database transaction, once per provider status; the exception's stale timer then starts.
 */
export async function keepContradiction(
  deps: { pool: DatabasePool; logger?: ErrorLog } & Partial<ReconTimers>,
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
    const books = reconProviderOf(row.transaction_type);
    const exception = books
      ? await openContradictionException(trx, {
          transactionId: row.id,
          provider: books,
          providerStatus: PAID.has(provider.status) ? 'succeeded' : 'failed',
          providerAmount: provider.amount,
        })
      : null;
    return { row, exception };
  });
  if (!stored) return false;
  if (stored.exception && deps.temporal && deps.reconQueue) {
    // The exception is kept either way; a timer that cannot start is logged, not retried here.
    await startReconExceptionTimer(deps.temporal, deps.reconQueue, stored.exception).catch(
      (error: unknown) =>
        deps.logger?.error(
          { exception_id: stored.exception?.id, err: error },
          'the stale timer of a reconciliation exception did not start',
        ),
    );
  }
  return logContradiction(deps, stored.row, provider);
}

function logContradiction(
  deps: { logger?: ErrorLog },
  stored: NonNullable<Awaited<ReturnType<typeof findTransaction>>>,
  provider: { name: string; status: string },
): boolean {
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
