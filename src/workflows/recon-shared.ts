/**
 * What the API, the activities and the provider reconciliation's workflows share (docs/operations.md,
 * Reconcile with a provider). No I/O here: workflow code imports it.
 */
import { defineSignal } from '@temporalio/workflow';
import type { Mode } from '../domain/types';

/** How long an exception stays open before `reconciliation.exception.stale` is sent. */
export const RECON_EXCEPTION_STALE_MS = 72 * 60 * 60 * 1000;

export type ReconRunInput = {
  runId: string;
  /** Where the next chunk of the provider's records starts (a continued run); absent at first. */
  cursor?: string | null;
  /** How many records the run has loaded so far: the next record's `seq`. */
  loaded?: number;
};

export type ReconExceptionInput = {
  exceptionId: string;
  /** The exception's mode (a Test Mode timer is a payment clock's); absent in older starts. */
  mode?: Mode;
  /**
   * When `stale` is due (ISO time): the exception's opening plus the stale period. The workflow
   * is started delayed until then, and waits only for what is left when woken before it.
   */
  dueAt?: string;
};

/** The timer's input for an exception opened at `createdAt` (an ISO time). */
export function reconExceptionInput(exception: {
  id: string;
  mode: Mode;
  createdAt: string;
}): Required<ReconExceptionInput> {
  const dueAt = new Date(Date.parse(exception.createdAt) + RECON_EXCEPTION_STALE_MS).toISOString();
  return { exceptionId: exception.id, mode: exception.mode, dueAt };
}

/** The patch of the timer that starts delayed until its due time (`dueAt`). */
export const RECON_EXCEPTION_DUE_PATCH = 'recon-exception-due-at';

/** Sent by whoever resolves the exception, after the resolution is written: the timer ends. */
export const reconExceptionResolved = defineSignal('reconExceptionResolved');

/**
 * Sent with signal-with-start to dispatch a timer still in its start delay (a plain signal does
 * not): the test clock's advance must find it waiting on its clock.
 */
export const reconExceptionWake = defineSignal('reconExceptionWake');
