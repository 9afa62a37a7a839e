import type { UpdateDefinition } from '@temporalio/common';
import { depositRules } from '../domain/money-rules';
import type { TransactionType } from '../domain/types';
import type { Declined, DepositInput, DepositOutcome } from '../workflows/shared';
import type { ApiDeps } from './deps';
import { assertLiveProvider, unlessDeclined } from './errors';
import { idFromKey } from './pipeline';
import type { RouteContext } from './route';
import { startPaymentWithUpdate } from './workflow-starts';

/** What every deposit request's body holds. */
type DepositBody = { wallet_id: string; amount: bigint; metadata?: Record<string, string> };

/** A provider's deposit, as its request starts it. */
export type DepositStart<I, O> = {
  type: Extract<TransactionType, 'mobile_money_deposit' | 'card_deposit'>;
  /** The provider's Live Mode client, and how `assertLiveProvider` names what is missing. */
  live: { provider: unknown; what: string; credentials?: string };
  workflow: (input: I) => Promise<DepositOutcome>;
  workflowId: (transactionId: string) => string;
  /** The workflow's input: the mobile-money deposit's (what every deposit has), with its own. */
  input: (fields: DepositInput) => NoInfer<I>;
  update: UpdateDefinition<O | Declined>;
  /** See `startPaymentWithUpdate`. */
  answerLocally?: (result: O | Declined) => boolean;
};

/**
 * A deposit request, the same for every provider: its id from the Idempotency-Key, the deposit's
 * rules answered early, Live Mode's provider checked, then its workflow started with `open`,
 * whose answer this returns; a decline is the request's answer.
 */
export async function startDeposit<I, O extends { status: string }>(
  deps: ApiDeps,
  request: Pick<
    RouteContext<DepositBody, unknown, unknown>,
    'caller' | 'body' | 'idempotency' | 'answerEarly'
  >,
  deposit: DepositStart<I, O>,
): Promise<{ transactionId: string; opened: O }> {
  const { caller, body } = request;
  const transactionId = idFromKey(caller, request.idempotency, deposit.type);
  await request.answerEarly(transactionId, depositRules, { wallets: { wallet: body.wallet_id } });
  assertLiveProvider(caller, deposit.live.provider, deposit.live.what, deposit.live.credentials);
  const fields: DepositInput = {
    transactionId,
    applicationId: caller.applicationId,
    mode: caller.mode,
    walletId: body.wallet_id,
    amount: body.amount.toString(),
    ...(body.metadata && { metadata: body.metadata }),
  };
  const opened = unlessDeclined(
    await startPaymentWithUpdate(deps, deposit.workflow, {
      workflowId: deposit.workflowId(transactionId),
      args: [deposit.input(fields)],
      caller,
      type: deposit.type,
      walletIds: [body.wallet_id],
      update: deposit.update,
      ...(deposit.answerLocally && { answerLocally: deposit.answerLocally }),
    }),
  );
  return { transactionId, opened };
}
