import type { Config } from '../config';
import type { SystemAccountMemory } from '../db/ledger';
import type { DatabasePool } from '../db/pool';
import type { WalletCurrencyMemory } from '../db/wallets';
import type { Providers } from '../providers';
import { createBatchActivities } from './batches';
import { createCardDepositActivities } from './card-deposit';
import { cardPayoutSpec } from './card-payout';
import { cardRefundSpec } from './card-refund';
import { cashoutSpec } from './cashout';
import { declinePermanentDatabaseErrors } from './declines';
import { createDisputeActivities } from './disputes';
import { createDepositActivities } from './deposit';
import { createEscrowActivities } from './escrow';
import { createMaintenanceActivities } from './maintenance';
import { createMoneyOutActivities } from './money-out';
import { createOnboardingActivities } from './onboarding';
import { createProviderReconciliationActivities } from './provider-reconciliation';
import { createReconciliationActivities } from './reconciliation';
import { createReconAdjustmentActivities } from './recon-adjustments';
import { createTransferActivities } from './transfer';
import { createWebhookActivities } from './webhooks';

export type ActivityDeps = {
  pool: DatabasePool;
  providers: Providers;
  config: Config;
  /** Aborted when this process's workers begin to shut down: long activities hand over early. */
  stopping?: AbortSignal;
};

/**
 * The activities of each task queue (src/temporal/task-queues.ts), built from their dependencies
 * (no module-level state): the money steps share one memory of the system accounts (escrow, fees,
 * clearing, fx) they have seen committed, and one of the wallets' currencies.
 */
export function createQueueActivities(dependencies: ActivityDeps) {
  const systemAccounts: SystemAccountMemory = new Map();
  const walletCurrencies: WalletCurrencyMemory = new Map();
  const deps = { ...dependencies, systemAccounts, walletCurrencies };
  const webhooks = createWebhookActivities(deps);
  const maintenance = {
    ...createMaintenanceActivities(deps),
    ...createReconciliationActivities(deps),
    ...createProviderReconciliationActivities(deps),
    ...declinePermanentDatabaseErrors(createReconAdjustmentActivities(deps)),
    ensureWebhookRelayRuns: webhooks.ensureWebhookRelayRuns,
  };
  return {
    payments: {
      ...declinePermanentDatabaseErrors({
        ...createTransferActivities(deps),
        ...createDepositActivities(deps),
        ...createCardDepositActivities(deps),
        ...createEscrowActivities(deps),
        ...createMoneyOutActivities(deps, {
          cashout: cashoutSpec,
          payout: cardPayoutSpec,
          refund: cardRefundSpec,
        }),
        ...createOnboardingActivities(deps),
        ...createDisputeActivities(deps),
      }),
      ...createBatchActivities(deps),
      // Deliveries and maintenance runs started on this queue before they had queues of their
      // own still finish here, until the drain docs/operations.md describes.
      ...webhooks,
      ...maintenance,
    },
    webhooks,
    maintenance,
  };
}

/** Every activity, whatever its queue (the workflows' proxies, tests). */
export function createActivities(dependencies: ActivityDeps) {
  const { payments, webhooks, maintenance } = createQueueActivities(dependencies);
  return { ...payments, ...webhooks, ...maintenance };
}
