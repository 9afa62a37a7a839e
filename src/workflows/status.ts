import { patched, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { SearchAttributes } from './shared';

export type PaymentStatusValue =
  'pending' | 'held' | 'completed' | 'failed' | 'expired' | 'reversed';

/**
 * Moves the `PaymentStatus` search attribute, which operators filter on in the Temporal UI.
 * Only a workflow started with the payment search attributes (the API always sets them) upserts
 * it: a server without them registered would otherwise refuse the workflow task.
 */
export function setPaymentStatus(status: PaymentStatusValue): void {
  if (workflowInfo().typedSearchAttributes.get(SearchAttributes.PaymentStatus) === undefined)
    return;
  upsertSearchAttributes([{ key: SearchAttributes.PaymentStatus, value: status }]);
}

/**
 * Adds a wallet to the payment's `WalletId` search attribute (an escrow released to a wallet
 * the hold did not name), so that an operator's `WalletId = "..."` finds the payment. Holds
 * started before this existed replay without it: `patched` is asked only when a wallet is new.
 */
export function addPaymentWallet(walletId: string): void {
  const wallets = workflowInfo().typedSearchAttributes.get(SearchAttributes.WalletId);
  if (wallets === undefined || wallets.includes(walletId)) return;
  if (!patched('wallet-id-on-release')) return;
  upsertSearchAttributes([{ key: SearchAttributes.WalletId, value: [...wallets, walletId] }]);
}
