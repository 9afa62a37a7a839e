import {
  WorkflowExecutionAlreadyStartedError,
  type Client,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import { AppError } from '../domain/errors';
import type { SearchAttributePair } from '@temporalio/common';
import type { Caller, TransactionType } from '../domain/types';
import { SearchAttributes } from '../workflows/shared';

/**
 * Runs a payment workflow and waits for its result, at most `timeoutMs`. The workflow id is the
 * payment's identity: a second caller with the same id (a retried request) attaches to the
 * running workflow, or reads the result of the finished one, instead of starting another.
 */
export async function runPaymentWorkflow<W extends Workflow>(
  client: Client,
  workflow: W,
  options: WorkflowStartOptions<W> & { timeoutMs: number },
): Promise<Awaited<ReturnType<W>>> {
  const { timeoutMs, ...start } = options;
  const run = async (): Promise<Awaited<ReturnType<W>>> => {
    try {
      const handle = await client.workflow.start(workflow, {
        ...start,
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      } as WorkflowStartOptions<W>);
      return (await handle.result()) as Awaited<ReturnType<W>>;
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) {
        return (await client.workflow.getHandle(start.workflowId).result()) as Awaited<
          ReturnType<W>
        >;
      }
      throw error;
    }
  };
  return withDeadline(run(), timeoutMs);
}

/** Bounds a wait on Temporal by the request deadline: 504, and the payment goes on. */
export async function withDeadline<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new AppError(
            'timeout',
            'The payment is still processing; retry with the same Idempotency-Key to get its result',
          ),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The search attributes every payment workflow starts with; the workflow moves PaymentStatus. */
export function paymentSearchAttributes(
  caller: Caller,
  type: TransactionType,
  walletIds: string[],
): SearchAttributePair[] {
  return [
    { key: SearchAttributes.ApplicationId, value: caller.applicationId },
    { key: SearchAttributes.PaymentMode, value: caller.mode },
    { key: SearchAttributes.WalletId, value: walletIds },
    { key: SearchAttributes.PaymentType, value: type },
    { key: SearchAttributes.PaymentStatus, value: 'pending' },
  ];
}
