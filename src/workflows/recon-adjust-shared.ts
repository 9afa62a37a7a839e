/** What the API, the activity and the `adjust` resolution's workflow share; no I/O here. */
import type { AuditEntry } from '../domain/audit';

/**
 * An operator's `adjust` resolution of a provider-reconciliation exception; `audit` is written
 * in the adjustment's own transaction (absent from workflows started before the audit log).
 */
export type ReconAdjustInput = {
  exceptionId: string;
  note: string;
  resolvedBy: string;
  audit?: AuditEntry;
};

/** What the adjustment wrote; `amount` signed minor units (positive credited the wallet). */
export type ReconAdjusted = {
  status: 'adjusted';
  exceptionId: string;
  adjustmentId: string;
  ledgerTransactionId: string;
  walletId: string;
  amount: string;
  currency: string;
};

/** The step's input: the adjustment's id, chosen once, tells a retry its own committed write. */
export type ReconAdjustStep = ReconAdjustInput & { adjustmentId: string };
