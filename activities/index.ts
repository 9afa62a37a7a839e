import type { DatabasePool } from 'slonik';
import type { Config } from '../config';
import type { Providers } from '../providers';
import { createDepositActivities } from './deposit';
import { createEscrowActivities } from './escrow';
import { createMaintenanceActivities } from './maintenance';
import { createTransferActivities } from './transfer';

export type ActivityDeps = { pool: DatabasePool; providers: Providers; config: Config };

/** Every activity, built from its dependencies (no module-level state). */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createTransferActivities(deps),
    ...createDepositActivities(deps),
    ...createEscrowActivities(deps),
    ...createMaintenanceActivities(deps),
  };
}
