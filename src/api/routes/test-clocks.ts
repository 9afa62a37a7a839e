import { WorkflowUpdateFailedError } from '@temporalio/client';
import { z } from 'zod';
import { listReconExceptions } from '../../db/recon-exceptions';
import { findTransaction } from '../../db/transactions';
import { isNotFound } from '../../temporal/connection';
import { wakeReconExceptionTimer } from '../../temporal/recon-runs';
import { taskQueueOf } from '../../temporal/task-queues';
import {
  ADVANCE_SECONDS,
  clockUpdates,
  NOT_WAITING_ON_A_TIMER,
} from '../../workflows/clock-shared';
import { workflowIds } from '../../workflows/ids';
import { reconExceptionWake } from '../../workflows/recon-shared';
import { assertOwned } from '../access';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import { BodyId, uuidPattern } from '../schemas';
import { withDeadline } from '../workflow-starts';

const AdvanceTimeRequest = z.object({
  transaction_id: BodyId,
  seconds: z
    .int({ error: `must be an integer from ${ADVANCE_SECONDS.min} to ${ADVANCE_SECONDS.max}` })
    .min(ADVANCE_SECONDS.min)
    .max(ADVANCE_SECONDS.max)
    .meta({ description: 'How far the payment’s clock moves forward, in seconds' }),
});

const AdvanceTimeBody = z.object({
  transaction_id: z.string(),
  status: z.string().meta({ description: 'The transaction’s status once the payment has acted' }),
});

const notWaiting = () => new AppError('invalid_request', NOT_WAITING_ON_A_TIMER);

export function testClockRoutes(deps: ApiDeps): Route[] {
  const { pool, temporal, config, providers } = deps;
  const maintenanceQueue = taskQueueOf(config, 'maintenance');
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/testing/advance-time',
      summary:
        'Test Mode only: moves one payment’s own clock forward. Every timer it waits on (an ' +
        'escrow hold’s `expires_at`, a payment code’s expiry, a card payment’s 3-D Secure ' +
        'wait, a money-out’s pending wait, a dispute’s evidence deadline, the stale timer of ' +
        'its open reconciliation exceptions) fires at once when ' +
        'the advance passes its deadline, and keeps what remains of it otherwise. Answers once ' +
        'the payment has acted on it',
      tag: 'Testing',
      auth: 'default',
      testModeOnly: true,
      body: AdvanceTimeRequest,
      responses: {
        200: { description: 'The payment after the advance', schema: AdvanceTimeBody },
        400: errorResponse('The payment is not waiting on a timer'),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('Live Mode credentials used, or another application’s transaction'),
        404: errorResponse('Transaction not found'),
        422: errorResponse('Validation failure: seconds must be an integer from 1 to 31,536,000'),
      },
      handler: async ({ caller, body }) => {
        const id = body.transaction_id.toLowerCase();
        const row = assertOwned(
          caller,
          uuidPattern.test(id) ? await findTransaction(pool, id) : null,
          'Transaction',
        );
        const advance = async (workflowId: string): Promise<boolean> => {
          try {
            await withDeadline(
              temporal.workflow
                .getHandle(workflowId)
                .executeUpdate(clockUpdates.advanceTime, { args: [{ seconds: body.seconds }] }),
              config.api.requestTimeoutMs,
            );
            return true;
          } catch (error) {
            // Refused by the workflow's validator (it waits on no timer), or the workflow ended.
            if (error instanceof WorkflowUpdateFailedError || isNotFound(error)) return false;
            throw error;
          }
        };
        // Only the payment's own workflow (an escrow release's row names its hold's, say).
        const own = row.workflow_id?.endsWith(row.id) ? await advance(row.workflow_id) : false;
        // The payment's open reconciliation exceptions wait on their stale timers.
        const { rows: open } = await listReconExceptions(
          pool,
          { applicationId: row.application_id, mode: row.mode },
          { status: 'open', transactionId: row.id },
          { limit: 100, offset: 0 },
        );
        let exceptions = 0;
        for (const exception of open) {
          // A timer still in its start delay takes no update: woken first, it waits on its clock.
          const woken = await withDeadline(
            wakeReconExceptionTimer(temporal, maintenanceQueue, exception, reconExceptionWake),
            config.api.requestTimeoutMs,
          );
          if (woken && (await advance(workflowIds.reconException(exception.id)))) exceptions += 1;
        }
        if (!own && exceptions === 0) throw notWaiting();
        // The sandbox provider's clock moves with the payment's: its payment code expires as
        // much sooner, so that an expired deposit's code cannot be paid any more.
        if (row.transaction_type === 'mobile_money_deposit' && row.provider_reference) {
          await providers.sandboxMobileMoney.advance(row.provider_reference, body.seconds);
        }
        const after = await findTransaction(pool, row.id);
        return { body: { transaction_id: row.id, status: after?.status ?? row.status } };
      },
    }),
  ];
}
