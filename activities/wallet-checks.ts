import type { WalletState } from '../db/wallets';
import { decline } from './declines';

/**
 * A wallet that may take part in a money step: it exists, it is the application's and mode's,
 * it is active, and it holds the application's base currency (and the step's, when the step has
 * one already, such as a hold's). A wallet left in another currency takes no money step at all.
 */
export function checkWallet(
  wallet: WalletState | undefined,
  scope: { application_id: string; mode: string; currency?: string },
): void {
  if (!wallet) throw decline('wallet_not_found');
  if (wallet.application_id !== scope.application_id || wallet.mode !== scope.mode) {
    throw decline('wallet_forbidden');
  }
  if (!wallet.is_active) throw decline('wallet_disabled');
  if (
    wallet.currency !== wallet.base_currency ||
    (scope.currency !== undefined && wallet.currency !== scope.currency)
  ) {
    throw decline('currency_mismatch');
  }
}
