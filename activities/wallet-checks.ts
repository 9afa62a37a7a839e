import type { WalletState } from '../db/wallets';
import { decline } from './declines';

/** A wallet that may take part: it exists, it is the application's and mode's, it is active. */
export function checkWallet(
  wallet: WalletState | undefined,
  scope: { application_id: string; mode: string },
): void {
  if (!wallet) throw decline('wallet_not_found');
  if (wallet.application_id !== scope.application_id || wallet.mode !== scope.mode) {
    throw decline('wallet_forbidden');
  }
  if (!wallet.is_active) throw decline('wallet_disabled');
}
