import { createHash, randomUUID } from 'node:crypto';
import type { Caller } from '../../src/domain/types';
import type { TransferInput } from '../../src/workflows/shared';

/**
 * The input of a transfer's ledger step (the `transferFunds` activity) for `caller`, under a
 * fresh transaction id, for tests that call the step without a workflow.
 */
export const transferStepInput = (
  caller: Caller,
  from: string,
  to: string,
  amount: string,
  description = 'a test transfer',
): TransferInput => ({
  transactionId: randomUUID(),
  applicationId: caller.applicationId,
  mode: caller.mode,
  fromWalletId: from,
  toWalletId: to,
  amount,
  description,
});

/** A request hash to claim an idempotency key with: any stable bytes do for a test. */
export const hashOf = (text: string): Buffer => createHash('sha256').update(text).digest();
