/**
 * What the API, the activities and the provider reconciliation's workflows share (docs/operations.md,
 * Reconcile with a provider). No I/O here: workflow code imports it.
 */
import { defineSignal } from '@temporalio/workflow';

/** How long an exception stays open before `reconciliation.exception.stale` is sent. */
export const RECON_EXCEPTION_STALE_MS = 72 * 60 * 60 * 1000;

export type ReconRunInput = {
  runId: string;
  /** Where the next chunk of the provider's records starts (a continued run); absent at first. */
  cursor?: string | null;
  /** How many records the run has loaded so far: the next record's `seq`. */
  loaded?: number;
};

export type ReconExceptionInput = { exceptionId: string };

/** Sent by whoever resolves the exception, after the resolution is written: the timer ends. */
export const reconExceptionResolved = defineSignal('reconExceptionResolved');
