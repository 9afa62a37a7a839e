import type { TimelineStep } from './types';

/** A reconciliation exception about the payment, as its timeline shows it. */
export type ReconExceptionStep = {
  kind: string;
  providerReference: string | null;
  status: 'open' | 'resolved';
  resolution: 'accept' | 'adjust' | null;
  note: string | null;
  resolvedBy: string | null;
  createdAt: string;
  resolvedAt: string | null;
};

/**
 * The payment's reconciliation exceptions as steps after its workflow's (docs/api.md, The payment
 * timeline): `running` while open, `completed` once resolved, with who resolved it and how.
 */
export function reconciliationSteps(exceptions: readonly ReconExceptionStep[]): TimelineStep[] {
  return exceptions.map((e) => ({
    name: e.kind,
    kind: 'reconciliation',
    status: e.status === 'open' ? 'running' : 'completed',
    attempts: 1,
    started_at: e.createdAt,
    ended_at: e.resolvedAt,
    provider_reference: e.providerReference,
    failure: null,
    ...(e.resolvedBy !== null && { operator: e.resolvedBy }),
    ...(e.note !== null && { reason: e.note }),
    ...(e.resolution !== null && { resolution: e.resolution }),
  }));
}
